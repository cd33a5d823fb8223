package servertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
