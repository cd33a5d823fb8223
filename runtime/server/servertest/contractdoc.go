package servertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi-validator/openapi_vocabulary"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// This file indexes an OpenAPI 3.1 document for the contract checks (contract.go): its paths as a tree of
// segments, and per operation its parameters, security, request body and responses, each schema of them a
// lazySchema compiled at its first use. Once built, the index is only read: the checks of parallel tests
// share it without a lock.

// contractURL names the document in the schema compiler, so that the $refs of its schemas
// (#/components/…) resolve in it.
const contractURL = "https://contract.invalid/openapi.json"

// methods are the operations a path item may have, by their HTTP method.
var methods = map[string]string{
	"get": http.MethodGet, "put": http.MethodPut, "post": http.MethodPost, "delete": http.MethodDelete,
	"options": http.MethodOptions, "head": http.MethodHead, "patch": http.MethodPatch, "trace": http.MethodTrace,
}

// routeNode is a node of the path tree: a path template's segments from the root, a literal segment a
// child of its own, every parameter segment ({id}) the one param child.
type routeNode struct {
	literal map[string]*routeNode
	param   *routeNode
	item    *pathItem // the path template ending here, if any
}

// lookup finds the path template segs (escaped, none empty) match. A literal segment is tried before a
// parameter, as OpenAPI says (/v1/admin/keys before /v1/admin/{resource}); when the literal's subtree has
// no match, the parameter's is tried.
func (n *routeNode) lookup(segs []string) *pathItem {
	if len(segs) == 0 {
		return n.item
	}
	if child := n.literal[segs[0]]; child != nil {
		if item := child.lookup(segs[1:]); item != nil {
			return item
		}
	}
	if n.param != nil {
		return n.param.lookup(segs[1:])
	}
	return nil
}

// insert adds a path template's item.
func (n *routeNode) insert(segs []string, item *pathItem) {
	for _, seg := range segs {
		if isParamSegment(seg) {
			if n.param == nil {
				n.param = &routeNode{}
			}
			n = n.param
			continue
		}
		if n.literal == nil {
			n.literal = map[string]*routeNode{}
		}
		child := n.literal[seg]
		if child == nil {
			child = &routeNode{}
			n.literal[seg] = child
		}
		n = child
	}
	n.item = item
}

func isParamSegment(seg string) bool {
	return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}'
}

