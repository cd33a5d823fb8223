package cluster_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// Two replicas on one PostgreSQL database (docs/issue-25.md): `recordsctl definitions apply` of a set
// that adds a resource, a field and a rule is served by both within 2 s, by the same processes, with the
// OpenAPI document and the catalogs updated, while a load loop through both sees no failed request; a
// broken set is refused by recordsctl with its file and line and both replicas serve on what they
// served.
func TestLiveDefinitions(t *testing.T) {
	t.Parallel() // its replicas, database, Redis keys and ports are its own
	if testing.Short() {
		t.Skip("starts two recordsd processes; not in -short")
	}
	c := startCluster(t, 2)
	tn := c.newTenant(t, "live definitions")
	pids := []int{c.replicas[0].Pid(), c.replicas[1].Pid()}
	version := func(i int) string {
		var body struct{ Definitions struct{ Version string } }
		c.getJSON(t, i, "", "/readyz", &body)
		return body.Definitions.Version
	}
	before := version(0)
	if before == "" || version(1) != before {
		t.Fatalf("replicas serve versions %q and %q before the change", before, version(1))
	}

	// The load loop: reads and creates of tags through both replicas.
	load := servertest.StartLoad([]string{c.replicas[0].url(), c.replicas[1].url()}, tn.key, 4, 0)
	time.Sleep(300 * time.Millisecond)

	defs := servertest.CopyDefinitions(t)
	servertest.EvolveDefinitions(t, defs)
	applied := time.Now()
	out, err := c.ctl.run("definitions", "apply", defs)
	if err != nil || out["applied"] != true {
		t.Fatalf("definitions apply: %v %v", out, err)
	}
	t.Logf("recordsctl definitions apply took %v", time.Since(applied).Round(time.Millisecond))
	applied = time.Now() // committed: the replicas have 2 s from here (propagationBound)
	hasField := func(i int) bool {
		var body map[string]any
		c.getJSON(t, i, tn.key, "/v1/resources/tags", &body)
		data, _ := json.Marshal(body["data"])
		return strings.Contains(string(data), `"`+servertest.LiveField+`"`)
	}
	d := c.waitAll(applied, propagationBound, hasField)
	t.Logf("the new field served after %s", checkDelays(t, "new field", d, propagationBound))
	time.Sleep(300 * time.Millisecond)
	statuses, failures := load.Stop()
	t.Logf("load loop across the switch: %v", statuses)
	if len(failures) > 0 || statuses[200]+statuses[201] == 0 {
		t.Errorf("requests failed across the switch: %v", failures[:min(len(failures), 10)])
	}
	after := version(0)
	for i, r := range c.replicas {
		if r.Pid() != pids[i] {
			t.Errorf("replica %d was restarted: pid %d, then %d", i, pids[i], r.Pid())
		}
		if v := version(i); v == before || v != after {
			t.Errorf("replica %d serves version %s (before %s, replica 0 %s)", i, v, before, after)
		}
		if status, _, err := c.raw(i, tn.key, "POST", "/v1/"+servertest.LiveResource, `{"name":"gold"}`); status != 201 {
			t.Errorf("replica %d: POST /v1/%s: %d %v", i, servertest.LiveResource, status, err)
		}
		// The new rule, with a schema error in the same body: one 422 naming both.
		status, body, err := c.raw(i, tn.key, "POST", "/v1/tags", `{"name":"r","position":-1,"`+servertest.LiveField+`":"toolong"}`)
		if status != 422 || !strings.Contains(body, servertest.LiveRuleMessage) || !strings.Contains(body, `"field":"position"`) {
			t.Errorf("replica %d: a tag breaking the new rule and the schema: %d %s %v", i, status, body, err)
		}
		if status, body, _ := c.raw(i, tn.key, "POST", "/v1/tags", `{"name":"ok","`+servertest.LiveField+`":"ok"}`); status != 201 {
			t.Errorf("replica %d: a tag keeping the new rule: %d %s", i, status, body)
		}
		var doc struct{ Paths map[string]any }
		c.getJSON(t, i, "", "/v1/openapi.json", &doc)
		if doc.Paths["/v1/"+servertest.LiveResource] == nil {
			t.Errorf("replica %d: the OpenAPI document has no /v1/%s", i, servertest.LiveResource)
		}
		var list struct{ Data []struct{ Name string } }
		c.getJSON(t, i, tn.key, "/v1/resources", &list)
		found := false
		for _, r := range list.Data {
			found = found || r.Name == servertest.LiveResource
		}
		if !found {
			t.Errorf("replica %d: GET /v1/resources does not list %s", i, servertest.LiveResource)
		}
	}

	// A broken set: refused whole by recordsctl, pointing at the file and line; nothing changes.
	line := servertest.BreakDefinitions(t, defs)
	cmd := exec.Command(filepath.Join(binDir, "recordsctl"), "--db", c.db, "definitions", "apply", defs)
	msg, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 {
		t.Errorf("apply of a broken set: exit %d, want 1\n%s", code, msg)
	}
	if !strings.Contains(string(msg), fmt.Sprintf("resources/tags.yaml:%d:", line)) {
		t.Errorf("the refusal does not point at resources/tags.yaml:%d:\n%s", line, msg)
	}
	time.Sleep(1500 * time.Millisecond) // longer than a replica's poll
	for i := range c.replicas {
		if v := version(i); v != after {
			t.Errorf("replica %d serves %s after a refused apply, want %s", i, v, after)
		}
		if !hasField(i) {
			t.Errorf("replica %d no longer serves the applied field", i)
		}
	}
}

// raw sends one request to replica i without the contract check (the new resource is not in the
// committed document) and returns its status and body.
func (c *cluster) raw(i int, key, method, path, body string) (int, string, error) {
	req, err := http.NewRequest(method, c.replicas[i].url()+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res.StatusCode, string(data), err
}

// getJSON reads path from replica i and decodes it into v.
func (c *cluster) getJSON(t testing.TB, i int, key, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest("GET", c.replicas[i].url()+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("replica %d: GET %s: %v", i, path, err)
	}
}
