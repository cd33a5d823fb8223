package servertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/httpapi"
	"github.com/workspace-records/records/runtime/server"
)

// GoldenOpenAPI is the committed OpenAPI document of the shipped definitions, relative to the repository:
// what `go run ./cmd/recordsctl openapi` prints, indented. `make openapi-golden` rewrites it, and
// tests/openapi TestOpenAPIGolden fails while the generated document differs from it. A change to it is
// a change of the API contract, reviewed as such in the diff.
const GoldenOpenAPI = "docs/openapi.json"

// GoldenServerURL is the server address the golden document names (recordsctl openapi's default).
const GoldenServerURL = "http://" + config.DefaultAddr

// contractServerURL replaces each server's own address in the documents contracts are built from: the
// validator matches paths, not hosts, and one contract serves every env of the same definitions.
const contractServerURL = "http://server.test"

// Contract checks requests and responses against an OpenAPI 3.1 document: a response's status must be
// documented for its operation, its content type too, its body must match the schema and its documented
// headers theirs; a request's parameters, security and body must match the operation's.
//
// It reads the document once into an index of its operations (contractdoc.go) whose schemas compile at
// their first use, each once, with the JSON Schema validator libopenapi-validator uses and configured as
// it is (jsonschema/v6, formats asserted, libopenapi-validator's OpenAPI vocabulary). What it checks is
// what libopenapi-validator checked, written for this harness: libopenapi-validator re-rendered each
// schema on each call to find it in its cache (two thirds of its cost) and, its calls not being safe for
// concurrent use, made every check of a test process wait for one lock. A Contract is safe for
// concurrent use and takes no lock once a schema is compiled. The few places it is stricter are
// deliberate: every documented response header present is checked against its schema (not only the
// required ones), a parameter whose schema has no type of its own (an anyOf) is checked against it,
// HEAD takes GET's parameters, and a body of JSON null is checked (not passed).
type Contract struct {
	raw []byte // the document, for ValidateDocument

	routes    *routeNode
	basePaths []string // the paths of the document's server URLs, which request paths may start with
	schemes   map[string]securityScheme

	// compileMu serialises the compiler, which is not safe for concurrent use; it is held only while a
	// schema compiles, at its first use (lazySchema.get).
	compileMu sync.Mutex
	compiler  *jsonschema.Compiler
	doc       any // the document parsed, which the compiler reads
	// componentsChecked validates the document's components/schemas once, before the first compilation
	// (lazySchema.get); componentsErr is its verdict.
	componentsChecked sync.Once
	componentsErr     error

	docOnce     sync.Once
	docProblems []string
}

var (
	contractsMu sync.Mutex
	contracts   = map[[32]byte]*Contract{}
)

// ContractFor returns the contract for a server that serves doc (its address replaced by
// http://server.test), built once per distinct document.
//
// A server of the shipped definitions is held to the committed golden document (GoldenOpenAPI), not to
// the document it serves: were it checked against its own document, a bug shared by the handler and the
// document generator (engine/catalog) would pass. doc only tells which definitions the server has: when
// it is what the generator makes of the shipped definitions — faults of the generator included — the
// contract is the golden one. Any other document (a test's own definitions) has no golden and is used as
// served.
func ContractFor(doc []byte) (*Contract, error) {
	g, err := shippedDocuments()
	if err != nil {
		return nil, err
	}
	if bytes.Equal(doc, g.generated) {
		doc = g.golden
	}
	return contractOf(doc)
}

// contractOf returns the contract of an OpenAPI document, built once per distinct document.
func contractOf(doc []byte) (*Contract, error) {
	key := sha256.Sum256(doc)
	contractsMu.Lock()
	defer contractsMu.Unlock()
	if c, ok := contracts[key]; ok {
		return c, nil
	}
	c, err := newContract(doc)
	if err != nil {
		return nil, err
	}
	contracts[key] = c
	return c, nil
}

// newContract reads an OpenAPI 3.1 document (JSON) into a Contract.
func newContract(doc []byte) (*Contract, error) {
	parsed, err := decodeJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("parse OpenAPI document: %w", err)
	}
	root, ok := parsed.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("parse OpenAPI document: not a JSON object")
	}
	c := &Contract{raw: doc, doc: root}
	if c.compiler, err = newCompiler(root); err != nil {
		return nil, err
	}
	if err := c.index(root); err != nil {
		return nil, fmt.Errorf("OpenAPI document: %w", err)
	}
	return c, nil
}

