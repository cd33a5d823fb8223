package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/defset"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// A generation switch in process, on both backends (docs/issue-25.md): Server.Reload (SIGHUP) of a
// directory that gained a field, a rule and a resource serves them from the next request on, while
// concurrent readers and writers — started before, running across it — all succeed (under -race: no
// request sees a half-built generation); a broken directory is refused, reported in /readyz and the
// metric, and the version before is served on. The record written under the old version reads back
// under the new one.
func TestDefinitionsSwitch(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			defs := servertest.CopyDefinitions(t)
			e := servertest.Start(t, b, servertest.Options{DefinitionsDir: defs, Metrics: true})
			_, _, key := e.NewWorkspace("enterprise", "admin", "write")
			call := func(method, path, body string) (int, map[string]any) {
				req, _ := http.NewRequest(method, e.URL+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return 0, nil
				}
				defer res.Body.Close()
				var out map[string]any
				data, _ := io.ReadAll(res.Body)
				_ = json.Unmarshal(data, &out)
				return res.StatusCode, out
			}
			status, before := call("POST", "/v1/tags", `{"name":"before"}`)
			if status != 201 {
				t.Fatalf("create: %d %v", status, before)
			}
			id := before["data"].(map[string]any)["id"].(string)
			oldVersion, _ := e.Server.Generation()

			load := servertest.StartLoad([]string{e.URL}, key, 4, 0)
			time.Sleep(100 * time.Millisecond)
			servertest.EvolveDefinitions(t, defs)
			if err := e.Server.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			newVersion, cat := e.Server.Generation()
			if newVersion == oldVersion {
				t.Fatal("Reload left the version served as it was")
			}
			if _, ok := cat.Resource(servertest.LiveResource); !ok {
				t.Fatalf("the catalog served has no %s", servertest.LiveResource)
			}
			// From the next request on: no wait.
			if status, out := call("GET", "/v1/"+servertest.LiveResource, ""); status != 200 {
				t.Errorf("GET /v1/%s right after the switch: %d %v", servertest.LiveResource, status, out)
			}
			if status, out := call("POST", "/v1/tags", `{"name":"x","`+servertest.LiveField+`":"toolong"}`); status != 422 || !strings.Contains(fmt.Sprint(out), servertest.LiveRuleMessage) {
				t.Errorf("the new rule: %d %v", status, out)
			}
			time.Sleep(100 * time.Millisecond)
			if statuses, failed := load.Stop(); len(failed) > 0 || statuses[200]+statuses[201] == 0 {
				t.Fatalf("%d requests failed across the switch (statuses %v), first: %v", len(failed), statuses, failed[:min(len(failed), 1)])
			}
			if status, out := call("PATCH", "/v1/tags/"+id, `{"`+servertest.LiveField+`":"ok"}`); status != 200 || out["data"].(map[string]any)[servertest.LiveField] != "ok" {
				t.Errorf("the record of before, updated with the new field: %d %v", status, out)
			}

			servertest.BreakDefinitions(t, defs)
			if err := e.Server.Reload(context.Background()); err == nil {
				t.Fatal("Reload of a broken directory succeeded")
			}
			if v, _ := e.Server.Generation(); v != newVersion {
				t.Fatalf("a refused Reload changed the version served")
			}
			e.AwaitReady() // the first generation's schemas and document, compiled in the background
			res, err := http.Get(e.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			var ready struct {
				Status      string
				Definitions struct {
					Version string
					Refused struct{ Error, By string }
				}
			}
			_ = json.NewDecoder(res.Body).Decode(&ready)
			res.Body.Close()
			if res.StatusCode != 200 || ready.Definitions.Version != defset.Short(newVersion) || !strings.Contains(ready.Definitions.Refused.Error, "resources/tags.yaml:") {
				t.Errorf("/readyz after a refusal: %d %+v", res.StatusCode, ready)
			}
			if got := metricValue(t, e, "records_definitions_refused_total"); got != 1 {
				t.Errorf("records_definitions_refused_total = %v, want 1", got)
			}
			if status, _ := call("GET", "/v1/"+servertest.LiveResource, ""); status != 200 {
				t.Errorf("after a refusal GET /v1/%s: %d", servertest.LiveResource, status)
			}
		})
	}
}

// metricValue reads one unlabelled metric of e's server.
func metricValue(t *testing.T, e *servertest.Env, name string) float64 {
	t.Helper()
	families, err := e.Server.Metrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			m := f.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
