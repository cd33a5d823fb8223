// Package schema derives the create and update JSON Schemas of every resource from the model, compiles
// them once with jsonschema/v5, and validates request bodies against them, reporting every bad field.
package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/internal/memo"
)

// Mode says which write a body is for.
type Mode uint8

// The write modes.
const (
	Create Mode = iota
	Update
	// Import is the admin bulk path: like Create, and read-only declared fields may be set too.
	Import
)

func (m Mode) String() string { return [...]string{"create", "update", "import"}[m] }

// settable reports whether a body in mode m may set f.
func (m Mode) settable(f *model.Field) bool {
	if m == Import {
		return !f.Managed && f.Formula == nil
	}
	return f.Writable()
}

// Set holds the schemas of every resource. Each resource's compile on first use (or CompileAll):
// jsonschema's compile, which checks each document against the draft's meta-schema, is most of the CPU
// of a server's start, and a start need not wait for it.
type Set struct {
	byResource map[string]*Resource
}

// Resource holds one resource's schemas: its documents, and their compiled forms once compiled.
type Resource struct {
	res   *model.Resource
	docs  [3]map[string]any
	urls  [3]string // by mode; "" for a mode it has no schema of
	order map[string]int

	once    sync.Once
	schemas [3]*jsonschema.Schema
	err     error
}

// Doc returns the JSON Schema document for mode, for catalogs and the OpenAPI document. Callers must
// not modify it.
func (r *Resource) Doc(m Mode) map[string]any { return r.docs[m] }

// Compile builds and compiles the schemas of every writable resource in cat.
func Compile(cat *model.Catalog) (*Set, error) {
	s := Prepare(cat)
	if err := s.CompileAll(); err != nil {
		return nil, err
	}
	return s, nil
}

// Prepare builds the schema documents of every writable resource in cat, and of their associations'
// attributes; each resource's compile at its first validation (Resource.Validate) or in CompileAll.
func Prepare(cat *model.Catalog) *Set {
	set := &Set{byResource: map[string]*Resource{}}
	for _, res := range cat.Resources {
		r := newResource(res, res.Fields)
		for _, m := range []Mode{Create, Update, Import} {
			r.docs[m] = Document(res.Name, res.Declared(), m)
			r.urls[m] = "https://records.local/schemas/" + res.Name + "." + m.String() + ".json"
		}
		set.byResource[res.Name] = r
		for _, a := range res.Associations {
			r := newResource(a.Attrs, a.Attrs.Fields)
			r.docs[Create] = attributesDocument(a.Attrs.Name, a.Attrs.Fields, Create)
			r.urls[Create] = "https://records.local/schemas/" + a.Attrs.Name + ".link.json"
			set.byResource[a.Attrs.Name] = r
		}
	}
	return set
}

func newResource(res *model.Resource, fields []*model.Field) *Resource {
	r := &Resource{res: res, order: make(map[string]int, len(fields))}
	for i, f := range fields {
		r.order[f.Key] = i
	}
	return r
}

// attributesDocument is Document for values without custom fields (association attributes, field
// sets).
func attributesDocument(title string, fields []*model.Field, m Mode) map[string]any {
	doc := Document(title, fields, m)
	delete(doc["properties"].(map[string]any), "custom_fields")
	delete(doc, "patternProperties")
	return doc
}

// CompileAll compiles every schema of s not compiled yet, on as many processors as there are, and
// returns every problem found.
func (s *Set) CompileAll() error { return s.compileAll(runtime.GOMAXPROCS(0)) }

// CompileInBackground is CompileAll on one goroutine: for a server that already serves, so that the
// compile leaves the other processors to the requests (a write compiles its own resource first, if it
// comes before).
func (s *Set) CompileInBackground() error { return s.compileAll(1) }

