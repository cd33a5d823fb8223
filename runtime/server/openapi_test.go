package server_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/server/servertest"
)

func getDoc(t *testing.T, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/v1/openapi.json", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, body
}

// The served document is valid OpenAPI 3.1 (libopenapi-validator), complete for the definitions, served
// with an ETag, and the same byte for byte from two servers of the same configuration.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	const public = "https://records.example.com"
	a := servertest.Start(t, servertest.SQLite, servertest.Options{PublicURL: public})
	b := servertest.Start(t, servertest.SQLite, servertest.Options{PublicURL: public})
	resA, docA := getDoc(t, a.URL)
	resB, docB := getDoc(t, b.URL)
	if resA.StatusCode != 200 || resA.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json: %d %s", resA.StatusCode, resA.Header.Get("Content-Type"))
	}
	if !bytes.Equal(docA, docB) || resA.Header.Get("ETag") == "" || resA.Header.Get("ETag") != resB.Header.Get("ETag") {
		t.Errorf("two servers of one configuration serve different documents (ETags %s, %s)", resA.Header.Get("ETag"), resB.Header.Get("ETag"))
	}
	if res, body := getDoc(t, a.URL, "If-None-Match", resA.Header.Get("ETag")); res.StatusCode != 304 || len(body) != 0 {
		t.Errorf("If-None-Match with the ETag: %d, %d bytes", res.StatusCode, len(body))
	}
	if res, _ := getDoc(t, a.URL, "If-None-Match", `"other"`); res.StatusCode != 200 {
		t.Errorf("If-None-Match with another tag: %d", res.StatusCode)
	}
	// Asked explicitly, the transport leaves the gzip encoding to us: the same document, smaller.
	if res, body := getDoc(t, a.URL, "Accept-Encoding", "gzip"); res.Header.Get("Content-Encoding") != "gzip" || len(body) > len(docA)/4 {
		t.Errorf("gzip: encoding %q, %d of %d bytes", res.Header.Get("Content-Encoding"), len(body), len(docA))
	} else if zr, err := gzip.NewReader(bytes.NewReader(body)); err != nil {
		t.Error(err)
	} else if plain, _ := io.ReadAll(zr); !bytes.Equal(plain, docA) {
		t.Errorf("gzip: the decoded document differs")
	} else if id, _ := getDoc(t, a.URL, "Accept-Encoding", "identity"); id.Header.Get("Content-Encoding") != "" || id.Header.Get("ETag") == res.Header.Get("ETag") {
		t.Errorf("identity: encoding %q, ETag %s shared with gzip", id.Header.Get("Content-Encoding"), id.Header.Get("ETag"))
	}
	if got := a.DoKey("", "GET", "/v1", nil).Body["openapi_url"]; got != public+"/v1/openapi.json" {
		t.Errorf("openapi_url %v", got)
	}

	// recordsctl openapi prints the same bytes: the recordsctl make test built from the working tree
	// (servertest.BinEnv), or else built here by go run.
	args := []string{"--definitions", servertest.DefinitionsDir(), "openapi", "--server-url", public}
	cmd := exec.Command("go", append([]string{"run", "./cmd/recordsctl"}, args...)...)
	if dir := os.Getenv(servertest.BinEnv); dir != "" {
		cmd = exec.Command(filepath.Join(dir, "recordsctl"), args...)
	}
	cmd.Dir = servertest.RepoDir()
	printed, err := cmd.Output()
	if err != nil {
		t.Fatalf("recordsctl openapi: %v", err)
	}
	if !bytes.Equal(bytes.TrimSpace(printed), docA) {
		t.Errorf("recordsctl openapi differs from the served document")
	}

	if problems := a.Contract().ValidateDocument(); len(problems) > 0 {
		t.Errorf("the document breaks the OpenAPI 3.1 specification:\n%s", strings.Join(problems, "\n"))
	}

	var doc struct {
		OpenAPI    string `json:"openapi"`
		Info       struct{ Title, Version string }
		Servers    []struct{ URL string }
		Tags       []tagDoc
		Paths      map[string]map[string]json.RawMessage // operations by method, and a path's description
		Components struct {
			Headers         map[string]any
			SecuritySchemes map[string]struct{ Type, Scheme string }
			Schemas         map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(docA, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "v1" || len(doc.Servers) != 1 || doc.Servers[0].URL != public {
		t.Errorf("openapi %q, info %+v, servers %+v", doc.OpenAPI, doc.Info, doc.Servers)
	}
	if s := doc.Components.SecuritySchemes["bearerAuth"]; s.Type != "http" || s.Scheme != "bearer" {
		t.Errorf("security scheme %+v", s)
	}
	for _, h := range []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-Quota-Limit",
		"X-Quota-Remaining", "X-Quota-Reset", "Location", "Idempotent-Replayed", "Retry-After", "Allow", "WWW-Authenticate"} {
		if doc.Components.Headers[h] == nil {
			t.Errorf("header %s not described", h)
		}
	}
	cat := a.Server.Backend().Current().Catalog
	if len(cat.Resources) != 44 {
		t.Errorf("%d resources", len(cat.Resources))
	}
	for _, r := range cat.Resources {
		for _, c := range []struct {
			op     model.Operation
			path   string
			method string
		}{
			{model.OpList, "/v1/" + r.Name, "get"}, {model.OpCreate, "/v1/" + r.Name, "post"}, {model.OpQuery, "/v1/" + r.Name + "/query", "post"},
			{model.OpGet, "/v1/" + r.Name + "/{id}", "get"}, {model.OpUpdate, "/v1/" + r.Name + "/{id}", "patch"},
			{model.OpArchive, "/v1/" + r.Name + "/{id}", "delete"}, {model.OpRestore, "/v1/" + r.Name + "/{id}/restore", "post"},
		} {
			raw, ok := doc.Paths[c.path][c.method]
			var op struct {
				Responses map[string]map[string]any `json:"responses"`
			}
			json.Unmarshal(raw, &op)
			if !r.Ops.Has(c.op) {
				// A refusal is no callable operation: the resource's tag lists it.
				if ok {
					t.Errorf("%s %s is refused but documented as an operation", c.method, c.path)
				}
				if !refusedIn(doc.Tags, r.Name, strings.ToUpper(c.method), c.path) {
					t.Errorf("%s %s: the refusal is not in the %s tag's x-refused-operations", c.method, c.path, r.Name)
				}
				continue
			}
			if !ok {
				t.Errorf("%s %s missing", c.method, c.path)
				continue
			}
			var codes []string
			for code := range op.Responses {
				codes = append(codes, code)
			}
			slices.Sort(codes)
			if !slices.ContainsFunc(codes, func(s string) bool { return s[0] == '2' }) {
				t.Errorf("%s %s: no success response (%v)", c.method, c.path, codes)
			}
		}
		for _, suffix := range []string{"Record"} {
			if doc.Components.Schemas[catalog.SchemaName(r)+suffix] == nil {
				t.Errorf("schema %s%s missing", catalog.SchemaName(r), suffix)
			}
		}
	}
	// The envelope's error member (ErrorBody) and a batch item's (ItemError) list every code and type.
	for _, name := range []string{"ErrorBody", "ItemError"} {
		var errSchema struct {
			Properties struct{ Type, Code struct{ Enum []string } }
		}
		json.Unmarshal(doc.Components.Schemas[name], &errSchema)
		if !slices.Equal(errSchema.Properties.Code.Enum, catalog.ErrorCodes) || len(errSchema.Properties.Type.Enum) != 8 {
			t.Errorf("%s enums: %+v", name, errSchema.Properties)
		}
	}
}

// The contract check the behaviour suite runs on every exchange catches a response that drifts from the
// document: a wrong type, an undeclared member, an undocumented status, a missing required header.
func TestContractCatchesDrift(t *testing.T) {
	t.Parallel()
	e := servertest.Start(t, servertest.SQLite, servertest.Options{})
	c := e.Contract()
	id := e.Do("POST", "/v1/companies", map[string]any{"name": "Drift"}).Data()["id"].(string)
	req, _ := http.NewRequest("GET", e.URL+"/v1/companies/"+id, nil)
	respond := func(status int, body string, header ...string) []string {
		h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"0190a6d4-0000-7000-8000-000000000001"}}
		for i := 0; i+1 < len(header); i += 2 {
			h.Set(header[i], header[i+1])
		}
		res := &http.Response{StatusCode: status, Header: h, Request: req}
		_, problems := c.CheckResponse(req, res, []byte(body))
		return problems
	}
	if p := respond(200, `{"data":{"id":"`+id+`","name":"Drift","employee_count":12}}`); len(p) > 0 {
		t.Errorf("a valid response is refused: %v", p)
	}
	for name, body := range map[string]string{
		"wrong type":       `{"data":{"id":"` + id + `","name":42}}`,
		"undeclared field": `{"data":{"id":"` + id + `","secret_field":"x"}}`,
		"no envelope":      `{"id":"` + id + `"}`,
	} {
		if p := respond(200, body); len(p) == 0 {
			t.Errorf("%s: not caught", name)
		}
	}
	if p := respond(418, `{"error":{"type":"api_error","code":"internal_error","message":"x","request_id":"0190a6d4-0000-7000-8000-000000000001"}}`); len(p) == 0 {
		t.Errorf("an undocumented status is not caught")
	}
	if p := respond(404, `{"error":{"type":"not_found_error","code":"no_such_code","message":"x","request_id":"0190a6d4-0000-7000-8000-000000000001"}}`); len(p) == 0 {
		t.Errorf("an error code outside the enum is not caught")
	}
	if p := respond(200, `{"data":{"id":"`+id+`"}}`, "X-Request-Id", ""); len(p) == 0 {
		t.Errorf("a missing X-Request-Id is not caught")
	}
}

type tagDoc struct {
	Name    string `json:"name"`
	Refused []struct {
		Method, Path, Allow string
		Status              int
	} `json:"x-refused-operations"`
}

// refusedIn reports whether the tag of resource lists method on path as refused with 405.
func refusedIn(tags []tagDoc, resource, method, path string) bool {
	for _, t := range tags {
		if t.Name != resource {
			continue
		}
		for _, r := range t.Refused {
			if r.Method == method && r.Path == path && r.Status == 405 {
				return true
			}
		}
	}
	return false
}