// ValidateDocument validates the document itself against the OpenAPI 3.1 specification
// (libopenapi-validator), once per contract.
func (c *Contract) ValidateDocument() []string {
	c.docOnce.Do(func() {
		d, err := libopenapi.NewDocument(c.raw)
		if err != nil {
			c.docProblems = []string{fmt.Sprintf("parse OpenAPI document: %v", err)}
			return
		}
		_, errs := schema_validation.ValidateOpenAPIDocument(d)
		c.docProblems = describe(errs)
	})
	return slices.Clone(c.docProblems)
}

// find returns the operation req is for and its path's segments (escaped), or nil when the document
// has no such path or the path no such method.
func (c *Contract) find(req *http.Request) (*operation, []string) {
	p := req.URL.EscapedPath()
	for _, base := range c.basePaths {
		if strings.HasPrefix(p, base) {
			p = p[len(base):]
			break
		}
	}
	segs := pathSegments(p)
	item := c.routes.lookup(segs)
	if item == nil {
		return nil, nil
	}
	op := item.ops[req.Method]
	if op == nil && req.Method == http.MethodHead {
		op = item.ops[http.MethodGet]
	}
	return op, segs
}

// CheckResponse validates a response (its body given separately) to req against the document: its
// status must be documented for the operation, its body must match, and so must its documented headers.
// A request whose path or method the document does not have is undocumented (true, no problems).
//
// A path with a trailing slash or one that is not clean (/v1/, /v1//companies) is undocumented too: the
// path lookup would match it to the path without, which the server, answering exactly the paths it
// documents, does not (404).
func (c *Contract) CheckResponse(req *http.Request, res *http.Response, body []byte) (undocumented bool, problems []string) {
	return c.checkResponse(req, res, body, nil)
}

// checkResponse is CheckResponse given, when decoded is not nil, the body already decoded (as Env.Do
// decodes it, numbers as json.Number), which it does not decode again.
func (c *Contract) checkResponse(req *http.Request, res *http.Response, body []byte, decoded any) (undocumented bool, problems []string) {
	if p := req.URL.Path; p != "/" && (strings.HasSuffix(p, "/") || path.Clean(p) != p) {
		return true, nil
	}
	op, _ := c.find(req)
	if op == nil {
		return true, nil
	}
	return false, op.checkResponse(req, res, body, decoded)
}

func (op *operation) checkResponse(req *http.Request, res *http.Response, body []byte, decoded any) []string {
	r := op.responses[strconv.Itoa(res.StatusCode)]
	if r == nil {
		r = op.responses[strconv.Itoa(res.StatusCode/100)+"XX"]
	}
	if r == nil {
		r = op.fallback
	}
	if r == nil {
		return []string{fmt.Sprintf("status %d is not documented for %s %s (it documents %s)", res.StatusCode, op.method, op.template, op.codes)}
	}
	var problems []string
	if len(r.content) > 0 {
		ct := res.Header.Get("Content-Type")
		mt, _, _ := mime.ParseMediaType(ct)
		schema, ok := r.content[mt]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("content type %q is not documented for status %s of %s %s", ct, r.code, op.method, op.template))
		case schema != nil && JSONMedia(mt):
			if p := checkResponseBody(req, schema, body, decoded); p != "" {
				problems = append(problems, fmt.Sprintf("%d response body: %s", res.StatusCode, p))
			}
		}
	}
	for _, h := range r.headers {
		values, ok := res.Header[h.name]
		if !ok {
			for name, v := range res.Header {
				if strings.EqualFold(name, h.name) {
					values, ok = v, true
					break
				}
			}
		}
		if !ok {
			if h.required {
				problems = append(problems, fmt.Sprintf("required header %s missing from the %d response", h.name, res.StatusCode))
			}
			continue
		}
		for _, v := range values {
			if p := h.text.check(v); p != "" {
				problems = append(problems, fmt.Sprintf("header %s of the %d response: %s", h.name, res.StatusCode, p))
			}
		}
	}
	return problems
}

// checkResponseBody returns the problem with a response body, or "". An empty body passes (a HEAD's
// must be empty), as it did under libopenapi-validator.
func checkResponseBody(req *http.Request, schema *lazySchema, body []byte, decoded any) string {
	if req.Method == http.MethodHead {
		if len(body) > 0 {
			return "a HEAD answer has a body"
		}
		return ""
	}
	if len(body) == 0 {
		return ""
	}
	return checkJSON(schema, body, decoded)
}