func (s *Set) compileAll(workers int) error {
	names := make([]string, 0, len(s.byResource))
	for name := range s.byResource {
		names = append(names, name)
	}
	sort.Strings(names)
	groups := max(1, min(workers, len(names)))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for g := range groups {
		wg.Go(func() {
			for i := g; i < len(names); i += groups {
				errs[i] = s.byResource[names[i]].compile()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// compile compiles r's schemas, once: later calls report the first one's outcome. Schemas compiled
// before from the same documents (another Set of the same definitions: a live switch's next version,
// another server of the process) are taken from compiledCache.
func (r *Resource) compile() error {
	r.once.Do(func() {
		var data [3][]byte
		h := sha256.New()
		for m, url := range r.urls {
			if url == "" {
				continue
			}
			var err error
			if data[m], err = json.Marshal(r.docs[m]); err != nil {
				r.err = fmt.Errorf("marshal %s %s schema: %w", r.res.Name, Mode(m), err)
				return
			}
			fmt.Fprintf(h, "%d\x00%s\x00%d\x00", m, url, len(data[m]))
			h.Write(data[m])
		}
		key := [sha256.Size]byte(h.Sum(nil))
		if schemas, ok := compiledCache.Get(key); ok {
			r.schemas = schemas
			return
		}
		c := newCompiler()
		for m, url := range r.urls {
			if url == "" {
				continue
			}
			if err := c.AddResource(url, bytes.NewReader(data[m])); err != nil {
				r.err = fmt.Errorf("add %s %s schema: %w", r.res.Name, Mode(m), err)
				return
			}
			var err error
			if r.schemas[m], err = c.Compile(url); err != nil {
				r.err = fmt.Errorf("compile %s %s schema: %w", r.res.Name, Mode(m), err)
				return
			}
		}
		compiledCache.Put(key, r.schemas)
	})
	return r.err
}

// compiledCache holds compiled schemas by a digest of the documents they were compiled from (modes,
// URLs and JSON text): a compiled schema depends on nothing else (newCompiler's settings are fixed), and
// is never changed by validation, so Sets share them. A process serves a few definitions versions and
// the custom-field sets of its workspaces.
var compiledCache = memo.Map[[sha256.Size]byte, [3]*jsonschema.Schema]{Limit: 2048}

func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("schema %s: remote references are not allowed", url)
	}
	return c
}

// CompileFieldSet compiles the create and update schemas of a field set (see model.NewFieldSet) on its
// own, for values defined at run time such as a workspace's custom fields.
func CompileFieldSet(fs *model.Resource) (*Resource, error) {
	r := newResource(fs, fs.Fields)
	for _, m := range []Mode{Create, Update} {
		r.docs[m] = attributesDocument(fs.Name, fs.Fields, m)
		r.urls[m] = "https://records.local/fieldsets/" + fs.Name + "." + m.String() + ".json"
	}
	if err := r.compile(); err != nil {
		return nil, err
	}
	return r, nil
}

// Resource returns the schemas of the resource named name.
func (s *Set) Resource(name string) *Resource { return s.byResource[name] }

// Document returns the JSON Schema of a write body made of fields (writable ones only). Defaults are
// annotated on create and import bodies only: the server applies them when a create omits the field.
func Document(title string, fields []*model.Field, m Mode) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range fields {
		if !m.settable(f) {
			continue
		}
		p := Property(f)
		if m == Update {
			// An update sets only what it names; a default there would tell clients (and client
			// generators) that an omitted member is reset.
			delete(p, "default")
		}
		props[f.Key] = p
		if f.Required && m != Update {
			required = append(required, f.Key)
		}
	}
	props["custom_fields"] = map[string]any{
		"type":                 "object",
		"description":          "Custom field values keyed by field key. Not together with cf__<key> members.",
		"additionalProperties": Value(),
	}
	cf := Value()
	cf["description"] = "A custom field value, keyed cf__<key>."
	doc := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"title":                title + " " + m.String(),
		"type":                 "object",
		"properties":           props,
		"patternProperties":    map[string]any{CustomMemberPattern: cf},
		"additionalProperties": false,
	}
	if len(required) > 0 {
		doc["required"] = required
	}
	return doc
}

// CustomMemberPattern matches the top-level cf__<key> members of a write body.
const CustomMemberPattern = "^cf__[a-z][a-z0-9_]*$"

// Value returns the JSON Schema of any field value a custom field (or an association attribute) can
// hold: text (also dates, times, options, ids), a number, a boolean, a multi-select's list of options, or
// null. Each call returns a new map.
func Value() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string"}, map[string]any{"type": "number"}, map[string]any{"type": "boolean"},
		map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, map[string]any{"type": "null"},
	}}
}

