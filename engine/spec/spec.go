// Package spec decodes definition files (resources, roles, plans) into typed, YAML-shaped values. Every
// file is validated against its meta-schema before it is decoded; problems come back as a
// field.ErrorList whose paths start with the file name. Cross-resource checks live in package model.
package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"

	"github.com/workspace-records/records/definitions"
	"github.com/workspace-records/records/engine/field"
)

// Set is everything one definitions directory declares.
type Set struct {
	Resources []*Resource // sorted by name
	Roles     []*Role     // in file order
	Plans     []*Plan     // in file order
}

// Resource is one resources/<name>.yaml file.
type Resource struct {
	File         string
	Version      int
	Name         string
	Label        string
	LabelPlural  string
	Group        string
	Description  string
	Operations   []string
	Search       []string
	ModelScoped  bool
	Feature      string   // plan feature the resource needs, "" for none
	Fields       []*Field // in file order
	Associations []*Association
	Hooks        []string
	Rules        []*Rule // in file order
}

// Rule is one entry of a resource's rules: a CEL expression over the record (self, and oldSelf on
// update) that must yield true for a write to be stored, as Kubernetes' x-kubernetes-validations.
type Rule struct {
	Rule    string
	Message string
	Field   string // the declared field a failure is reported at; "" for the resource
	Reason  string // the failure's code; "" for invalid
}

// Field is one entry of a resource's fields (or of an association's attributes).
type Field struct {
	Key         string
	Type        string
	Label       string
	Description string
	Required    bool
	ReadOnly    bool
	Formula     string // a CEL expression; "" for a stored field
	Default     any    // JSON-shaped; nil when absent
	HasDefault  bool
	MaxLength   *int
	MinLength   *int
	Minimum     *float64
	Maximum     *float64
	Options     []string
	Target      string
	Sortable    bool
	Filterable  bool
	Unique      bool // one active record per workspace per value
}

// Association is one entry of a resource's associations.
type Association struct {
	Name        string
	Target      string
	Inverse     string
	Label       string
	Description string
	Attributes  []*Field
}

// Role is one entry of roles.yaml.
type Role struct {
	Name        string
	Label       string
	Description string
	Permissions []string
	Resources   map[string]string
	RecordRules map[string]string
	FieldRules  map[string]map[string]string
}

// Plan is one entry of plans.yaml. A nil limit is uncapped.
type Plan struct {
	Name        string
	Label       string
	Description string
	APIAccess   bool
	Features    []string
	Limits      Limits
}

// HasFeature reports whether the plan includes feature.
func (p *Plan) HasFeature(feature string) bool {
	for _, f := range p.Features {
		if f == feature {
			return true
		}
	}
	return false
}

// Limits are a plan's request limits.
type Limits struct {
	KeyPerMinute       *int64 `json:"key_per_minute"`
	KeyPerHour         *int64 `json:"key_per_hour"`
	WorkspacePerMinute *int64 `json:"workspace_per_minute"`
	MonthlyQuota       *int64 `json:"monthly_quota"`
}

type metaSchemas struct {
	resource, roles, plans *jsonschema.Schema
}

// compileMeta compiles the meta-schemas (embedded, so the same every time) once per process.
var compileMeta = sync.OnceValues(compileMetaSchemas)

func compileMetaSchemas() (*metaSchemas, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("meta-schema %s: remote references are not allowed", url)
	}
	var m metaSchemas
	for _, s := range []struct {
		file string
		dst  **jsonschema.Schema
	}{{"resource", &m.resource}, {"roles", &m.roles}, {"plans", &m.plans}} {
		name := "meta/" + s.file + ".schema.json"
		data, err := definitions.FS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		url := "https://records.local/" + name
		if err := c.AddResource(url, bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("add %s: %w", name, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", name, err)
		}
		*s.dst = sch
	}
	return &m, nil
}

// Load reads resources/*.yaml, roles.yaml and plans.yaml from fsys. It returns every problem it finds;
// the Set is usable only when the list is empty.
func Load(fsys fs.FS) (*Set, field.ErrorList) {
	meta, err := compileMeta()
	if err != nil {
		return nil, field.ErrorList{{Code: field.CodeInvalid, Message: err.Error()}}
	}
	var errs field.ErrorList
	set := &Set{}

	files, err := fs.Glob(fsys, "resources/*.yaml")
	if err != nil {
		errs = append(errs, &field.Error{Code: field.CodeInvalid, Field: "resources", Message: err.Error()})
	}
	if len(files) == 0 {
		errs = append(errs, &field.Error{Code: field.CodeRequired, Field: "resources", Message: "no resource definitions (resources/*.yaml)"})
	}
	sort.Strings(files)
	docs := readFiles(fsys, files, meta.resource)
	for i, file := range files {
		node, errl := docs[i].node, docs[i].errs
		errs = append(errs, errl...)
		if node == nil {
			continue
		}
		r := decodeResource(node)
		r.File = file
		if want := strings.TrimSuffix(path.Base(file), ".yaml"); r.Name != want {
			errs = append(errs, &field.Error{Code: field.CodeInvalid, Field: file + ": name",
				Message: fmt.Sprintf("name %q must equal the file name %q", r.Name, want)})
		}
		set.Resources = append(set.Resources, r)
	}

	if node, errl := readFile(fsys, "roles.yaml", meta.roles); node != nil {
		set.Roles = decodeRoles(node)
	} else {
		errs = append(errs, errl...)
	}
	if node, errl := readFile(fsys, "plans.yaml", meta.plans); node != nil {
		set.Plans = decodePlans(node)
	} else {
		errs = append(errs, errl...)
	}
	return set, errs
}

