// Package spec decodes definition files (resources, roles, plans) into typed, YAML-shaped values. Every
// file is validated against its meta-schema before it is decoded; problems come back as a
// field.ErrorList, each naming its file (field.Error.File), its path inside it and its line and column.
// Cross-resource checks live in package model, which places its problems with the Set's Files.
package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"

	"github.com/workspace-records/records/definitions"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/internal/memo"
)

// Set is everything one definitions directory declares.
type Set struct {
	Resources []*Resource // sorted by name
	Roles     []*Role     // in file order
	Plans     []*Plan     // in file order

	// Files locates the values of every file that parsed, by file name (Set.Locate).
	Files map[string]*Index
	// Partial is true when a file could not be read or parsed: its definitions are missing from the
	// set, so cross-references to them would report only that. A file the meta-schema refused is
	// decoded all the same (as far as it goes) and is not missing.
	Partial bool
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
	set := &Set{Files: map[string]*Index{}}

	files, err := fs.Glob(fsys, "resources/*.yaml")
	if err != nil {
		errs = append(errs, &field.Error{Code: field.CodeInvalid, File: "resources", Message: err.Error()})
	}
	if len(files) == 0 {
		set.Partial = true
		errs = append(errs, &field.Error{Code: field.CodeRequired, File: "resources", Message: "no resource definitions (resources/*.yaml)"})
	}
	sort.Strings(files)
	docs := readFiles(fsys, files, meta.resource)
	for i, file := range files {
		d := docs[i]
		errs = append(errs, d.errs...)
		if d.index == nil {
			set.Partial = true
			continue
		}
		set.Files[file] = d.index
		r := decodeResource(d.node)
		r.File = file
		if want := strings.TrimSuffix(path.Base(file), ".yaml"); r.Name != want {
			e := &field.Error{Code: field.CodeInvalid, File: file, Field: "name",
				Message: fmt.Sprintf("name %q must equal the file name %q", r.Name, want)}
			d.index.Place(e)
			errs = append(errs, e)
			d.index.refuse("name")
			r.Name = want // the file name stands in, so that other files' references to it still resolve
		}
		set.Resources = append(set.Resources, r)
	}

	for _, f := range []struct {
		file   string
		meta   *jsonschema.Schema
		decode func(*yaml.Node)
	}{
		{"roles.yaml", meta.roles, func(n *yaml.Node) { set.Roles = decodeRoles(n) }},
		{"plans.yaml", meta.plans, func(n *yaml.Node) { set.Plans = decodePlans(n) }},
	} {
		d := readFile(fsys, f.file, f.meta)
		errs = append(errs, d.errs...)
		if d.index == nil {
			set.Partial = true
			continue
		}
		set.Files[f.file] = d.index
		f.decode(d.node)
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
	d := parseDoc(file, data, meta.roles)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return decodeRoles(d.node), nil
}

// doc is one file read by readFile: its root mapping node and Index when it parsed (nil otherwise),
// and its problems. A file the meta-schema refused has both a node and problems.
type doc struct {
	node  *yaml.Node
	index *Index
	errs  field.ErrorList
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
				docs[i] = readFile(fsys, files[i], meta)
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

// readFile parses file and validates it against its meta-schema.
func readFile(fsys fs.FS, file string, meta *jsonschema.Schema) doc {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return doc{errs: field.ErrorList{{Code: field.CodeRequired, File: file, Message: err.Error()}}}
	}
	return parseDoc(file, data, meta)
}

// parseDoc parses data (the text of file) and validates it against meta. A document that is not YAML,
// is empty or repeats a key has no node; one the meta-schema refuses has its node and index (the
// refused entries noted in it) and the meta-schema's problems.
func parseDoc(file string, data []byte, meta *jsonschema.Schema) doc {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return doc{errs: field.ErrorList{syntaxError(file, data, err)}}
	}
	if len(root.Content) == 0 {
		return doc{errs: field.ErrorList{{Code: field.CodeInvalid, File: file, Line: 1, Column: 1, Message: "empty document"}}}
	}
	node := root.Content[0]
	var dups []*nodeError
	generic, err := toJSON(node, &dups)
	placed := func(ne *nodeError) *field.Error {
		return &field.Error{Code: field.CodeInvalid, File: file, Line: ne.node.Line, Column: ne.node.Column, Message: ne.msg}
	}
	if err != nil {
		e := &field.Error{Code: field.CodeInvalid, File: file, Message: err.Error()}
		if ne, ok := err.(*nodeError); ok {
			e = placed(ne)
		}
		return doc{errs: field.ErrorList{e}}
	}
	d := doc{node: node, index: newIndex(file, data, node)}
	for _, ne := range dups {
		d.errs = append(d.errs, placed(ne))
	}
	accepted := validatedKey{meta, sha256.Sum256(data)}
	if _, ok := validated.Get(accepted); ok {
		return d
	}
	if err := meta.Validate(generic); err != nil {
		var ve *jsonschema.ValidationError
		if !asValidation(err, &ve) {
			d.errs = append(d.errs, &field.Error{Code: field.CodeInvalid, File: file, Line: node.Line, Column: node.Column, Message: err.Error()})
			return d
		}
		d.errs = append(d.errs, schemaErrors(d.index, node, ve)...)
		return d
	}
	validated.Put(accepted, struct{}{})
	return d
}