// pathSegments splits a path into its non-empty segments.
func pathSegments(p string) []string {
	var segs []string
	for seg := range strings.SplitSeq(p, "/") {
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	return segs
}

// pathItem is a path template's operations, by HTTP method.
type pathItem struct {
	template string
	ops      map[string]*operation
}

// operation is what the document says of one method of one path template.
type operation struct {
	method, template string
	segments         []string // the template's segments
	params           []*parameter
	// security is the operation's security requirements, or the document's when it has none of its own.
	security  []requirement
	body      *requestBody // nil when the operation takes none
	responses map[string]*response
	fallback  *response // the "default" response
	codes     string    // the documented statuses, for messages
}

// parameter is a documented request parameter.
type parameter struct {
	name, in string
	required bool
	text     *textSchema
	// reserved says a value must not hold RFC 3986 reserved characters: a query parameter with explode
	// true and not allowReserved (as libopenapi-validator checks).
	reserved bool
}

// requestBody is an operation's documented request body.
type requestBody struct {
	required bool
	content  map[string]*lazySchema // by media type; nil when the media type has no schema
	types    []string               // the keys of content, sorted, for media ranges (application/*)
}

// response is a documented response: its media types and headers.
type response struct {
	code    string                 // as documented: 200, 4XX or default
	content map[string]*lazySchema // by media type; nil when the media type has no schema
	headers []*responseHeader      // sorted by name
}

type responseHeader struct {
	name     string // canonical (X-Request-Id)
	required bool
	text     *textSchema
}

// requirement is one security requirement: the schemes it needs together (none: anonymous access).
type requirement []string

// securityScheme is a documented security scheme.
type securityScheme struct {
	typ    string // lower case: http, apikey, oauth2, openidconnect, mutualtls
	scheme string // for http: bearer, basic
	in     string // for apiKey: header, query, cookie
	name   string // for apiKey
}

// textSchema checks a text (a parameter's or a header's value) against a schema: the text stands for the
// JSON value the schema's types call for (an integer, a number, a boolean, else the string itself).
type textSchema struct {
	types  []string
	schema *lazySchema
	// unsupported says why the text cannot be checked (an array, an object, a style other than the
	// default); it is reported as a problem, so that the contract never passes what it did not check.
	unsupported string
}

// check returns the problem with text, or "".
func (s *textSchema) check(text string) string {
	if s.unsupported != "" {
		return s.unsupported
	}
	v, ok := s.value(text)
	if !ok {
		return fmt.Sprintf("%q is not a valid %s", text, strings.Join(s.types, " or "))
	}
	sch, err := s.schema.get()
	if err != nil {
		return err.Error()
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Sprintf("%q does not match the schema: %s", text, schemaErrors(err))
	}
	return ""
}

// value returns the JSON value text stands for under the schema's types.
func (s *textSchema) value(text string) (any, bool) {
	if len(s.types) == 0 {
		return text, true
	}
	for _, t := range []string{"integer", "number", "boolean", "string"} {
		if !slices.Contains(s.types, t) {
			continue
		}
		switch t {
		case "integer":
			if i, err := strconv.ParseInt(text, 10, 64); err == nil {
				return i, true
			}
		case "number":
			if f, err := strconv.ParseFloat(text, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f, true
			}
		case "boolean":
			if b, err := strconv.ParseBool(text); err == nil {
				return b, true
			}
		case "string":
			return text, true
		}
	}
	return nil, false
}

// lazySchema is a schema of the document, compiled at its first use and kept. It is shared by every
// use of the same schema object (a response all operations $ref, as NotFound, compiles once).
type lazySchema struct {
	c     *Contract
	ptr   string // its JSON pointer in the document
	value any    // the schema
	once  sync.Once
	sch   *jsonschema.Schema
	err   error
}

// get returns the compiled schema. Only the first call of each schema compiles, holding the compiler's
// lock (the compiler is not safe for concurrent use); a compiled jsonschema.Schema is read-only and
// validates from any number of goroutines at once.
func (l *lazySchema) get() (*jsonschema.Schema, error) {
	l.once.Do(func() {
		l.c.compileMu.Lock()
		defer l.c.compileMu.Unlock()
		// What the compiler does not validate (newCompiler): the schemas $refs lead to, once, and this one.
		l.c.componentsChecked.Do(func() { l.c.componentsErr = checkSchemas(documentSchemas(l.c.doc, "components/schemas/*")) })
		if l.c.componentsErr != nil {
			l.err = l.c.componentsErr
			return
		}
		if l.err = checkSchemas(map[string]any{l.ptr: l.value}); l.err != nil {
			return
		}
		l.sch, l.err = l.c.compiler.Compile(contractURL + "#" + fragment(l.ptr))
		if l.err != nil {
			l.err = fmt.Errorf("the schema at %s does not compile: %w", l.ptr, l.err)
		}
	})
	return l.sch, l.err
}

// fragment percent-encodes a JSON pointer's tokens for a URL fragment ({id} in a path template).
func fragment(ptr string) string {
	toks := strings.Split(ptr, "/")
	for i, t := range toks {
		toks[i] = url.PathEscape(t)
	}
	return strings.Join(toks, "/")
}

// newCompiler returns a schema compiler configured as libopenapi-validator configures its own for an
// OpenAPI 3.1 document with format assertions (vconfig.WithFormatAssertions): formats asserted, and its
// OpenAPI vocabulary (nullable refused, discriminator properties required). It loads nothing: every
// $ref must be within the document.
//
// It also knows where an OpenAPI document keeps its schemas (documentLayout), so that it reads them all
// at once at the first compilation: otherwise it reads each schema it is asked for, or a $ref leads it
// to, on its own, copying its whole index of the document's schemas each time (quadratic: a second of
// processor time in TestIsolationMatrix). Reading them that way, it leaves out its validation of each
// against the JSON Schema meta-schema, which the contract does itself (lazySchema.get).
func newCompiler(doc any) (*jsonschema.Compiler, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.RegisterVocabulary(openapi_vocabulary.NewOpenAPIVocabularyWithCoercion(openapi_vocabulary.Version31, false))
	c.RegisterVocabulary(documentLayout)
	c.AssertVocabs()
	c.UseLoader(noLoader{})
	if err := c.AddResource(contractURL, doc); err != nil {
		return nil, fmt.Errorf("add the document to the schema compiler: %w", err)
	}
	return c, nil
}

// schemaLocations are where an OpenAPI 3.1 document keeps schemas (* any member, [] any item).
var schemaLocations = []string{
	"components/schemas/*",
	"components/parameters/*/schema",
	"components/headers/*/schema",
	"components/requestBodies/*/content/*/schema",
	"components/responses/*/content/*/schema",
	"components/responses/*/headers/*/schema",
	"paths/*/parameters/[]/schema",
	"paths/*/*/parameters/[]/schema",
	"paths/*/*/requestBody/content/*/schema",
	"paths/*/*/responses/*/content/*/schema",
	"paths/*/*/responses/*/headers/*/schema",
}

// documentLayout is a vocabulary with no keywords whose subschemas are the document's schemas
// (schemaLocations): the compiler collects them when it reads the document, which is its root.
var documentLayout = &jsonschema.Vocabulary{
	URL: "https://contract.invalid/vocab/openapi-document-layout",
	Subschemas: func() []jsonschema.SchemaPath {
		var out []jsonschema.SchemaPath
		for _, loc := range schemaLocations {
			var sp jsonschema.SchemaPath
			for tok := range strings.SplitSeq(loc, "/") {
				switch tok {
				case "*":
					sp = append(sp, jsonschema.AllProp{})
				case "[]":
					sp = append(sp, jsonschema.AllItem{})
				default:
					sp = append(sp, jsonschema.Prop(tok))
				}
			}
			out = append(out, sp)
		}
		return out
	}(),
	Compile: func(*jsonschema.CompilerContext, map[string]any) (jsonschema.SchemaExt, error) { return nil, nil },
}

// documentSchemas returns the schemas at locations (schemaLocations) in doc, by JSON pointer.
func documentSchemas(doc any, locations ...string) map[string]any {
	out := map[string]any{}
	var walk func(v any, ptr string, toks []string)
	walk = func(v any, ptr string, toks []string) {
		if len(toks) == 0 {
			out[ptr] = v
			return
		}
		switch tok := toks[0]; tok {
		case "*":
			m, _ := v.(map[string]any)
			for k, v := range m {
				walk(v, ptr+"/"+escapeToken(k), toks[1:])
			}
		case "[]":
			a, _ := v.([]any)
			for i, v := range a {
				walk(v, ptr+"/"+strconv.Itoa(i), toks[1:])
			}
		default:
			if m, ok := v.(map[string]any); ok {
				if v, ok := m[tok]; ok {
					walk(v, ptr+"/"+escapeToken(tok), toks[1:])
				}
			}
		}
	}
	for _, loc := range locations {
		walk(doc, "", strings.Split(loc, "/"))
	}
	return out
}

var (
	metaOnce   sync.Once
	metaSchema *jsonschema.Schema
	metaErr    error
)

// checkSchemas validates schemas (by JSON pointer) against the JSON Schema 2020-12 meta-schema, as the
// compiler would have (newCompiler), and returns the first failure.
func checkSchemas(schemas map[string]any) error {
	metaOnce.Do(func() {
		metaSchema, metaErr = jsonschema.NewCompiler().Compile("https://json-schema.org/draft/2020-12/schema")
	})
	if metaErr != nil {
		return fmt.Errorf("compile the JSON Schema meta-schema: %w", metaErr)
	}
	for _, ptr := range slices.Sorted(maps.Keys(schemas)) {
		if err := metaSchema.Validate(schemas[ptr]); err != nil {
			return fmt.Errorf("the schema at %s is not a JSON Schema: %s", ptr, schemaErrors(err))
		}
	}
	return nil
}

type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s: the contract's schemas may only refer to the document itself", u)
}