// ParseRoles reads a roles file (the format of roles.yaml) named file, validating it against the roles
// meta-schema. Workspace roles managed with recordsctl use it.
func ParseRoles(file string, data []byte) ([]*Role, field.ErrorList) {
	meta, err := compileMeta()
	if err != nil {
		return nil, field.ErrorList{{Code: field.CodeInvalid, Message: err.Error()}}
	}
	node, errs := parseDoc(file, data, meta.roles)
	if node == nil {
		return nil, errs
	}
	return decodeRoles(node), nil
}

// doc is one file read by readFiles.
type doc struct {
	node *yaml.Node
	errs field.ErrorList
}

// readFiles reads files with readFile, as many at once as there are processors (parsing and checking
// the definitions is most of a command's start), and returns them in the order of files.
func readFiles(fsys fs.FS, files []string, meta *jsonschema.Schema) []doc {
	docs := make([]doc, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for i := range next {
				docs[i].node, docs[i].errs = readFile(fsys, files[i], meta)
			}
		})
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return docs
}

// readFile parses file and validates it against its meta-schema. It returns the document's root mapping
// node only when the file is valid.
func readFile(fsys fs.FS, file string, meta *jsonschema.Schema) (*yaml.Node, field.ErrorList) {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, field.ErrorList{{Code: field.CodeRequired, Field: file, Message: err.Error()}}
	}
	return parseDoc(file, data, meta)
}

func parseDoc(file string, data []byte, meta *jsonschema.Schema) (*yaml.Node, field.ErrorList) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, field.ErrorList{{Code: field.CodeInvalid, Field: file, Message: err.Error()}}
	}
	if len(doc.Content) == 0 {
		return nil, field.ErrorList{{Code: field.CodeInvalid, Field: file, Message: "empty document"}}
	}
	root := doc.Content[0]
	generic, err := toJSON(root)
	if err != nil {
		return nil, field.ErrorList{{Code: field.CodeInvalid, Field: file, Message: err.Error()}}
	}
	if err := meta.Validate(generic); err != nil {
		var ve *jsonschema.ValidationError
		if !asValidation(err, &ve) {
			return nil, field.ErrorList{{Code: field.CodeInvalid, Field: file, Message: err.Error()}}
		}
		return nil, schemaErrors(file, ve)
	}
	return root, nil
}

func asValidation(err error, target **jsonschema.ValidationError) bool {
	ve, ok := err.(*jsonschema.ValidationError)
	if ok {
		*target = ve
	}
	return ok
}

// schemaErrors flattens a meta-schema failure into its leaves, one error per instance location.
func schemaErrors(file string, ve *jsonschema.ValidationError) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			p := pointerToPath(e.InstanceLocation)
			key := p + "\x00" + e.Message
			if seen[key] {
				return
			}
			seen[key] = true
			loc := file
			if p != "" {
				loc = file + ": " + p
			}
			errs = append(errs, &field.Error{Code: field.CodeInvalid, Field: loc, Message: e.Message})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return errs
}

func pointerToPath(ptr string) string {
	ptr = strings.TrimPrefix(ptr, "/")
	if ptr == "" {
		return ""
	}
	parts := strings.Split(ptr, "/")
	for i, p := range parts {
		// The validator escapes each token for a URL too ("*" is %2A): undo that, then the pointer's own.
		if u, err := url.PathUnescape(p); err == nil {
			p = u
		}
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
	}
	return strings.Join(parts, ".")
}

// toJSON converts a YAML node into the value encoding/json would produce, numbers as json.Number.
func toJSON(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return toJSON(n.Content[0])
	case yaml.AliasNode:
		return toJSON(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping keys must be strings", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			v, err := toJSON(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := toJSON(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		switch x := v.(type) {
		case int:
			return json.Number(fmt.Sprint(x)), nil
		case int64:
			return json.Number(fmt.Sprint(x)), nil
		case uint64:
			return json.Number(fmt.Sprint(x)), nil
		case float64:
			return json.Number(fmt.Sprint(x)), nil
		}
		return v, nil
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// mapping returns the key/value pairs of a mapping node in order.
func mapping(n *yaml.Node) [][2]*yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	out := make([][2]*yaml.Node, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, [2]*yaml.Node{n.Content[i], n.Content[i+1]})
	}
	return out
}

