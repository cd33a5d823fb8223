package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// fuzzEnv starts the server the HTTP fuzz targets share within one fuzz process: SQLite, the shipped
// definitions and plugins, no monthly quota to run out of, and records of every kind a path can name —
// a company, a deal (through the deal-rules plugin), a custom field and a data model with a record.
func fuzzEnv(f *testing.F) (e *servertest.Env, ids map[string]string) {
	e = servertest.Start(f, servertest.SQLite, servertest.Options{})
	ctx := context.Background()
	lifted := int64(1_000_000_000_000)
	if err := e.Server.Backend().Members.SetLimits(ctx, e.Workspace, auth.Limits{MonthlyQuota: &lifted}); err != nil {
		f.Fatal(err)
	}
	ids = map[string]string{}
	created := func(path string, body map[string]any) string {
		res := e.Do("POST", path, body)
		id, ok := res.Data()["id"].(string)
		if res.Status != 201 || !ok {
			f.Fatalf("POST %s: %d %s", path, res.Status, res.Raw)
		}
		return id
	}
	ids["company"] = created("/v1/companies", map[string]any{"name": "Fuzz Co", "employee_count": 12})
	ids["deal"] = created("/v1/deals", map[string]any{"name": "Fuzz deal", "amount": 100.5, "currency": "EUR"})
	d, err := e.Server.Backend().Current().Custom.Create(ctx, e.Workspace, customfields.Def{Resource: "companies", Key: "tier", Type: "integer"})
	if err != nil {
		f.Fatal(err)
	}
	ids["field"] = d.FilterKey()
	m, err := e.Server.Backend().Current().Custom.CreateModel(ctx, e.Workspace, "Vendors", map[string]customfields.ModelField{"employees": {Type: "integer"}})
	if err != nil {
		f.Fatal(err)
	}
	ids["model"] = m
	ids["record"] = created("/v1/data_model_records?model_id="+m, map[string]any{"name": "Fuzz vendor", "cf__employees": 3})
	e.Contract() // fetched once; every copy of e shares it
	return e, ids
}

// fuzzHeaders are the request headers FuzzHTTP may set to a fuzzed value, by index.
var fuzzHeaders = []string{"", "Authorization", "Idempotency-Key", "X-Forwarded-For", "Content-Type", "Accept-Encoding", "If-Match"}