// docIndexer builds a Contract's index of its document.
type docIndexer struct {
	c       *Contract
	root    map[string]any
	schemas map[string]*lazySchema // by pointer
}

// index reads the document's paths, security and security schemes into c.
func (c *Contract) index(root map[string]any) error {
	if v, _ := root["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		return fmt.Errorf("the contract checks OpenAPI 3.1 documents; this one is %q", v)
	}
	x := &docIndexer{c: c, root: root, schemas: map[string]*lazySchema{}}
	c.routes = &routeNode{}
	servers, _ := root["servers"].([]any)
	for _, s := range servers {
		if u, err := url.Parse(str(s, "url")); err == nil && u.Path != "" {
			c.basePaths = append(c.basePaths, u.Path)
		}
	}
	docSecurity, err := x.security(root["security"], "/security")
	if err != nil {
		return err
	}
	c.schemes = map[string]securityScheme{}
	schemes, _ := mapAt(root, "components", "securitySchemes")
	for name, s := range schemes {
		m, _, err := x.resolve(s, "/components/securitySchemes/"+escapeToken(name))
		if err != nil {
			return err
		}
		c.schemes[name] = securityScheme{typ: strings.ToLower(str(m, "type")), scheme: str(m, "scheme"), in: str(m, "in"), name: str(m, "name")}
	}
	paths, _ := root["paths"].(map[string]any)
	for template, raw := range paths {
		m, ptr, err := x.resolve(raw, "/paths/"+escapeToken(template))
		if err != nil {
			return err
		}
		item := &pathItem{template: template, ops: map[string]*operation{}}
		common, err := x.parameters(m["parameters"], ptr+"/parameters")
		if err != nil {
			return err
		}
		for key, method := range methods {
			raw, ok := m[key].(map[string]any)
			if !ok {
				continue
			}
			op, err := x.operation(method, template, raw, ptr+"/"+key, common, docSecurity)
			if err != nil {
				return fmt.Errorf("%s %s: %w", method, template, err)
			}
			item.ops[method] = op
		}
		c.routes.insert(pathSegments(template), item)
	}
	return nil
}