// checkJSON returns the problem with a JSON body under schema, or "". decoded, when not nil, is the
// body decoded already.
func checkJSON(schema *lazySchema, body []byte, decoded any) string {
	v := decoded
	if v == nil {
		var err error
		if v, err = decodeJSON(body); err != nil {
			return fmt.Sprintf("not JSON: %v", err)
		}
	} else if !json.Valid(body) {
		return "not JSON (or more than one JSON value)"
	}
	sch, err := schema.get()
	if err != nil {
		return err.Error()
	}
	if err := sch.Validate(v); err != nil {
		return "does not match the schema: " + schemaErrors(err)
	}
	return ""
}

// CheckRequest validates a request (its body given separately) against the document: its path, query,
// header and cookie parameters, its security requirements and its body.
func (c *Contract) CheckRequest(req *http.Request, body []byte) []string {
	op, segs := c.find(req)
	if op == nil {
		return []string{fmt.Sprintf("%s Path '%s' not found", req.Method, req.URL.Path)}
	}
	var problems []string
	param := func(p *parameter, value string) {
		if msg := p.text.check(value); msg != "" {
			problems = append(problems, fmt.Sprintf("%s parameter %s: %s", p.in, p.name, msg))
		}
	}
	missing := func(p *parameter) {
		if p.required {
			problems = append(problems, fmt.Sprintf("required %s parameter %s missing", p.in, p.name))
		}
	}
	var query url.Values
	for _, p := range op.params {
		switch p.in {
		case "path":
			i := slices.Index(op.segments, "{"+p.name+"}")
			if i < 0 || i >= len(segs) {
				continue
			}
			value, err := url.PathUnescape(segs[i])
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("path parameter %s: %v", p.name, err))
			case value == "":
				missing(p)
			default:
				param(p, value)
			}
		case "query":
			if query == nil {
				query = req.URL.Query()
			}
			values, ok := query[p.name]
			if !ok {
				missing(p)
				continue
			}
			for _, v := range values {
				if p.reserved && reservedChars.MatchString(v) {
					problems = append(problems, fmt.Sprintf("query parameter %s: %q holds reserved characters, which it does not allow", p.name, v))
				}
				param(p, v)
			}
		case "header":
			if v := req.Header.Get(p.name); v != "" {
				param(p, v)
			} else {
				missing(p)
			}
		case "cookie":
			if ck, err := req.Cookie(p.name); err == nil {
				param(p, ck.Value)
			} else {
				missing(p)
			}
		}
	}
	problems = append(problems, c.checkSecurity(req, op.security)...)
	if op.body != nil {
		if p := op.body.check(req, body); p != "" {
			problems = append(problems, "request body: "+p)
		}
	}
	return problems
}

// reservedChars matches the RFC 3986 reserved characters.
var reservedChars = regexp.MustCompile(`[:/?#\[\]@!$&'()*+,;=]`)

// checkSecurity returns the problems when req meets none of reqs (none: anonymous access).
func (c *Contract) checkSecurity(req *http.Request, reqs []requirement) []string {
	var problems []string
	for _, r := range reqs {
		var failed []string
		for _, name := range r {
			s, ok := c.schemes[name]
			if !ok {
				failed = append(failed, fmt.Sprintf("security scheme %s is not in the document's components", name))
			} else if p := s.check(req); p != "" {
				failed = append(failed, fmt.Sprintf("security scheme %s: %s", name, p))
			}
		}
		if len(failed) == 0 {
			return nil
		}
		problems = append(problems, failed...)
	}
	return problems
}

// check returns why req does not carry the scheme's credentials, or "". Like libopenapi-validator, it
// checks they are there, not that they are valid.
func (s securityScheme) check(req *http.Request) string {
	switch s.typ {
	case "http":
		auth := req.Header.Get("Authorization")
		if auth == "" {
			return "no Authorization header"
		}
		if len(auth) < len(s.scheme) || !strings.EqualFold(auth[:len(s.scheme)], s.scheme) {
			return fmt.Sprintf("the Authorization header is not of scheme %s", s.scheme)
		}
	case "apikey":
		switch s.in {
		case "header":
			if req.Header.Get(s.name) == "" {
				return fmt.Sprintf("no %s header", s.name)
			}
		case "query":
			if req.URL.Query().Get(s.name) == "" {
				return fmt.Sprintf("no %s query parameter", s.name)
			}
		case "cookie":
			if _, err := req.Cookie(s.name); err != nil {
				return fmt.Sprintf("no %s cookie", s.name)
			}
		}
	}
	return ""
}