func member(n *yaml.Node, key string) *yaml.Node {
	for _, kv := range mapping(n) {
		if kv[0].Value == key {
			return kv[1]
		}
	}
	return nil
}

// decodeInto decodes member key of n into dst; the meta-schema has already checked its shape.
func decodeInto(n *yaml.Node, key string, dst any) {
	if m := member(n, key); m != nil {
		_ = m.Decode(dst)
	}
}

func decodeResource(n *yaml.Node) *Resource {
	r := &Resource{}
	decodeInto(n, "version", &r.Version)
	decodeInto(n, "name", &r.Name)
	decodeInto(n, "label", &r.Label)
	decodeInto(n, "label_plural", &r.LabelPlural)
	decodeInto(n, "group", &r.Group)
	decodeInto(n, "description", &r.Description)
	decodeInto(n, "operations", &r.Operations)
	decodeInto(n, "search", &r.Search)
	decodeInto(n, "model_scoped", &r.ModelScoped)
	decodeInto(n, "feature", &r.Feature)
	decodeInto(n, "hooks", &r.Hooks)
	if rules := member(n, "rules"); rules != nil {
		for _, item := range rules.Content {
			ru := &Rule{}
			decodeInto(item, "rule", &ru.Rule)
			decodeInto(item, "message", &ru.Message)
			decodeInto(item, "field", &ru.Field)
			decodeInto(item, "reason", &ru.Reason)
			r.Rules = append(r.Rules, ru)
		}
	}
	r.Fields = decodeFields(member(n, "fields"))
	for _, kv := range mapping(member(n, "associations")) {
		a := &Association{Name: kv[0].Value}
		decodeInto(kv[1], "target", &a.Target)
		decodeInto(kv[1], "inverse", &a.Inverse)
		decodeInto(kv[1], "label", &a.Label)
		decodeInto(kv[1], "description", &a.Description)
		a.Attributes = decodeFields(member(kv[1], "attributes"))
		r.Associations = append(r.Associations, a)
	}
	return r
}

func decodeFields(n *yaml.Node) []*Field {
	var out []*Field
	for _, kv := range mapping(n) {
		f := &Field{Key: kv[0].Value}
		v := kv[1]
		decodeInto(v, "type", &f.Type)
		decodeInto(v, "label", &f.Label)
		decodeInto(v, "description", &f.Description)
		decodeInto(v, "required", &f.Required)
		decodeInto(v, "read_only", &f.ReadOnly)
		decodeInto(v, "formula", &f.Formula)
		decodeInto(v, "options", &f.Options)
		decodeInto(v, "target", &f.Target)
		decodeInto(v, "sortable", &f.Sortable)
		decodeInto(v, "filterable", &f.Filterable)
		decodeInto(v, "unique", &f.Unique)
		decodeInto(v, "max_length", &f.MaxLength)
		decodeInto(v, "min_length", &f.MinLength)
		decodeInto(v, "minimum", &f.Minimum)
		decodeInto(v, "maximum", &f.Maximum)
		if d := member(v, "default"); d != nil {
			f.HasDefault = true
			f.Default, _ = toJSON(d)
		}
		out = append(out, f)
	}
	return out
}

func decodeRoles(n *yaml.Node) []*Role {
	var out []*Role
	for _, kv := range mapping(member(n, "roles")) {
		r := &Role{Name: kv[0].Value}
		decodeInto(kv[1], "label", &r.Label)
		decodeInto(kv[1], "description", &r.Description)
		decodeInto(kv[1], "permissions", &r.Permissions)
		decodeInto(kv[1], "resources", &r.Resources)
		decodeInto(kv[1], "record_rules", &r.RecordRules)
		decodeInto(kv[1], "field_rules", &r.FieldRules)
		out = append(out, r)
	}
	return out
}

func decodePlans(n *yaml.Node) []*Plan {
	var out []*Plan
	for _, kv := range mapping(member(n, "plans")) {
		p := &Plan{Name: kv[0].Value}
		decodeInto(kv[1], "label", &p.Label)
		decodeInto(kv[1], "description", &p.Description)
		decodeInto(kv[1], "api_access", &p.APIAccess)
		decodeInto(kv[1], "features", &p.Features)
		if l := member(kv[1], "limits"); l != nil {
			decodeInto(l, "key_per_minute", &p.Limits.KeyPerMinute)
			decodeInto(l, "key_per_hour", &p.Limits.KeyPerHour)
			decodeInto(l, "workspace_per_minute", &p.Limits.WorkspacePerMinute)
			decodeInto(l, "monthly_quota", &p.Limits.MonthlyQuota)
		}
		out = append(out, p)
	}
	return out
}