func (x *docIndexer) operation(method, template string, m map[string]any, ptr string, common []*parameter, docSecurity []requirement) (*operation, error) {
	op := &operation{method: method, template: template, segments: pathSegments(template), security: docSecurity, responses: map[string]*response{}}
	own, err := x.parameters(m["parameters"], ptr+"/parameters")
	if err != nil {
		return nil, err
	}
	// The operation's parameters override the path item's of the same name and location.
	for _, p := range common {
		if !slices.ContainsFunc(own, func(o *parameter) bool { return o.name == p.name && o.in == p.in }) {
			op.params = append(op.params, p)
		}
	}
	op.params = append(op.params, own...)
	if _, ok := m["security"]; ok {
		if op.security, err = x.security(m["security"], ptr+"/security"); err != nil {
			return nil, err
		}
		if op.security == nil {
			op.security = []requirement{} // none: anonymous access, not the document's
		}
	}
	if raw, ok := m["requestBody"]; ok {
		b, bptr, err := x.resolve(raw, ptr+"/requestBody")
		if err != nil {
			return nil, err
		}
		op.body = &requestBody{required: b["required"] == true}
		if op.body.content, err = x.content(b, bptr); err != nil {
			return nil, err
		}
		for t := range op.body.content {
			op.body.types = append(op.body.types, t)
		}
		slices.Sort(op.body.types)
	}
	responses, _ := m["responses"].(map[string]any)
	var codes []string
	for code, raw := range responses {
		r, rptr, err := x.resolve(raw, ptr+"/responses/"+escapeToken(code))
		if err != nil {
			return nil, err
		}
		res := &response{code: code}
		if res.content, err = x.content(r, rptr); err != nil {
			return nil, err
		}
		headers, _ := r["headers"].(map[string]any)
		for name, raw := range headers {
			h, hptr, err := x.resolve(raw, rptr+"/headers/"+escapeToken(name))
			if err != nil {
				return nil, err
			}
			rh := &responseHeader{name: textproto.CanonicalMIMEHeaderKey(name), required: h["required"] == true}
			if rh.text, err = x.text(h, hptr, "simple"); err != nil {
				return nil, err
			}
			res.headers = append(res.headers, rh)
		}
		slices.SortFunc(res.headers, func(a, b *responseHeader) int { return strings.Compare(a.name, b.name) })
		if code == "default" {
			op.fallback = res
		} else {
			op.responses[code] = res
		}
		codes = append(codes, code)
	}
	slices.Sort(codes)
	op.codes = strings.Join(codes, ", ")
	return op, nil
}

