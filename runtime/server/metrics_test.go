package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// scrape reads the exposition the metrics handler serves, as Prometheus would.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, res.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

func seriesCount(fams map[string]*dto.MetricFamily, prefix string) int {
	n := 0
	for name, f := range fams {
		if strings.HasPrefix(name, prefix) {
			n += len(f.Metric)
		}
	}
	return n
}

var unboundedValue = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-|wsk_|/`)

// After traffic of every kind, /metrics has the expected series, and every label value comes from a
// bounded set: resource and operation names, status codes, plugin names; never an id, a key or a path.
func TestMetricsAfterTraffic(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel() // each server has its own registry (metrics.New)
			e := servertest.Start(t, b, servertest.Options{Metrics: true})
			ms := httptest.NewServer(e.Server.Metrics().Handler())
			t.Cleanup(ms.Close)

			e.Expect(e.Do("GET", "/v1/companies", nil), 200, "")
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Acme"}), 201, "")
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{}), 422, "validation_failed")
			e.Expect(e.Do("GET", "/v1/companies/0190d2c2-0000-7000-8000-000000000001", nil), 404, "not_found")
			for range 2 {
				e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Once"}, "Idempotency-Key", "metrics-once"), 201, "")
			}
			pipeline := e.Do("POST", "/v1/pipelines", map[string]any{"name": "Sales"}).Data()["id"]
			stage := e.Do("POST", "/v1/pipeline_stages", map[string]any{"pipeline_id": pipeline, "name": "Qualified", "stage_type": "open", "probability": 30}).Data()["id"]
			e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": "Renewal", "pipeline_id": pipeline, "stage_id": stage}), 201, "")
			// A key allowed one request a minute: the second is refused.
			ws, member, _ := e.NewWorkspace("growth", "admin", "read")
			one := int64(1)
			if err := e.Server.Backend().Members.SetLimits(context.Background(), ws, auth.Limits{KeyPerMinute: &one}); err != nil {
				t.Fatal(err)
			}
			limited := e.NewKey(member, auth.KeyOptions{Access: "read"})
			e.Expect(e.DoKey(limited, "GET", "/v1/companies", nil), 200, "")
			e.Expect(e.DoKey(limited, "GET", "/v1/companies", nil), 429, "rate_limited")
			e.Expect(e.DoKey("", "GET", "/v1/companies", nil), 401, "invalid_api_key")

			fams := scrape(t, ms.URL)
			for _, c := range []struct {
				name   string
				labels map[string]string
				min    float64
			}{
				{"records_http_requests_total", map[string]string{"resource": "companies", "operation": "list", "status": "200"}, 2},
				{"records_http_requests_total", map[string]string{"resource": "companies", "operation": "create", "status": "201"}, 3},
				{"records_http_requests_total", map[string]string{"resource": "companies", "operation": "create", "status": "422"}, 1},
				{"records_http_requests_total", map[string]string{"resource": "companies", "operation": "get", "status": "404"}, 1},
				{"records_http_requests_total", map[string]string{"resource": "companies", "operation": "list", "status": "429"}, 1},
				{"records_http_requests_total", map[string]string{"resource": "companies", "operation": "list", "status": "401"}, 1},
				{"records_http_request_duration_seconds", map[string]string{"resource": "companies", "operation": "create"}, 4},
				{"records_rate_limited_total", map[string]string{}, 1},
				{"records_idempotent_replays_total", map[string]string{"resource": "companies"}, 1},
				{"records_plugin_calls_total", map[string]string{"plugin": "deal-rules", "hook": "before", "outcome": "ok"}, 1},
				{"records_plugin_starts_total", map[string]string{"plugin": "deal-rules", "reason": "start"}, 1},
				{"records_db_pool_connections", map[string]string{"state": "total"}, 1},
				{"records_db_pool_acquires_total", map[string]string{}, 0},
				{"records_http_requests_in_flight", map[string]string{}, 0},
				{"go_goroutines", map[string]string{}, 1},
			} {
				v, ok := servertest.MetricValue(fams, c.name, c.labels)
				if !ok || v < c.min {
					t.Errorf("%s%v = %v (present %v), want ≥ %v", c.name, c.labels, v, ok, c.min)
				}
			}
			if v, _ := servertest.MetricValue(fams, "records_idempotent_replays_total", map[string]string{"resource": "companies"}); v != 1 {
				t.Errorf("replays = %v, want exactly 1", v)
			}

			resources := map[string]bool{"-": true}
			for _, r := range e.Server.Backend().Current().Catalog.Resources {
				resources[r.Name] = true
			}
			before := seriesCount(fams, "records_")
			// Many distinct ids, paths and keys: no new series beyond the few new (route, status) pairs.
			for i := range 40 {
				id := fmt.Sprintf("0190d2c2-0000-7000-8000-%012d", i)
				e.Expect(e.Do("GET", "/v1/companies/"+id, nil), 404, "not_found")
				e.Expect(e.Do("GET", "/v1/nothing_here_"+fmt.Sprint(i)+"/"+id, nil), 404, "unknown_resource")
				e.Expect(e.DoKey(fmt.Sprintf("wsk_%064d", i), "GET", "/v1/companies", nil), 401, "invalid_api_key")
			}
			fams = scrape(t, ms.URL)
			if after := seriesCount(fams, "records_"); after > before+8 {
				t.Errorf("120 requests with distinct ids, paths and keys added %d series (%d → %d)", after-before, before, after)
			}
			for name, f := range fams {
				if !strings.HasPrefix(name, "records_") {
					continue
				}
				for _, m := range f.Metric {
					for _, l := range m.Label {
						if unboundedValue.MatchString(l.GetValue()) {
							t.Errorf("%s has an unbounded label %s=%q", name, l.GetName(), l.GetValue())
						}
						if l.GetName() == "resource" && !resources[l.GetValue()] {
							t.Errorf("%s has resource=%q, not a resource of the definitions", name, l.GetValue())
						}
					}
				}
			}
		})
	}
}