// validated remembers the texts the meta-schemas accepted, by meta-schema and SHA-256 of the text, so
// that a process reading the same definitions again (a server building each generation, a test process
// starting hundreds of servers) validates each text once: validation is a pure function of the two,
// and it is most of the time a read of the definitions takes. A refused text is not remembered: its
// problems are found again.
var validated = memo.Map[validatedKey, struct{}]{Limit: 4096}

type validatedKey struct {
	meta *jsonschema.Schema
	sum  [sha256.Size]byte
}

// yamlLine finds the line number in yaml.v3's error text ("yaml: line 3: did not find expected key").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxError is the problem of a file that is not YAML. yaml.v3 names a line only, and for a parser
// error the line before the construct it was reading (its marks count from 0 there); so the line is
// found again as the first line at which the text read so far fails with the same message, searched
// from the line before the one yaml.v3 names. The column is that line's first character that is not
// a space: yaml.v3 gives none.
func syntaxError(file string, data []byte, err error) *field.Error {
	e := &field.Error{Code: field.CodeInvalid, File: file, Message: err.Error()}
	hint := 0
	if m := yamlLine.FindStringSubmatch(e.Message); m != nil {
		hint, _ = strconv.Atoi(m[1])
		e.Message = "yaml: " + strings.TrimPrefix(e.Message, m[0])
	}
	lines := strings.SplitAfter(string(data), "\n")
	e.Line = hint
	for k := max(hint-1, 1); k <= len(lines); k++ {
		var n yaml.Node
		perr := yaml.Unmarshal([]byte(strings.Join(lines[:k], "")), &n)
		if perr != nil && yamlLine.ReplaceAllString(perr.Error(), "yaml: ") == e.Message {
			e.Line = k
			break
		}
	}
	if e.Line == 0 || e.Line > len(lines) {
		e.Line = 0
		return e
	}
	text := strings.TrimRight(lines[e.Line-1], "\r\n")
	e.Column = 1 + utf8.RuneCountInString(text) - utf8.RuneCountInString(strings.TrimLeft(text, " \t"))
	return e
}

func asValidation(err error, target **jsonschema.ValidationError) bool {
	ve, ok := err.(*jsonschema.ValidationError)
	if ok {
		*target = ve
	}
	return ok
}

// schemaErrors flattens a meta-schema failure into its leaves, one error per instance location, each
// placed at its value in the document (root) and noted as refused in its index. An unknown key is
// placed at the key itself, one error per key.
func schemaErrors(x *Index, root *yaml.Node, ve *jsonschema.ValidationError) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	add := func(p, msg string, at *yaml.Node) {
		key := p + "\x00" + msg
		if seen[key] {
			return
		}
		seen[key] = true
		errs = append(errs, &field.Error{Code: field.CodeInvalid, File: x.File, Field: p, Message: msg, Line: at.Line, Column: at.Column})
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			p := pointerToPath(e.InstanceLocation)
			n, keyNode, indexPath := resolvePointer(root, e.InstanceLocation)
			if strings.HasSuffix(e.KeywordLocation, "/additionalProperties") && n.Kind == yaml.MappingNode {
				if names := quotedNames(e.Message); len(names) > 0 {
					for _, name := range names {
						at := n
						for _, kv := range mapping(n) {
							if kv[0].Value == name {
								at = kv[0]
							}
						}
						add(p, "additionalProperties "+quoteName(name)+" not allowed", at)
					}
					return
				}
			}
			at := n
			if n.Kind != yaml.ScalarNode && keyNode != nil {
				at = keyNode
			}
			add(p, e.Message, at)
			x.refuse(indexPath)
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
	return strings.Join(pointerTokens(ptr), ".")
}