// parameters reads a list of parameters.
func (x *docIndexer) parameters(raw any, ptr string) ([]*parameter, error) {
	list, _ := raw.([]any)
	var out []*parameter
	for i, raw := range list {
		m, pptr, err := x.resolve(raw, ptr+"/"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		p := &parameter{name: str(m, "name"), in: str(m, "in"), required: m["required"] == true}
		style := map[string]string{"query": "form", "cookie": "form"}[p.in]
		if style == "" {
			style = "simple"
		}
		if p.text, err = x.text(m, pptr, style); err != nil {
			return nil, err
		}
		p.reserved = p.in == "query" && m["explode"] == true && m["allowReserved"] != true
		out = append(out, p)
	}
	return out, nil
}

// text reads the schema of a parameter or header object m (at ptr) whose default style is style.
func (x *docIndexer) text(m map[string]any, ptr, style string) (*textSchema, error) {
	t := &textSchema{}
	what := ptr
	if name := str(m, "name"); name != "" {
		what = fmt.Sprintf("%s %s (%s)", str(m, "in"), name, ptr)
	}
	raw, ok := m["schema"]
	switch {
	case !ok:
		t.unsupported = fmt.Sprintf("%s: no schema (content is not checked by the contract; extend servertest/contractdoc.go)", what)
		return t, nil
	case m["style"] != nil && m["style"] != style:
		t.unsupported = fmt.Sprintf("%s: style %v is not checked by the contract (extend servertest/contractdoc.go)", what, m["style"])
		return t, nil
	}
	t.types = x.types(raw, ptr+"/schema", 0)
	if slices.Contains(t.types, "array") || slices.Contains(t.types, "object") {
		t.unsupported = fmt.Sprintf("%s: a value of type %v is not checked by the contract (extend servertest/contractdoc.go)", what, t.types)
		return t, nil
	}
	t.schema = x.schema(ptr+"/schema", raw)
	return t, nil
}

// types returns the JSON types a schema allows, as far as its type keywords say (following $refs and
// anyOf, oneOf and allOf branches); none when they say nothing.
func (x *docIndexer) types(raw any, ptr string, depth int) []string {
	m, ok := raw.(map[string]any)
	if !ok || depth > 8 {
		return nil
	}
	var out []string
	switch t := m["type"].(type) {
	case string:
		out = append(out, t)
	case []any:
		for _, v := range t {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	if ref, ok := m["$ref"].(string); ok {
		if target, tptr, err := x.lookup(ref); err == nil {
			return x.types(target, tptr, depth+1)
		}
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		branches, _ := m[key].([]any)
		for i, b := range branches {
			for _, t := range x.types(b, ptr+"/"+key+"/"+strconv.Itoa(i), depth+1) {
				if !slices.Contains(out, t) {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// content reads the content map of a request body or response m (at ptr).
func (x *docIndexer) content(m map[string]any, ptr string) (map[string]*lazySchema, error) {
	content, _ := m["content"].(map[string]any)
	if len(content) == 0 {
		return nil, nil
	}
	out := map[string]*lazySchema{}
	for mt, raw := range content {
		media, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s/content/%s: not an object", ptr, mt)
		}
		out[mt] = nil
		if schema, ok := media["schema"]; ok {
			out[mt] = x.schema(ptr+"/content/"+escapeToken(mt)+"/schema", schema)
		}
	}
	return out, nil
}

// security reads a list of security requirements.
func (x *docIndexer) security(raw any, ptr string) ([]requirement, error) {
	if raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: not a list", ptr)
	}
	out := []requirement{}
	for _, r := range list {
		m, _ := r.(map[string]any)
		req := requirement{}
		for name := range m {
			req = append(req, name)
		}
		slices.Sort(req)
		out = append(out, req)
	}
	return out, nil
}

// schema returns the lazySchema of value, at ptr, one per pointer.
func (x *docIndexer) schema(ptr string, value any) *lazySchema {
	if s := x.schemas[ptr]; s != nil {
		return s
	}
	s := &lazySchema{c: x.c, ptr: ptr, value: value}
	x.schemas[ptr] = s
	return s
}

// resolve follows raw's $ref (a Reference Object) within the document and returns the object it
// names and its pointer; an object without one is returned as it is.
func (x *docIndexer) resolve(raw any, ptr string) (map[string]any, string, error) {
	for range 16 {
		m, ok := raw.(map[string]any)
		if !ok {
			return nil, ptr, fmt.Errorf("%s: not an object", ptr)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, ptr, nil
		}
		var err error
		if raw, ptr, err = x.lookup(ref); err != nil {
			return nil, ptr, err
		}
	}
	return nil, ptr, fmt.Errorf("%s: more than 16 $refs in a row", ptr)
}

// lookup returns the value a local $ref names and its JSON pointer.
func (x *docIndexer) lookup(ref string) (any, string, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, "", fmt.Errorf("$ref %q: the contract resolves references within the document only", ref)
	}
	ptr, err := url.PathUnescape(frag)
	if err != nil || (ptr != "" && ptr[0] != '/') {
		return nil, "", fmt.Errorf("$ref %q: not a JSON pointer", ref)
	}
	var v any = x.root
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := v.(type) {
		case map[string]any:
			v, ok = n[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			ok = err == nil && i >= 0 && i < len(n)
			if ok {
				v = n[i]
			}
		default:
			ok = false
		}
		if !ok {
			return nil, "", fmt.Errorf("$ref %q: no such value in the document", ref)
		}
	}
	return v, ptr, nil
}

// escapeToken escapes a JSON pointer token.
func escapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// str returns m[key] when m is an object and the value a string.
func str(m any, key string) string {
	o, _ := m.(map[string]any)
	s, _ := o[key].(string)
	return s
}

// mapAt returns the object at keys under m.
func mapAt(m map[string]any, keys ...string) (map[string]any, bool) {
	for _, k := range keys {
		var ok bool
		if m, ok = m[k].(map[string]any); !ok {
			return nil, false
		}
	}
	return m, true
}

// decodeJSON decodes one JSON value, numbers as json.Number (exact, as the schemas compare them), and
// refuses anything after it.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}
