package tenancy

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// foreignIDsNeverExpand stores, in the database, the ids of another workspace's records (aIDs) in the
// reference fields of workspace ws's deal and a link from it to the other workspace's contact, then
// expands them with ws's key: every reference expands to null, the association to no record, and no
// answer holds any of secrets but the ids stored in the deal's own fields.
func foreignIDsNeverExpand(t *testing.T, e *servertest.Env, ws, key, deal string, aIDs map[string][]string, secrets []string) {
	t.Helper()
	st := e.Server.Backend().Store
	d := st.Dialect()
	ctx := store.WithWorkspace(context.Background(), ws)
	r, _ := e.Server.Backend().Current().Catalog.Resource("deals")
	stored := map[string]bool{}
	var refs []string
	for _, rel := range r.Relations() {
		if rel.Many() || len(aIDs[rel.Target]) == 0 {
			continue
		}
		foreign := aIDs[rel.Target][0]
		stmt := d.Bind(fmt.Sprintf("UPDATE %s SET %s = ? WHERE %s = ? AND %s = ?", sqlgen.Quote(r.Table), sqlgen.Quote(rel.Field.Column), sqlgen.Quote("workspace_id"), sqlgen.Quote("id")), foreign, ws, deal)
		if n, err := st.Exec(ctx, stmt); err != nil || n != 1 {
			t.Fatalf("store A's %s in B's deal: %d rows, %v", rel.Field.Key, n, err)
		}
		stored[foreign] = true
		refs = append(refs, rel.Name)
	}
	contacts, _ := r.Relation("contacts")
	res, name, fromOwner := contacts.Assoc.StoredAs("deals")
	owner, target := deal, aIDs["contacts"][0]
	if !fromOwner {
		owner, target = target, owner
	}
	now := time.Now().UTC()
	ins := d.Bind(`INSERT INTO "associations" ("workspace_id", "owner_resource", "name", "owner_id", "target_resource", "target_id", "attributes", "created_at", "updated_at") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ws, res, name, owner, "contacts", target, "{}", now, now)
	if _, err := st.Exec(ctx, ins); err != nil {
		t.Fatalf("store a link from B's deal to A's contact: %v", err)
	}
	for len(refs) > 0 {
		n := min(len(refs), listplan.MaxExpansions-1)
		names := append(refs[:n:n], "contacts")
		refs = refs[n:]
		exp := url.QueryEscape(strings.Join(names, ","))
		for _, path := range []string{"/v1/deals/" + deal + "?expand=" + exp, "/v1/deals?include_archived=true&page_size=100&expand=" + exp} {
			got := e.DoKey(key, "GET", path, nil)
			e.Expect(got, 200, "")
			raw := string(got.Raw)
			for id := range stored {
				raw = strings.ReplaceAll(raw, id, "STORED")
			}
			for _, s := range secrets {
				if strings.Contains(raw, s) {
					t.Errorf("B's %s holds %s of workspace A: %.400s", path, s, got.Raw)
				}
			}
			recs := got.List()
			if len(recs) == 0 {
				recs = []map[string]any{got.Data()}
			}
			for _, rec := range recs {
				if rec["id"] != deal {
					continue
				}
				for _, n := range names {
					if ids := servertest.ExpandedIDs(t, rec, n); len(ids) != 0 {
						t.Errorf("B's deal expands %s to A's %v", n, ids)
					}
				}
			}
		}
	}
}
