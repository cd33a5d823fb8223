//go:build recordstest_unscoped

// These tests run only in a test binary built with -tags recordstest_unscoped (make test runs them:
// go test -tags recordstest_unscoped -run '^TestUnscoped' ./runtime/server/unscoped/). In that build
// every statement engine/sqlgen writes lacks its workspace_id predicate (engine/sqlgen/scope.go), so
// PostgreSQL's row-level security is the only thing between workspaces (T5). SQLite has no row-level
// security: without the predicate it has no guard but the row check of runtime/records, so these
// tests run on PostgreSQL only, and no other behaviour test may run in this build: this package holds
// these alone, and shares the suites it runs with runtime/server through servertest/tenancy.
package unscoped_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/server/servertest/tenancy"
)

// requireUnscoped fails unless this binary's statements really lack the workspace predicate.
func requireUnscoped(t *testing.T, e *servertest.Env) {
	t.Helper()
	r, _ := e.Server.Backend().Current().Catalog.Resource("companies")
	for _, d := range []sqlgen.Dialect{sqlgen.New(sqlgen.Postgres), sqlgen.New(sqlgen.SQLite)} {
		s := d.Get(r, sqlgen.Key{Workspace: "0190a6d4-0000-7000-8000-00000000000a", ID: "0190a6d4-0000-7000-8000-00000000000b"})
		if strings.Contains(s.SQL, `"workspace_id" =`) || len(s.Args) != 1 {
			t.Fatalf("built without the recordstest_unscoped hook: %s %v", s.SQL, s.Args)
		}
	}
}

// TestUnscopedRowSecurity (T5) runs on PostgreSQL, over a pool of two connections, with the workspace
// predicate gone:
//   - matrix: the whole BOLA matrix of TestIsolationMatrix: B still cannot read, list, update, archive,
//     restore, link or reference A's rows;
//   - pool_leak: the interleaved two-workspace traffic of TestPoolWorkspaceLeak: each session's
//     workspace setting alone keeps every answer to its own workspace;
//   - control: row-level security is taken off one table (NO FORCE: the server's role owns it), and
//     the same requests on that table stop being refused. So the checks above pass because of
//     row-level security and would catch its loss.
func TestUnscopedRowSecurity(t *testing.T) {
	e := tenancy.StartSmallPool(t)
	requireUnscoped(t, e)
	t.Run("matrix", func(t *testing.T) { tenancy.IsolationMatrix(t, e) })
	t.Run("pool_leak", func(t *testing.T) { tenancy.PoolLeak(t, e, 1000) })
	t.Run("control", func(t *testing.T) {
		_, _, keyA := e.NewWorkspace("enterprise", "admin", "write")
		_, _, keyB := e.NewWorkspace("enterprise", "admin", "write")
		company := e.DoKey(keyA, "POST", "/v1/companies", map[string]any{"name": "A's company"}).Data()["id"].(string)
		e.Expect(e.DoKey(keyB, "GET", "/v1/companies/"+company, nil), 404, "not_found")
		e.Expect(e.DoKey(keyB, "POST", "/v1/companies", map[string]any{"name": "B", "parent_company_id": company}), 422, "validation_failed")

		su := tenancy.Superuser(t, e)
		ctx := context.Background()
		if _, err := su.Exec(ctx, `ALTER TABLE "rec_companies" NO FORCE ROW LEVEL SECURITY`); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if _, err := su.Exec(ctx, `ALTER TABLE "rec_companies" FORCE ROW LEVEL SECURITY`); err != nil {
				t.Error(err)
			}
		}()
		raw := func(method, path string, body any) (int, string) {
			data, _ := json.Marshal(body)
			req, _ := http.NewRequest(method, e.URL+path, bytes.NewReader(data))
			req.Header.Set("Authorization", "Bearer "+keyB)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			out, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(out)
		}
		// With both guards gone, the last one, runtime/records' row check, fails the read closed: a 500
		// (an invariant broken), never A's row.
		e.TolerateServerErrors("tenancy guard")
		get, getBody := raw("GET", "/v1/companies/"+company, nil)
		ref, refBody := raw("POST", "/v1/companies", map[string]any{"name": "B", "parent_company_id": company})
		if get == 404 || ref == 422 {
			t.Errorf("without row-level security on rec_companies B is still refused (GET %d, reference %d): the hook did not remove the predicate", get, ref)
		}
		if strings.Contains(getBody, "A's company") {
			t.Errorf("B read A's company: %s", getBody)
		}
		t.Logf("control, rec_companies without FORCE ROW LEVEL SECURITY: B's GET of A's company %d %.100s; B's reference to it %d %.100s", get, getBody, ref, refBody)
	})
}
