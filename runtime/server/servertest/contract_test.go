package servertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// exchange is one request to a test server and its answer, as Env.Do gives them to the contract.
type exchange struct {
	name string
	req  *http.Request
	sent []byte
	res  *http.Response
	body []byte
}

// send makes one request to e with its key and returns the exchange, the answer's body read.
func send(t testing.TB, e *Env, name, method, path string, body any) exchange {
	t.Helper()
	var sent []byte
	var rd io.Reader
	if body != nil {
		var err error
		if sent, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(sent)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+e.Key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return exchange{name: name, req: req, sent: sent, res: res, body: raw}
}

// typicalExchanges makes the answers a behaviour test checks most: a list page of companies, a single
// record, a 404 error envelope and a create (whose request body is checked too).
func typicalExchanges(t testing.TB, e *Env) []exchange {
	t.Helper()
	var created exchange
	for i := range 20 {
		created = send(t, e, "create", "POST", "/v1/companies", map[string]any{
			"name": fmt.Sprintf("Company %d", i), "domain": fmt.Sprintf("c%d.example", i), "industry": "software",
			"lifecycle_stage": "customer", "employee_count": 10 + i, "annual_revenue": 1.5e6, "billing_city": "Berlin",
			"billing_country": "DE", "phone": "+49 30 1234567", "website": "https://c.example",
		})
		if created.res.StatusCode != 201 {
			t.Fatalf("create: %d %s", created.res.StatusCode, created.body)
		}
	}
	var rec struct{ Data struct{ ID string } }
	if err := json.Unmarshal(created.body, &rec); err != nil {
		t.Fatal(err)
	}
	xs := []exchange{
		send(t, e, "list", "GET", "/v1/companies?page_size=20", nil),
		send(t, e, "get", "GET", "/v1/companies/"+rec.Data.ID, nil),
		send(t, e, "404", "GET", "/v1/companies/0190a6d4-0000-7000-8000-000000000001", nil),
		created,
	}
	for _, x := range xs {
		if undocumented, problems := e.Contract().CheckResponse(x.req, x.res, x.body); undocumented || len(problems) > 0 {
			t.Fatalf("%s: undocumented %v, problems %v", x.name, undocumented, problems)
		}
	}
	return xs
}

// BenchmarkContract measures the contract check of typical answers (and of a create's request), alone and
// from several goroutines at once, as parallel tests check theirs.
func BenchmarkContract(b *testing.B) {
	e := Start(b, SQLite, Options{})
	xs := typicalExchanges(b, e)
	c := e.Contract()
	for _, x := range xs {
		b.Run("response/"+x.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.CheckResponse(x.req, x.res, x.body)
			}
		})
	}
	// As Env.Do checks an answer: the body it has decoded already.
	list := xs[0]
	decoded, err := decodeJSON(list.body)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("response/list-decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.checkResponse(list.req, list.res, list.body, decoded)
		}
	})
	create := xs[len(xs)-1]
	b.Run("request/create", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.CheckRequest(create.req, create.sent)
		}
	})
	b.Run("parallel/all", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				for _, x := range xs {
					c.CheckResponse(x.req, x.res, x.body)
				}
				c.CheckRequest(create.req, create.sent)
			}
		})
	})
}

// mutate returns x with its response's status, headers (name, value; an empty value deletes) and body
// replaced.
func (x exchange) mutate(status int, body []byte, header ...string) exchange {
	res := *x.res
	res.Header = x.res.Header.Clone()
	if status != 0 {
		res.StatusCode = status
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			res.Header.Del(header[i])
		} else {
			res.Header.Set(header[i], header[i+1])
		}
	}
	x.res = &res
	if body != nil {
		x.body = body
	}
	return x
}

