package cluster_test

// TestCluster: a change made on one replica or with recordsctl reaches every replica (cursor,
// revocation, custom_field, data_model, role_change).

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A cursor made by one replica continues on the others: the signing secret is shared (stored in the
// database, or RECORDS_CURSOR_SECRET set alike everywhere).
func (c *cluster) testCursor(t *testing.T) {
	tn := c.newTenant(t, "cursor")
	var want []string
	for i := range 5 {
		r := c.do(t, i%len(c.replicas), tn.key, "POST", "/v1/companies", map[string]any{"name": fmt.Sprintf("Cursor %d", i)})
		if r.Status != 201 {
			t.Fatalf("create: %v", r)
		}
		want = append(want, r.data()["id"].(string))
	}
	var got []string
	cursor := "start"
	for page := 0; cursor != ""; page++ {
		r := c.do(t, page%len(c.replicas), tn.key, "GET", "/v1/companies?page_size=2&sort=name&order=asc&cursor="+cursor, nil)
		if r.Status != 200 {
			t.Fatalf("page %d on replica %d: %v", page, page%len(c.replicas), r)
		}
		for _, it := range r.list() {
			got = append(got, it.(map[string]any)["id"].(string))
		}
		cursor, _ = r.Body["meta"].(map[string]any)["next_cursor"].(string)
		if page > 5 {
			t.Fatal("the walk does not end")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("walk over the replicas gave %v, want %v", got, want)
	}
}

// A key revoked with recordsctl is refused by every replica within 2 s, though each had just accepted
// (and may remember) it.
func (c *cluster) testRevocation(t *testing.T) {
	tn := c.newTenant(t, "revocation")
	var all []time.Duration
	for round := range c.scale.rounds {
		id, secret := c.newKey(t, tn.member, "read")
		for i := range c.replicas {
			if r := c.do(t, i, secret, "GET", "/v1/me", nil); r.Status != 200 {
				t.Fatalf("before revocation: %v", r)
			}
		}
		c.ctl.must(t, "key", "revoke", id)
		d := c.waitAll(time.Now(), propagationBound, func(i int) bool {
			r, err := c.call(t, i, secret, "GET", "/v1/me", nil)
			return err == nil && r.Status == 401 && r.code() == "invalid_api_key"
		})
		t.Logf("round %d: key revoked; refused after %s", round, checkDelays(t, "revocation", d, propagationBound))
		all = append(all, d...)
	}
	logSpread(t, "revocation", all)
}

// A custom field created with recordsctl is in every replica's catalog within 2 s, and at that moment
// writable and filterable (by its filter_key) there.
func (c *cluster) testCustomField(t *testing.T) {
	tn := c.newTenant(t, "custom field")
	var all []time.Duration
	for round := range c.scale.rounds {
		key := fmt.Sprintf("tier%d", round)
		// Every replica holds a snapshot of the workspace's fields without it.
		for i := range c.replicas {
			if r := c.do(t, i, tn.key, "GET", "/v1/resources/companies", nil); r.Status != 200 || customField(r, key) != nil {
				t.Fatalf("catalog before: %v", r)
			}
		}
		created := c.ctl.must(t, "field", "create", "--workspace", tn.ws, "--resource", "companies", "--key", key, "--type", "select", "--options", "gold,silver")
		filterKey, _ := created["filter_key"].(string)
		d := c.waitAll(time.Now(), propagationBound, func(i int) bool {
			r, err := c.call(t, i, tn.key, "GET", "/v1/resources/companies", nil)
			return err == nil && r.Status == 200 && customField(r, key) != nil
		})
		t.Logf("round %d: field %s created; in the catalog after %s", round, key, checkDelays(t, "custom field", d, propagationBound))
		all = append(all, d...)
		for i := range c.replicas {
			name := fmt.Sprintf("Custom %s on %d %s", key, i, c.runID)
			w := c.do(t, i, tn.key, "POST", "/v1/companies", map[string]any{"name": name, "cf__" + key: "gold"})
			if w.Status != 201 {
				t.Errorf("replica %d lists %s but refuses it: %v", i, key, w)
				continue
			}
			q := c.do(t, i, tn.key, "POST", "/v1/companies/query", map[string]any{"page_size": 100,
				"filters": []any{map[string]any{"field": filterKey, "op": "eq", "value": "gold"}, map[string]any{"field": "name", "op": "eq", "value": name}}})
			if q.Status != 200 || len(q.list()) != 1 {
				t.Errorf("replica %d: filter on %s: %v", i, filterKey, q)
			}
		}
	}
	logSpread(t, "custom field", all)
}

// customField returns the catalog's custom field with key, if listed.
func customField(r *response, key string) map[string]any {
	list, _ := r.data()["custom_fields"].([]any)
	for _, it := range list {
		if f, _ := it.(map[string]any); f != nil && f["key"] == key {
			return f
		}
	}
	return nil
}

// A data model created with recordsctl is usable on every replica within 2 s; a field added to it later
// is in every replica's catalog within 2 s, writable and filterable.
func (c *cluster) testDataModel(t *testing.T) {
	tn := c.newTenant(t, "data model")
	dir := t.TempDir()
	var created, updated []time.Duration
	for round := range c.scale.rounds {
		file := filepath.Join(dir, fmt.Sprintf("fields%d.yaml", round))
		os.WriteFile(file, []byte("category: {type: string, options: [software, hardware]}\n"), 0o644)
		id := c.ctl.must(t, "model", "create", "--workspace", tn.ws, "--name", fmt.Sprintf("Vendors %d", round), "--fields-file", file)["id"].(string)
		catalog := "/v1/resources/data_model_records?model_id=" + id
		d := c.waitAll(time.Now(), propagationBound, func(i int) bool {
			r, err := c.call(t, i, tn.key, "GET", catalog, nil)
			return err == nil && r.Status == 200 && customField(r, "category") != nil
		})
		t.Logf("round %d: model created; usable after %s", round, checkDelays(t, "data model", d, propagationBound))
		created = append(created, d...)
		for i := range c.replicas {
			w := c.do(t, i, tn.key, "POST", "/v1/data_model_records?model_id="+id, map[string]any{"name": fmt.Sprintf("Vendor %d", i), "cf__category": "hardware"})
			if w.Status != 201 {
				t.Errorf("replica %d: model record: %v", i, w)
			}
		}
		// Every replica has the model's fields cached; a field is added.
		os.WriteFile(file, []byte("category: {type: string, options: [software, hardware]}\nrating: {type: integer}\n"), 0o644)
		c.ctl.must(t, "model", "update", id, "--fields-file", file)
		d = c.waitAll(time.Now(), propagationBound, func(i int) bool {
			r, err := c.call(t, i, tn.key, "GET", catalog, nil)
			return err == nil && r.Status == 200 && customField(r, "rating") != nil
		})
		t.Logf("round %d: model field added; in the catalog after %s", round, checkDelays(t, "data model field", d, propagationBound))
		updated = append(updated, d...)
		r := c.do(t, 0, tn.key, "GET", catalog, nil)
		filterKey, _ := customField(r, "rating")["filter_key"].(string)
		for i := range c.replicas {
			name := fmt.Sprintf("Rated %d-%d", round, i)
			w := c.do(t, i, tn.key, "POST", "/v1/data_model_records?model_id="+id, map[string]any{"name": name, "cf__rating": 4 + i})
			if w.Status != 201 {
				t.Errorf("replica %d lists rating but refuses it: %v", i, w)
				continue
			}
			q := c.do(t, i, tn.key, "POST", "/v1/data_model_records/query", map[string]any{"model_id": id,
				"filters": []any{map[string]any{"field": filterKey, "op": "eq", "value": 4 + i}}})
			if q.Status != 200 || len(q.list()) != 1 {
				t.Errorf("replica %d: filter on %s: %v", i, filterKey, q)
			}
		}
	}
	logSpread(t, "data model created", created)
	logSpread(t, "data model field added", updated)
}

// A member moved to a role with less access, and a workspace role narrowed, are enforced by every
// replica within 2 s.
func (c *cluster) testRoleChange(t *testing.T) {
	tn := c.newTenant(t, "roles")
	dir := t.TempDir()
	var all []time.Duration
	forbidden := func(i int, key string) bool {
		r, err := c.call(t, i, key, "GET", "/v1/automations?page_size=1", nil)
		return err == nil && r.Status == 403 && r.code() == "forbidden"
	}
	for round := range c.scale.rounds {
		// member set-role: admin → viewer (viewer reads no automations and writes nothing).
		member := c.ctl.must(t, "member", "create", "--workspace", tn.ws, "--email", fmt.Sprintf("moved%d@roles.example", round), "--role", "admin")["id"].(string)
		_, key := c.newKey(t, member, "write")
		for i := range c.replicas {
			if r := c.do(t, i, key, "GET", "/v1/automations?page_size=1", nil); r.Status != 200 {
				t.Fatalf("as admin: %v", r)
			}
		}
		c.ctl.must(t, "member", "set-role", member, "--role", "viewer")
		d := c.waitAll(time.Now(), propagationBound, func(i int) bool { return forbidden(i, key) })
		t.Logf("round %d: member set-role viewer; enforced after %s", round, checkDelays(t, "set-role", d, propagationBound))
		all = append(all, d...)
		for i := range c.replicas {
			if r := c.do(t, i, key, "POST", "/v1/companies", map[string]any{"name": "Not as viewer"}); r.Status != 403 || r.code() != "forbidden" {
				t.Errorf("viewer writes: %v; want 403 forbidden", r)
			}
		}

		// role update: a workspace role loses automations and its write access to companies.
		role := fmt.Sprintf("auditor%d", round)
		file := filepath.Join(dir, role+".yaml")
		os.WriteFile(file, []byte("version: 1\nroles:\n  "+role+":\n    label: Auditor\n    permissions: [api.access]\n    resources: {companies: write, automations: read}\n"), 0o644)
		c.ctl.must(t, "role", "create", "--workspace", tn.ws, "--file", file)
		auditor := c.ctl.must(t, "member", "create", "--workspace", tn.ws, "--email", role+"@roles.example", "--role", role)["id"].(string)
		_, akey := c.newKey(t, auditor, "write")
		for i := range c.replicas {
			if r := c.do(t, i, akey, "GET", "/v1/automations?page_size=1", nil); r.Status != 200 {
				t.Fatalf("as %s: %v", role, r)
			}
		}
		os.WriteFile(file, []byte("version: 1\nroles:\n  "+role+":\n    label: Auditor\n    permissions: [api.access]\n    resources: {companies: read}\n"), 0o644)
		c.ctl.must(t, "role", "update", "--workspace", tn.ws, "--file", file)
		d = c.waitAll(time.Now(), propagationBound, func(i int) bool { return forbidden(i, akey) })
		t.Logf("round %d: role %s narrowed; enforced after %s", round, role, checkDelays(t, "role update", d, propagationBound))
		all = append(all, d...)
		for i := range c.replicas {
			if r := c.do(t, i, akey, "POST", "/v1/companies", map[string]any{"name": "Not as auditor"}); r.Status != 403 || r.code() != "forbidden" {
				t.Errorf("narrowed role writes: %v; want 403 forbidden", r)
			}
		}
	}
	logSpread(t, "role change", all)
}

// logSpread logs min, median and max of propagation delays.
func logSpread(t *testing.T, what string, d []time.Duration) {
	var ok []time.Duration
	for _, v := range d {
		if v >= 0 {
			ok = append(ok, v)
		}
	}
	if len(ok) == 0 {
		return
	}
	slices.Sort(ok)
	t.Logf("%s delays over %d replica observations: min %v, median %v, max %v", what, len(ok),
		ok[0].Round(time.Millisecond), percentile(ok, 50).Round(time.Millisecond), ok[len(ok)-1].Round(time.Millisecond))
}