// Property returns the JSON Schema of one field's value.
func Property(f *model.Field) map[string]any {
	p := map[string]any{}
	if f.Label != "" {
		p["title"] = f.Label
	}
	if f.Description != "" {
		p["description"] = f.Description
	}
	var typ string
	switch f.Type {
	case model.String, model.Text, model.Email, model.URL, model.Phone:
		typ = "string"
		p["maxLength"] = f.MaxLength
		if f.MinLength > 0 {
			p["minLength"] = f.MinLength
		}
		switch f.Type {
		case model.Email:
			p["format"] = "email"
		case model.URL:
			p["format"] = "uri"
			p["pattern"] = model.URLPattern
		case model.Phone:
			p["pattern"] = `^[0-9+().\-/ xX#*]*$`
		}
		if len(f.Options) > 0 {
			enum := make([]any, 0, len(f.Options)+1)
			for _, o := range f.Options {
				enum = append(enum, o)
			}
			if !f.Required {
				enum = append(enum, nil)
			}
			p["enum"] = enum
		}
	case model.Integer, model.Decimal:
		typ = "number"
		if f.Type == model.Integer {
			typ = "integer"
		}
		if f.Minimum != nil {
			p["minimum"] = *f.Minimum
		}
		if f.Maximum != nil {
			p["maximum"] = *f.Maximum
		}
	case model.Boolean:
		typ = "boolean"
	case model.MultiSelect:
		typ = "array"
		items := map[string]any{"type": "string"}
		if len(f.Options) > 0 {
			items["enum"] = f.Options
		}
		p["items"], p["uniqueItems"] = items, true
	case model.Date:
		typ, p["format"] = "string", "date"
	case model.DateTime:
		typ, p["format"] = "string", "date-time"
	case model.Reference, model.UUID:
		typ, p["format"] = "string", "uuid"
		if f.Target != "" {
			p["x-target"] = f.Target
		}
	}
	if f.Required {
		p["type"] = typ
	} else {
		p["type"] = []any{typ, "null"}
	}
	if f.Unique {
		p["x-unique"] = true
	}
	if f.Default != nil {
		p["default"] = model.JSONValue(f, f.Default)
	}
	return p
}

// Body is a validated write body.
type Body struct {
	// Values holds canonical values of declared fields keyed by field key; a nil value clears the field.
	Values map[string]any
	// Custom holds custom field values keyed by field key (without the cf__ prefix), unvalidated:
	// custom field definitions are applied by the caller.
	Custom map[string]any
}

// CustomForm is how a write body named its custom fields: as top-level cf__<key> members or inside one
// custom_fields object. Errors about a custom field name it the way the client wrote it.
type CustomForm uint8

// The custom field forms of a body. A body naming no custom field reports as ObjectForm.
const (
	ObjectForm CustomForm = iota // "custom_fields": {"<key>": …}
	MemberForm                   // "cf__<key>": …
)

// Path returns the path of custom field key in form f: cf__<key> or custom_fields.<key>.
func (f CustomForm) Path(key string) field.Path {
	if f == MemberForm {
		return field.NewPath(CustomPrefix + key)
	}
	return field.NewPath("custom_fields").Child(key)
}

// CustomPrefix starts the top-level member of a custom field.
const CustomPrefix = "cf__"

// CustomOf returns the custom field values body names, by key, and the form it names them in; values is
// nil when body names no custom field (an empty custom_fields object is an empty map). When body uses
// both forms (which Validate refuses) the custom_fields object is the one returned; when custom_fields is
// not an object, values is nil.
func CustomOf(body map[string]any) (values map[string]any, form CustomForm) {
	if v, ok := body["custom_fields"]; ok {
		obj, isObj := v.(map[string]any)
		if !isObj {
			return nil, ObjectForm
		}
		return maps.Clone(obj), ObjectForm
	}
	for k, v := range body {
		if key, ok := strings.CutPrefix(k, CustomPrefix); ok {
			if values == nil {
				values = map[string]any{}
			}
			values[key] = v
		}
	}
	if values != nil {
		form = MemberForm
	}
	return values, form
}