// check returns the problem with a request's body, or "".
func (b *requestBody) check(req *http.Request, body []byte) string {
	ct := req.Header.Get("Content-Type")
	if ct == "" {
		if b.required {
			return "no Content-Type, and the body is required"
		}
		return ""
	}
	mt, _, _ := mime.ParseMediaType(ct)
	schema, ok := b.content[mt]
	if !ok {
		// A documented media range (application/*, */*) takes the type too.
		have, _, _ := strings.Cut(mt, "/")
		i := slices.IndexFunc(b.types, func(t string) bool {
			major, minor, _ := strings.Cut(t, "/")
			_, sub, _ := strings.Cut(mt, "/")
			return (major == "*" || major == have) && (minor == "*" || minor == sub)
		})
		if i < 0 {
			return fmt.Sprintf("content type %q is not documented", ct)
		}
		schema = b.content[b.types[i]]
	}
	if schema == nil || !JSONMedia(mt) {
		return ""
	}
	if len(body) == 0 {
		if b.required {
			return "empty, and the body is required"
		}
		return ""
	}
	return checkJSON(schema, body, nil)
}

// schemaErrors describes a schema validation error: each failing keyword (a leaf of the error's tree)
// with the value's location and the keyword's in the document.
func schemaErrors(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, cause := range e.Causes {
				walk(cause)
			}
			return
		}
		at := strings.TrimPrefix(e.SchemaURL, contractURL)
		if kw := e.ErrorKind.KeywordPath(); len(kw) > 0 {
			at += "/" + strings.Join(kw, "/")
		}
		parts = append(parts, fmt.Sprintf("[/%s: %s (%s)]", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.LocalizedString(printer), at))
	}
	walk(ve)
	return strings.Join(parts, " ")
}

var printer = message.NewPrinter(language.English)

func describe(errs []*verrors.ValidationError) []string {
	var out []string
	for _, e := range errs {
		msg := e.Message
		if e.Reason != "" {
			msg += ": " + e.Reason
		}
		for _, f := range e.SchemaValidationErrors {
			msg += fmt.Sprintf(" [%s %s: %s]", f.FieldPath, f.KeywordLocation, f.Reason)
		}
		out = append(out, msg)
	}
	return out
}

// GoldenContract returns the contract of the golden document (GoldenOpenAPI).
func GoldenContract() (*Contract, error) {
	g, err := shippedDocuments()
	if err != nil {
		return nil, err
	}
	return contractOf(g.golden)
}

// GenerateOpenAPI returns the OpenAPI document of the definitions in dir naming serverURL, as recordsd
// serves it and recordsctl openapi prints it (without the final newline).
func GenerateOpenAPI(dir, serverURL string) ([]byte, error) {
	cat, sch, err := server.LoadDefinitions(os.DirFS(dir))
	if err != nil {
		return nil, err
	}
	doc, err := httpapi.NewDocument(catalog.OpenAPI(cat, sch), catalog.ServerURL)
	if err != nil {
		return nil, err
	}
	body, _ := doc.Render(serverURL)
	return body, nil
}

// shippedDocs holds, compact and naming http://server.test, the golden document and the one generated from
// the shipped definitions.
type shippedDocs struct{ golden, generated []byte }

var (
	shippedOnce sync.Once
	goldenDocs  shippedDocs
	shippedErr  error
)

func shippedDocuments() (shippedDocs, error) {
	shippedOnce.Do(func() {
		goldenDocs.generated, shippedErr = GenerateOpenAPI(DefinitionsDir(), contractServerURL)
		if shippedErr != nil {
			shippedErr = fmt.Errorf("generate the OpenAPI document of the shipped definitions: %w", shippedErr)
			return
		}
		raw, err := os.ReadFile(filepath.Join(RepoDir(), GoldenOpenAPI))
		if err != nil {
			shippedErr = fmt.Errorf("read the golden OpenAPI document (make openapi-golden writes it): %w", err)
			return
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			shippedErr = fmt.Errorf("%s: %w", GoldenOpenAPI, err)
			return
		}
		from, _ := json.Marshal(GoldenServerURL)
		to, _ := json.Marshal(contractServerURL)
		goldenDocs.golden = bytes.Replace(buf.Bytes(), append([]byte(`"url":`), from...), append([]byte(`"url":`), to...), 1)
	})
	return goldenDocs, shippedErr
}