// pointerTokens splits a JSON pointer of the validator's into its unescaped tokens.
func pointerTokens(ptr string) []string {
	ptr = strings.TrimPrefix(ptr, "/")
	if ptr == "" {
		return nil
	}
	parts := strings.Split(ptr, "/")
	for i, p := range parts {
		// The validator escapes each token for a URL too ("*" is %2A): undo that, then the pointer's own.
		if u, err := url.PathUnescape(p); err == nil {
			p = u
		}
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
	}
	return parts
}

// resolvePointer follows ptr from root as far as the document goes: the node reached, the key node
// naming it (nil for the root and sequence items) and its path in the form field.Path renders
// (`search[1]`, where the pointer says `search/1`).
func resolvePointer(root *yaml.Node, ptr string) (n, key *yaml.Node, path string) {
	n = root
	for _, tok := range pointerTokens(ptr) {
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for _, kv := range mapping(n) {
				if kv[0].Value == tok {
					key, next = kv[0], kv[1]
				}
			}
			if next == nil {
				return n, key, path
			}
			n, path = next, childPath(path, tok)
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				return n, key, path
			}
			n, key, path = n.Content[i], nil, path+"["+tok+"]"
		default:
			return n, key, path
		}
	}
	return n, key, path
}

// quotedNames reads the property names out of the validator's "additionalProperties 'a', 'b' not
// allowed" (each quoted as its quote function does: in single quotes, with \' and Go escapes).
func quotedNames(msg string) []string {
	var names []string
	for _, m := range quotedName.FindAllStringSubmatch(msg, -1) {
		s, err := strconv.Unquote(`"` + strings.ReplaceAll(strings.ReplaceAll(m[1], `\'`, `'`), `"`, `\"`) + `"`)
		if err != nil {
			return nil
		}
		names = append(names, s)
	}
	return names
}

var quotedName = regexp.MustCompile(`'((?:[^'\\]|\\.)*)'`)

// quoteName quotes a property name the way the validator's messages do.
func quoteName(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
	return "'" + strings.ReplaceAll(q, `'`, `\'`) + "'"
}

// toJSON converts a YAML node into the value encoding/json would produce, numbers as json.Number. A
// repeated key of a mapping is an error, or, with dups, is noted there and left out (the first stands:
// as for the decoders, see mapping), so that the rest of the document is still checked.
func toJSON(n *yaml.Node, dups ...*[]*nodeError) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return toJSON(n.Content[0], dups...)
	case yaml.AliasNode:
		return toJSON(n.Alias, dups...)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, &nodeError{k, "mapping keys must be strings"}
			}
			if _, dup := m[k.Value]; dup {
				e := &nodeError{k, fmt.Sprintf("duplicate key %q", k.Value)}
				if len(dups) == 0 {
					return nil, e
				}
				*dups[0] = append(*dups[0], e)
				continue
			}
			v, err := toJSON(n.Content[i+1], dups...)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := toJSON(c, dups...)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, &nodeError{n, err.Error()}
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
	return nil, &nodeError{n, "unsupported YAML node"}
}

// nodeError is a problem of one node of a document (a repeated key), which places it.
type nodeError struct {
	node *yaml.Node
	msg  string
}

func (e *nodeError) Error() string { return fmt.Sprintf("line %d: %s", e.node.Line, e.msg) }

// mapping returns the key/value pairs of a mapping node in order; of a repeated key (an error toJSON
// reports), the first.
func mapping(n *yaml.Node) [][2]*yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	out := make([][2]*yaml.Node, 0, len(n.Content)/2)
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode {
			if seen[k.Value] {
				continue
			}
			seen[k.Value] = true
		}
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