// Validate checks body for mode and returns its canonical values, or every problem found.
func (r *Resource) Validate(body map[string]any, m Mode) (*Body, field.ErrorList) {
	out, errs := r.ValidateAll(body, m)
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// ValidateAll is Validate that returns, beside the problems, the values that passed: the canonical
// values of the members found valid, and the defaults of the fields the body does not name (a member
// refused takes no default in their place). A caller that checks more than the schema (the resource's
// rules) reads them to report its own problems with the schema's in one answer.
func (r *Resource) ValidateAll(body map[string]any, m Mode) (*Body, field.ErrorList) {
	var errs field.ErrorList
	out := &Body{Values: map[string]any{}}
	known := map[string]any{}
	keys := make([]string, 0, len(body))
	for k := range body {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	_, hasObject := body["custom_fields"]
	out.Custom, _ = CustomOf(body)
	for _, k := range keys {
		v := body[k]
		switch {
		case k == "custom_fields":
			if _, ok := v.(map[string]any); !ok {
				errs = append(errs, field.New(field.CodeType, field.NewPath(k), "must be an object keyed by custom field key"))
			}
		case strings.HasPrefix(k, CustomPrefix):
			if hasObject {
				errs = append(errs, field.New(field.CodeConflicting, field.NewPath(k), "custom fields must be written either as cf__<key> members or in one custom_fields object, not both"))
			}
		default:
			f, ok := r.res.Field(k)
			switch {
			case !ok:
				errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "is not a field of "+r.res.Name))
			case f.Formula != nil:
				errs = append(errs, field.New(field.CodeReadOnly, field.NewPath(k), "is read-only: it is computed by the formula "+f.Formula.Expr))
			case !m.settable(f):
				errs = append(errs, field.New(field.CodeReadOnly, field.NewPath(k), "is read-only"))
			default:
				known[k] = v
			}
		}
	}
	for _, f := range r.res.Declared() {
		if !m.settable(f) || !f.Required {
			continue
		}
		v, present := known[f.Key]
		if (m != Update && !present && f.Default == nil) || (present && v == nil) {
			errs = append(errs, field.New(field.CodeRequired, field.NewPath(f.Key), "is required"))
			delete(known, f.Key)
		}
	}

	bad := map[string]bool{}
	for k, v := range known {
		// Before jsonschema, which turns every number into a big.Rat (see model.SaneNumber).
		if !saneNumbers(v) {
			bad[k] = true
			delete(known, k)
			errs = append(errs, field.New(field.CodeRange, field.NewPath(k), model.ErrNumberSize.Error()))
		}
	}
	if err := r.compile(); err != nil {
		// The documents come from definitions already checked: a schema that does not compile is a
		// defect (CompileAll at start-up, `recordsctl definitions lint` and the tests find it first).
		panic(err)
	}
	if err := r.schemas[m].Validate(known); err != nil {
		ve, ok := err.(*jsonschema.ValidationError)
		if !ok {
			return nil, field.ErrorList{{Code: field.CodeInvalid, Message: err.Error()}}
		}
		for _, e := range leaves(ve) {
			key := strings.TrimPrefix(e.InstanceLocation, "/")
			if key == "" || strings.Contains(key, "/") || bad[key] {
				continue // required and additionalProperties are reported above
			}
			bad[key] = true
			code, msg := codeFor(e.KeywordLocation), e.Message
			if f, ok := r.res.Field(key); ok && code == field.CodeOption {
				msg = "must be one of " + strings.Join(f.Options, ", ")
			} else if ok && code == field.CodeFormat && f.Type == model.URL {
				msg = model.ErrURL.Error()
			}
			errs = append(errs, field.New(code, field.NewPath(key), msg))
		}
	}
	for k, v := range known {
		if bad[k] {
			continue
		}
		f, _ := r.res.Field(k)
		if v == nil {
			out.Values[k] = nil
			continue
		}
		cv, err := model.Canonical(f, v)
		if err == nil {
			err = model.Check(f, cv)
		}
		if err != nil {
			code := field.CodeInvalid
			if errors.Is(err, model.ErrURL) {
				code = field.CodeFormat
			}
			errs = append(errs, field.New(code, field.NewPath(k), err.Error()))
			continue
		}
		out.Values[k] = cv
	}
	if m != Update {
		for _, f := range r.res.Declared() {
			if _, given := body[f.Key]; !given && f.Default != nil && m.settable(f) {
				out.Values[f.Key] = f.Default
			}
		}
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return r.rank(errs[i].Field) < r.rank(errs[j].Field) })
	}
	return out, errs
}

// saneNumbers reports whether every number in v, at any depth, passes model.SaneNumber.
func saneNumbers(v any) bool {
	switch x := v.(type) {
	case json.Number:
		return model.SaneNumber(x.String())
	case []any:
		for _, it := range x {
			if !saneNumbers(it) {
				return false
			}
		}
	case map[string]any:
		for _, it := range x {
			if !saneNumbers(it) {
				return false
			}
		}
	}
	return true
}

func (r *Resource) rank(key string) int {
	if i, ok := r.order[key]; ok {
		return i
	}
	return len(r.order)
}

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func codeFor(keywordLocation string) field.Code {
	kw := keywordLocation[strings.LastIndex(keywordLocation, "/")+1:]
	switch kw {
	case "type":
		return field.CodeType
	case "maxLength":
		return field.CodeTooLong
	case "minLength":
		return field.CodeTooShort
	case "enum":
		return field.CodeOption
	case "format", "pattern":
		return field.CodeFormat
	case "minimum", "maximum":
		return field.CodeRange
	}
	return field.CodeInvalid
}