// edit decodes a JSON object, lets f change it and encodes it again.
func edit(t *testing.T, body []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The contract refuses answers and requests that break the golden document and passes the server's
// own: each kind of break libopenapi-validator caught, and the stricter checks the contract adds.
func TestContractCatches(t *testing.T) {
	t.Parallel()
	e := Start(t, SQLite, Options{})
	xs := typicalExchanges(t, e)
	list, get, notFound, create := xs[0], xs[1], xs[2], xs[3]
	c := e.Contract()
	first := func(body []byte, f func(rec map[string]any)) []byte {
		return edit(t, body, func(m map[string]any) { f(m["data"].([]any)[0].(map[string]any)) })
	}
	data := func(body []byte, f func(rec map[string]any)) []byte {
		return edit(t, body, func(m map[string]any) { f(m["data"].(map[string]any)) })
	}

	for _, tc := range []struct {
		name, want string
		x          exchange
	}{
		{"wrong type in a listed record", "/data/0/name: got number", list.mutate(0, first(list.body, func(r map[string]any) { r["name"] = 42 }))},
		{"wrong type in a record", "/data/employee_count: got string", get.mutate(0, data(get.body, func(r map[string]any) { r["employee_count"] = "many" }))},
		{"missing required member", "missing property 'meta'", list.mutate(0, edit(t, list.body, func(m map[string]any) { delete(m, "meta") }))},
		{"extra member (additionalProps)", "'secret_field' not allowed", get.mutate(0, data(get.body, func(r map[string]any) { r["secret_field"] = "x" }))},
		{"extra member at the top", "'extra' not allowed", list.mutate(0, edit(t, list.body, func(m map[string]any) { m["extra"] = 1 }))},
		{"error code outside its enum", "/error/code: value must be one of", notFound.mutate(0, edit(t, notFound.body, func(m map[string]any) { m["error"].(map[string]any)["code"] = "no_such_code" }))},
		{"bad date-time format", "is not valid date-time", get.mutate(0, data(get.body, func(r map[string]any) { r["created_at"] = "yesterday" }))},
		{"bad uuid format", "/data/id: '42' is not valid uuid", get.mutate(0, data(get.body, func(r map[string]any) { r["id"] = "42" }))},
		{"a JSON null body", "got null, want object", get.mutate(0, []byte("null"))},
		{"not JSON", "not JSON", get.mutate(0, []byte(`{"data":`))},
		{"two JSON values", "data after the JSON value", get.mutate(0, append(bytes.Clone(get.body), "{}"...))},
		{"undocumented status", "status 418 is not documented", notFound.mutate(418, nil)},
		{"undocumented content type", `content type "text/plain" is not documented`, get.mutate(0, nil, "Content-Type", "text/plain")},
		{"no content type", `content type "" is not documented`, get.mutate(0, nil, "Content-Type", "")},
		{"required header missing", "required header X-Request-Id missing", get.mutate(0, nil, "X-Request-Id", "")},
		{"required header not a uuid", "header X-Request-Id of the 200 response: \"not-a-uuid\"", get.mutate(0, nil, "X-Request-Id", "not-a-uuid")},
		{"optional header not an integer", "\"plenty\" is not a valid integer", get.mutate(0, nil, "X-RateLimit-Remaining", "plenty")},
		{"optional header below minimum", "minimum: got -1, want 0", get.mutate(0, nil, "X-RateLimit-Remaining", "-1")},
		{"optional header outside its enum", "value must be 'true'", create.mutate(0, nil, "Idempotent-Replayed", "false")},
		{"required Location missing", "required header Location missing", create.mutate(0, nil, "Location", "")},
	} {
		undocumented, problems := c.CheckResponse(tc.x.req, tc.x.res, tc.x.body)
		if undocumented || !strings.Contains(fmt.Sprint(problems), tc.want) {
			t.Errorf("%s: not caught (undocumented %v, want %q): %v", tc.name, undocumented, tc.want, problems)
		}
	}
	for name, x := range map[string]exchange{
		"the server's list":             list,
		"an optional header documented": create.mutate(0, nil, "Idempotent-Replayed", "true", "X-RateLimit-Remaining", "7"),
		"an undocumented header":        get.mutate(0, nil, "X-Whatever", "x"),
		"content type with a parameter": get.mutate(0, nil, "Content-Type", "application/json; charset=utf-8"),
		"an empty body (as HEAD's)":     get.mutate(0, []byte{}),
		"an error envelope of another 4xx": notFound.mutate(400, edit(t, notFound.body, func(m map[string]any) {
			m["error"].(map[string]any)["code"] = "invalid_request"
			m["error"].(map[string]any)["type"] = "invalid_request_error"
		})),
	} {
		if undocumented, problems := c.CheckResponse(x.req, x.res, x.body); undocumented || len(problems) > 0 {
			t.Errorf("%s: refused (undocumented %v): %v", name, undocumented, problems)
		}
	}
	// A HEAD answer has no body.
	head := get
	head.req = get.req.Clone(get.req.Context())
	head.req.Method = "HEAD"
	if _, problems := c.CheckResponse(head.req, head.res, nil); len(problems) > 0 {
		t.Errorf("HEAD without a body: %v", problems)
	}
	if _, problems := c.CheckResponse(head.req, head.res, get.body); len(problems) == 0 {
		t.Error("HEAD with a body: not caught")
	}

	// Paths and methods the document lacks are undocumented, as are paths it would match only cleaned.
	for _, pm := range [][2]string{{"GET", "/v1/nothing"}, {"PUT", "/v1/companies"}, {"GET", "/v1/companies/"}, {"GET", "/v1//companies"}, {"GET", "/v1/companies/x/y/z/w"}, {"BREW", "/v1/companies"}} {
		req, _ := http.NewRequest(pm[0], e.URL+pm[1], nil)
		if undocumented, _ := c.CheckResponse(req, get.res, get.body); !undocumented {
			t.Errorf("%s %s: documented", pm[0], pm[1])
		}
	}

	// Requests.
	request := func(method, path string, body []byte, header ...string) []string {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequest(method, e.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.Key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(header); i += 2 {
			if header[i+1] == "" {
				req.Header.Del(header[i])
			} else {
				req.Header.Set(header[i], header[i+1])
			}
		}
		return c.CheckRequest(req, body)
	}
	if p := c.CheckRequest(create.req, create.sent); len(p) > 0 {
		t.Errorf("the create sent: %v", p)
	}
	id := get.req.URL.Path[len("/v1/companies/"):]
	good := []byte(`{"name":"Acme","industry":"software","employee_count":5}`)
	for name, p := range map[string][]string{
		"a list":                      request("GET", "/v1/companies?page_size=20&page=2&order=asc&sort=name&include_archived=true&count=exact", nil),
		"a custom field sort":         request("GET", "/v1/companies?sort=cfv:0190a6d4-0000-7000-8000-000000000001", nil),
		"a get":                       request("GET", "/v1/companies/"+id, nil),
		"a create":                    request("POST", "/v1/companies", good),
		"an idempotency key":          request("POST", "/v1/companies", good, "Idempotency-Key", "k-1"),
		"a data model record list":    request("GET", "/v1/data_model_records?model_id=0190a6d4-0000-7000-8000-000000000001", nil),
		"an unknown query parameter":  request("GET", "/v1/companies?whatever=1", nil),
		"a HEAD, GET's parameters":    request("HEAD", "/v1/companies?page_size=5", nil),
		"a probe without credentials": request("GET", "/healthz", nil, "Authorization", ""),
	} {
		if len(p) > 0 {
			t.Errorf("%s: refused: %v", name, p)
		}
	}
	for _, tc := range []struct {
		name, want string
		problems   []string
	}{
		{"body: wrong type", "/name: got number, want string", request("POST", "/v1/companies", []byte(`{"name":42}`))},
		{"body: missing required member", "missing property 'name'", request("POST", "/v1/companies", []byte(`{"industry":"software"}`))},
		{"body: extra member", "'secret' not allowed", request("POST", "/v1/companies", []byte(`{"name":"A","secret":1}`))},
		{"body: value outside an enum", "/industry: value must be one of", request("POST", "/v1/companies", []byte(`{"name":"A","industry":"alchemy"}`))},
		{"body: above maximum", "/employee_count: maximum", request("POST", "/v1/companies", []byte(`{"name":"A","employee_count":1e12}`))},
		{"body: not JSON", "request body: not JSON", request("POST", "/v1/companies", []byte(`{"name":`))},
		{"body: empty but required", "empty, and the body is required", request("POST", "/v1/companies", []byte{})},
		{"body: no content type", "no Content-Type", request("POST", "/v1/companies", good, "Content-Type", "")},
		{"body: undocumented content type", "content type \"text/plain\" is not documented", request("POST", "/v1/companies", good, "Content-Type", "text/plain")},
		{"query: not an integer", "page_size: \"ten\" is not a valid integer", request("GET", "/v1/companies?page_size=ten", nil)},
		{"query: below minimum", "page_size: \"0\" does not match the schema: [/: minimum", request("GET", "/v1/companies?page_size=0", nil)},
		{"query: outside an enum", "order: \"sideways\"", request("GET", "/v1/companies?order=sideways", nil)},
		{"query: not a boolean", "\"maybe\" is not a valid boolean", request("GET", "/v1/companies?include_archived=maybe", nil)},
		{"query: anyOf of enums and pattern", "sort: \"bogus\" does not match", request("GET", "/v1/companies?sort=bogus", nil)},
		{"query: one bad value of two", "order: \"up\"", request("GET", "/v1/companies?order=asc&order=up", nil)},
		{"query: required missing", "required query parameter model_id missing", request("GET", "/v1/data_model_records", nil)},
		{"query: required not a uuid", "model_id: \"7\" does not match the schema: [/: '7' is not valid uuid", request("GET", "/v1/data_model_records?model_id=7", nil)},
		{"path: not a uuid", "path parameter id: \"not-a-uuid\"", request("GET", "/v1/companies/not-a-uuid", nil)},
		{"query: outside an enum ($ref)", "query parameter resource: \"nothing\"", request("GET", "/v1/admin/custom-fields?resource=nothing", nil)},
		{"path: anyOf of an enum and a pattern", "path parameter key: \"nokey\"", request("PUT", "/v1/companies/by/nokey/x", good)},
		{"header: outside its pattern", "Idempotency-Key: \"k\u00e9\" does not match the schema: [/: 'k\u00e9' does not match pattern", request("POST", "/v1/companies", good, "Idempotency-Key", "k\u00e9")},
		{"header: too long", "maxLength: got 256, want 255", request("POST", "/v1/companies", good, "Idempotency-Key", strings.Repeat("k", 256))},
		{"security: no credentials", "no Authorization header", request("GET", "/v1/companies", nil, "Authorization", "")},
		{"security: another scheme", "not of scheme bearer", request("GET", "/v1/companies", nil, "Authorization", "Basic YTpi")},
		{"an undocumented path", "GET Path '/v1/nothing' not found", request("GET", "/v1/nothing", nil)},
	} {
		if !strings.Contains(fmt.Sprint(tc.problems), tc.want) {
			t.Errorf("%s: not caught (want %q): %v", tc.name, tc.want, tc.problems)
		}
	}
}

// A contract built from the golden with one property's type changed (in the record schemas) refuses the server's answers: the
// checks read the document they are given.
func TestContractReadsItsDocument(t *testing.T) {
	t.Parallel()
	e := Start(t, SQLite, Options{})
	xs := typicalExchanges(t, e)
	g, err := shippedDocuments()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(g.golden, &doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"CompaniesRecord", "CompaniesPlain"} {
		doc["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)["properties"].(map[string]any)["name"] = map[string]any{"type": "integer"}
	}
	broken, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newContract(broken)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range xs {
		_, problems := c.CheckResponse(x.req, x.res, x.body)
		if caught := len(problems) > 0; caught != (x.name != "404") {
			t.Errorf("%s: problems %v", x.name, problems)
		}
	}
}

// The features of OpenAPI the golden does not use (yet) are checked as libopenapi-validator checked
// them: a server URL's base path, literal path segments before parameters, path-level parameters, status
// ranges and default, media ranges, apiKey schemes (header or cookie) and alternatives, cookie
// parameters, explode's reserved characters; a parameter the contract cannot check is a problem.
func TestContractFeatures(t *testing.T) {
	t.Parallel()
	c, err := newContract([]byte(`{
	"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
	"servers": [{"url": "http://server.test/api"}],
	"security": [{"key": []}],
	"components": {
		"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Key"}, "session": {"type": "apiKey", "in": "cookie", "name": "sid"}},
		"schemas": {"Thing": {"type": "object", "additionalProperties": false, "required": ["id"], "properties": {"id": {"type": "integer"}}}},
		"parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 10}}}
	},
	"paths": {
		"/things/{id}": {
			"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
			"get": {"responses": {
				"200": {"description": "a thing", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
				"4XX": {"description": "a problem", "content": {"application/problem+json": {"schema": {"type": "object"}}}}}}
		},
		"/things/special": {"get": {
			"security": [],
			"parameters": [{"$ref": "#/components/parameters/Limit"},
				{"name": "tags", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
				{"name": "sid", "in": "cookie", "schema": {"type": "string", "minLength": 3}},
				{"name": "q", "in": "query", "explode": true, "schema": {"type": "string"}}],
			"responses": {"default": {"description": "any", "content": {"application/json": {"schema": {"type": "object", "required": ["ok"]}}}}}
		}},
		"/things": {"post": {
			"security": [{"session": []}, {"key": []}],
			"requestBody": {"required": true, "content": {"application/*": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
			"responses": {"204": {"description": "done"}}
		}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	req := func(method, target string, header ...string) *http.Request {
		r, err := http.NewRequest(method, "http://server.test"+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return r
	}
	res := func(status int, contentType string) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {contentType}}}
	}
	for _, tc := range []struct {
		name      string
		req       *http.Request
		res       *http.Response
		body      string
		undoc, ok bool
	}{
		{"a thing", req("GET", "/api/things/5"), res(200, "application/json"), `{"id":5}`, false, true},
		{"a thing of a wrong type", req("GET", "/api/things/5"), res(200, "application/json"), `{"id":"5"}`, false, false},
		{"a 4XX", req("GET", "/api/things/5"), res(404, "application/problem+json"), `{}`, false, true},
		{"a 4XX of another type", req("GET", "/api/things/5"), res(404, "application/json"), `{}`, false, false},
		{"a 5xx", req("GET", "/api/things/5"), res(500, "application/problem+json"), `{}`, false, false},
		{"the literal before the parameter, default", req("GET", "/api/things/special"), res(299, "application/json"), `{"ok":true}`, false, true},
		{"default's schema", req("GET", "/api/things/special"), res(299, "application/json"), `{}`, false, false},
		{"no such method", req("POST", "/api/things/5"), res(200, "application/json"), `{}`, true, true},
		{"without the base path", req("GET", "/things/5"), res(200, "application/json"), `{"id":5}`, false, true},
		{"no content documented", req("POST", "/api/things"), res(204, ""), ``, false, true},
	} {
		undoc, problems := c.CheckResponse(tc.req, tc.res, []byte(tc.body))
		if undoc != tc.undoc || (len(problems) == 0) != tc.ok {
			t.Errorf("%s: undocumented %v, problems %v", tc.name, undoc, problems)
		}
	}
	thing := []byte(`{"id":1}`)
	for _, tc := range []struct {
		name string
		req  *http.Request
		body []byte
		ok   bool
	}{
		{"a path parameter", req("GET", "/api/things/5", "X-Key", "k"), nil, true},
		{"a path parameter of a wrong type", req("GET", "/api/things/x", "X-Key", "k"), nil, false},
		{"the document's security", req("GET", "/api/things/5"), nil, false},
		{"no security", req("GET", "/api/things/special?limit=10&q=a"), nil, true},
		{"a query parameter ($ref) above maximum", req("GET", "/api/things/special?limit=11"), nil, false},
		{"an array parameter the contract cannot check", req("GET", "/api/things/special?tags=a"), nil, false},
		{"explode's reserved characters", req("GET", "/api/things/special?q=a,b"), nil, false},
		{"a cookie parameter", req("GET", "/api/things/special", "Cookie", "sid=abc"), nil, true},
		{"a cookie parameter too short", req("GET", "/api/things/special", "Cookie", "sid=ab"), nil, false},
		{"a media range, the first scheme", req("POST", "/api/things", "Content-Type", "application/json", "Cookie", "sid=abc"), thing, true},
		{"the second scheme", req("POST", "/api/things", "Content-Type", "application/json", "X-Key", "k"), thing, true},
		{"neither scheme", req("POST", "/api/things", "Content-Type", "application/json"), thing, false},
		{"outside the media range", req("POST", "/api/things", "Content-Type", "text/plain", "X-Key", "k"), thing, false},
		{"a body of a wrong type", req("POST", "/api/things", "Content-Type", "application/json", "X-Key", "k"), []byte(`{"id":true}`), false},
		{"no required body", req("POST", "/api/things", "Content-Type", "application/json", "X-Key", "k"), nil, false},
	} {
		if problems := c.CheckRequest(tc.req, tc.body); (len(problems) == 0) != tc.ok {
			t.Errorf("%s: problems %v", tc.name, problems)
		}
	}
}

// A document whose schemas break JSON Schema has every answer refused, as the compiler refused them.
func TestContractBrokenSchema(t *testing.T) {
	t.Parallel()
	c, err := newContract([]byte(`{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
	"components": {"schemas": {"Bad": {"type": "object", "properties": {"n": {"minimum": "five"}}}}},
	"paths": {"/things": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://server.test/things", nil)
	res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}}
	if _, problems := c.CheckResponse(req, res, []byte(`{}`)); !strings.Contains(fmt.Sprint(problems), "the schema at /components/schemas/Bad is not a JSON Schema") {
		t.Errorf("problems %v", problems)
	}
}

// BenchmarkCheckSchemas measures validating the golden's schemas against the meta-schema: its components
// (once per contract) and all of them.
func BenchmarkCheckSchemas(b *testing.B) {
	g, err := shippedDocuments()
	if err != nil {
		b.Fatal(err)
	}
	doc, err := decodeJSON(g.golden)
	if err != nil {
		b.Fatal(err)
	}
	for name, locations := range map[string][]string{"components": {"components/schemas/*"}, "all": schemaLocations} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := checkSchemas(documentSchemas(doc, locations...)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewContract measures building the golden contract (parsing and indexing the document).
func BenchmarkNewContract(b *testing.B) {
	g, err := shippedDocuments()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := newContract(g.golden); err != nil {
			b.Fatal(err)
		}
	}
}

// Parallel checks of one contract, its schemas compiling meanwhile, are safe (run with -race) and agree.
func TestContractConcurrent(t *testing.T) {
	t.Parallel()
	e := Start(t, SQLite, Options{})
	xs := typicalExchanges(t, e)
	g, err := shippedDocuments()
	if err != nil {
		t.Fatal(err)
	}
	c, err := newContract(g.golden) // fresh: no schema compiled yet
	if err != nil {
		t.Fatal(err)
	}
	bad := xs[1].mutate(0, bytes.Replace(xs[1].body, []byte(`"name":"`), []byte(`"name":7,"x":"`), 1))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				for _, x := range xs {
					if _, problems := c.CheckResponse(x.req, x.res, x.body); len(problems) > 0 {
						t.Errorf("%s: %v", x.name, problems)
					}
				}
				if p := c.CheckRequest(xs[3].req, xs[3].sent); len(p) > 0 {
					t.Errorf("create request: %v", p)
				}
				if _, problems := c.CheckResponse(bad.req, bad.res, bad.body); len(problems) == 0 {
					t.Error("a bad record passed")
				}
			}
		})
	}
	wg.Wait()
}