// FuzzHTTP sends fuzzed requests — method, path, raw query, body and one header — through a real
// listener to recordsd's handler on SQLite, with a valid write key. Every answer must keep the
// contract: never a 5xx other than 503 service_unavailable (so never a panic), the error envelope with
// a request id equal to X-Request-Id on every error, WWW-Authenticate on 401, Allow on 405, no CORS
// header, a response the served OpenAPI document describes, and a request it accepted (2xx) that the
// document allows (servertest.Env.Do checks all of these). A query string that is not well-formed
// (url.ParseQuery refuses it) is never accepted on a resource route.
func FuzzHTTP(f *testing.F) {
	e, ids := fuzzEnv(f)
	company, deal, rec, model, cf := ids["company"], ids["deal"], ids["record"], ids["model"], ids["field"]
	seeds := []struct {
		method, path, query, body string
		header                    uint8
		value                     string
	}{
		{"GET", "/v1", "", "", 0, ""},
		{"GET", "/v1/me", "", "", 0, ""},
		{"GET", "/v1/resources/companies", "", "", 0, ""},
		{"GET", "/v1/resources/data_model_records", "model_id=" + model, "", 0, ""},
		{"GET", "/v1/companies", "page_size=2&sort=name&order=asc&fields=name,industry", "", 0, ""},
		{"GET", "/v1/companies", "filter=" + url.QueryEscape(`[{"field":"`+cf+`","op":"gte","value":1}]`), "", 0, ""},
		{"GET", "/v1/companies", "page_size=%zz", "", 0, ""},
		{"GET", "/v1/companies", "filter=%", "", 0, ""},
		{"GET", "/v1/companies", "a;b=1", "", 0, ""},
		{"GET", "/v1/companies", "cursor=start&search=fuzz", "", 0, ""},
		{"GET", "/v1/deals", "filter=" + url.QueryEscape(`[{"field":"amount","op":"in","value":[1e-999999,1e9999999]}]`), "", 0, ""},
		{"POST", "/v1/deals/query", "", `{"filters":[{"field":"amount","op":"gt","value":1e-999999}],"page_size":5}`, 0, ""},
		{"POST", "/v1/companies/query", "", `{"fields":["name"],"cursor":"start","sort":"` + cf + `"}`, 0, ""},
		{"GET", "/v1/companies/" + company, "fields=name", "", 0, ""},
		{"GET", "/v1/companies/" + strings.ToUpper(company), "", "", 0, ""},
		{"GET", "/v1/companies/not-a-uuid", "", "", 0, ""},
		{"GET", "/v1/companies/" + company + "/tags", "", "", 0, ""},
		{"POST", "/v1/companies", "", `{"name":"Fuzz","employee_count":1e9999999}`, 0, ""},
		{"POST", "/v1/companies", "", `{"name":"Fuzz","cf__tier":1e-999999}`, 0, ""},
		{"POST", "/v1/companies", "", `{"name":"Fuzz","name":"Twice"}`, 0, ""},
		{"POST", "/v1/companies", "", `{"name":"Fuzz"}`, 2, "fuzz-key-1"},
		{"POST", "/v1/companies", "", `{"name":"Fuzz"}`, 4, "text/plain"},
		{"POST", "/v1/companies", "", `[]`, 0, ""},
		{"POST", "/v1/companies", "", `{"name":"Fuzz"}`, 1, "Bearer wsk_" + strings.Repeat("0", 64)},
		{"POST", "/v1/companies", "", `{"name":"Fuzz"}`, 1, "Basic Zm9vOmJhcg=="},
		{"PATCH", "/v1/companies/" + company, "", `{"employee_count":13}`, 2, "fuzz-key-2"},
		{"PATCH", "/v1/deals/" + deal, "", `{"probability":101}`, 0, ""},
		{"DELETE", "/v1/companies/" + company, "", `{"reason":"fuzz"}`, 0, ""},
		{"POST", "/v1/companies/" + company + "/restore", "", "", 0, ""},
		{"POST", "/v1/automations", "", `{}`, 0, ""},
		{"PUT", "/v1/deals/" + deal + "/companies/" + company, "", `{}`, 0, ""},
		{"DELETE", "/v1/deals/" + deal + "/companies/" + company, "", "", 0, ""},
		{"GET", "/v1/data_model_records/" + rec, "model_id=" + model, "", 0, ""},
		{"GET", "/v1/companies/" + company + "/history", "page_size=1", "", 0, ""},
		{"GET", "/v1/deals/" + deal + "/history", "cursor=start&page_size=101", "", 0, ""},
		{"GET", "/v1/data_model_records/" + rec + "/history", "model_id=" + model, "", 0, ""},
		{"POST", "/v1/companies/" + company + "/history", "", `{}`, 0, ""},
		{"POST", "/v1/data_model_records", "", `{"name":"x","model_id":"` + model + `","cf__employees":"many"}`, 0, ""},
		{"OPTIONS", "/v1/companies", "", "", 0, ""},
		{"GET", "/v1/companies/", "", "", 0, ""},
		{"GET", "/v1//companies", "", "", 0, ""},
		{"GET", "/v1/%63ompanies", "", "", 0, ""},
		{"GET", "/v1/companies/..%2f..%2fme", "", "", 0, ""},
		{"GET", "/v1/me", "", "", 3, "1.2.3.4"},
		{"GET", "/v1/companies", "", "", 5, "gzip;q=0, br"},
		{"PATCH", "/v1/companies/" + company, "", `{"name":"x"}`, 6, `"etag"`},
		{"GET", "/v2/companies", "", "", 0, ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, []byte(s.body), s.header, s.value)
	}
	f.Fuzz(func(t *testing.T, method, path, query string, body []byte, header uint8, value string) {
		if method == "HEAD" || method == "CONNECT" || !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "/docs") ||
			strings.HasPrefix(path, "/console") || path == "/healthz" || path == "/readyz" {
			// Answers without a JSON body (HEAD, the /docs page, the console), not a request to the API (CONNECT), or
			// the probes, which are not part of the API's contract (docs/operations.md).
			return
		}
		target := path
		if query != "" {
			target += "?" + query
		}
		req, err := http.NewRequest(method, e.URL+target, nil)
		if err != nil || strings.ContainsFunc(req.URL.RawQuery, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '#' }) {
			return // not a request a client can send
		}
		var hdr []string
		if name := fuzzHeaders[int(header)%len(fuzzHeaders)]; name != "" {
			if !validHeaderValue(value) {
				return
			}
			hdr = []string{name, value}
		}
		te := *e
		te.T = t
		var b any
		if len(body) > 0 {
			b = body
		}
		res := te.DoKey(e.Key, method, req.URL.RequestURI(), b, hdr...)
		if _, err := url.ParseQuery(req.URL.RawQuery); err != nil && res.Status < 300 && onResource(req.URL.Path) {
			t.Errorf("%s %s: a malformed query string was accepted (%d)", method, req.URL.RequestURI(), res.Status)
		}
	})
}

// FuzzAuthorization sends GET /v1/me with a fuzzed Authorization header. Only a header carrying the
// key itself may authenticate, "Bearer <key>" always does (the scheme in any case), and every other
// value is 401 invalid_api_key with WWW-Authenticate (Env.Do checks the envelope and the header).
func FuzzAuthorization(f *testing.F) {
	e, _ := fuzzEnv(f)
	key := e.Key
	for _, s := range []string{"Bearer " + key, "bearer " + key, "BEARER  " + key + " ", "Bearer\t" + key, "Bearer " + strings.ToUpper(key),
		"Bearer " + key[:len(key)-1], "Bearer " + key + "0", "Basic " + key, key, "Bearer", "Bearer ", "", "Bearer wsk_" + strings.Repeat("g", 64),
		"Bearer " + strings.Replace(key, "wsk_", "wsk-", 1), "Bearer " + key + "\x00", "Token " + key} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		if !validHeaderValue(value) {
			return
		}
		te := *e
		te.T = t
		res := te.DoKey("", "GET", "/v1/me", nil, "Authorization", value)
		sent := strings.Trim(value, " \t") // as the server reads a header line
		scheme, rest, _ := strings.Cut(sent, " ")
		switch {
		case strings.EqualFold(scheme, "Bearer") && strings.Trim(rest, " \t") == key:
			if res.Status != 200 {
				t.Errorf("Authorization %q: %d, want 200", value, res.Status)
			}
		case !strings.Contains(sent, key):
			te.Expect(res, 401, "invalid_api_key")
		case res.Status != 200:
			te.Expect(res, 401, "invalid_api_key")
		}
	})
}

// validHeaderValue reports whether a client can send v as a header value (no control characters but
// horizontal tab), as net/http checks before sending.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// onResource reports whether path is a route that reads its query: a resource's (/v1/{resource}…) or
// a catalog's (/v1/resources…).
func onResource(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v1/")
	if !ok {
		return false
	}
	name, _, _ := strings.Cut(rest, "/")
	return name != "" && name != "me" && name != "openapi.json"
}
