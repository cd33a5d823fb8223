package servertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	vcache "github.com/pb33f/libopenapi-validator/cache"
	vconfig "github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"

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

// Contract checks requests and responses against an OpenAPI document with libopenapi-validator.
type Contract struct {
	// mu serialises the validator's calls: they are not safe for concurrent use (rendering a response
	// schema writes libopenapi's cached nodes; the race detector sees it), and one Contract serves
	// every env of the same definitions, parallel tests included.
	mu sync.Mutex
	v  validator.Validator
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
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("parse OpenAPI document: %w", err)
	}
	schemas := &lazySchemas{}
	schemas.building.Store(true)
	v, errs := validator.NewValidator(d, vconfig.WithFormatAssertions(), vconfig.WithSchemaCache(schemas))
	schemas.building.Store(false)
	if len(errs) > 0 {
		return nil, fmt.Errorf("OpenAPI validator: %v", errs)
	}
	c := &Contract{v: v}
	contracts[key] = c
	return c, nil
}

// lazySchemas is the validator's cache of compiled schemas, filled as requests and responses need them.
// The validator's constructor would otherwise render and compile the schema of every request body,
// response and parameter of the document up front (its "warming"): for the shipped definitions, some
// 9 s of processor and gigabytes of heap per contract, most of it for operations a test process never
// calls. While building is set, Load tells the warming that every schema is already there, so it
// compiles none; afterwards the validator compiles each schema at its first use, as it does on any
// cache miss, and keeps it here. What is checked is the same: the same schema, compiled from the same
// rendering, validates the same body.
type lazySchemas struct {
	building atomic.Bool
	m        sync.Map // uint64 -> *vcache.SchemaCacheEntry
}

func (c *lazySchemas) Load(key uint64) (*vcache.SchemaCacheEntry, bool) {
	if c.building.Load() {
		return nil, true
	}
	v, ok := c.m.Load(key)
	if !ok {
		return nil, false
	}
	return v.(*vcache.SchemaCacheEntry), true
}

func (c *lazySchemas) Store(key uint64, value *vcache.SchemaCacheEntry) { c.m.Store(key, value) }

func (c *lazySchemas) Range(f func(key uint64, value *vcache.SchemaCacheEntry) bool) {
	c.m.Range(func(k, v any) bool { return f(k.(uint64), v.(*vcache.SchemaCacheEntry)) })
}

// ValidateDocument validates the document itself against the OpenAPI 3.1 specification.
func (c *Contract) ValidateDocument() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, errs := c.v.ValidateDocument()
	return describe(errs)
}

// CheckRequest validates a request (its body given separately) against the document.
func (c *Contract) CheckRequest(req *http.Request, body []byte) []string {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.mu.Lock()
	defer c.mu.Unlock()
	_, errs := c.v.ValidateHttpRequestSync(r)
	return describe(errs)
}

// Undocumented reports whether errs say the request's path or method is not in the document.
func Undocumented(errs []*verrors.ValidationError) bool {
	for _, e := range errs {
		if e.ValidationType != "path" {
			return false
		}
	}
	return len(errs) > 0
}

// CheckResponse validates a response (its body given separately) to req against the document: its
// status must be documented for the operation, its body must match, and so must its documented headers.
// A request whose path or method the document does not have is undocumented (true, no problems).
//
// A path with a trailing slash or one that is not clean (/v1/, /v1//companies) is undocumented too: the
// validator would match it to the path without, which the server, answering exactly the paths it
// documents, does not (404).
func (c *Contract) CheckResponse(req *http.Request, res *http.Response, body []byte) (undocumented bool, problems []string) {
	if p := req.URL.Path; p != "/" && (strings.HasSuffix(p, "/") || path.Clean(p) != p) {
		return true, nil
	}
	r := *res
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.mu.Lock()
	defer c.mu.Unlock()
	_, errs := c.v.ValidateHttpResponse(req, &r)
	if Undocumented(errs) {
		return true, nil
	}
	return false, describe(errs)
}

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
