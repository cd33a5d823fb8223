package server_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// The workspace half of the admin API (docs/issue-24.md): custom fields, data models, the catalog,
// members, roles and the audit trail, through real HTTP on both backends.

// workspaceAdminPrefixes are the paths of this half's routes.
var workspaceAdminPrefixes = []string{"/v1/admin/custom-fields", "/v1/admin/data-models", "/v1/admin/resources", "/v1/admin/members", "/v1/admin/roles", "/v1/admin/audit"}

// wsAdminRoutes are the routes of the admin API (Endpoint Admin, scope admin) of the route table; with
// mine, only this half's.
func wsAdminRoutes(mine bool) []route.Route {
	var out []route.Route
	for _, rt := range route.Fixed() {
		if rt.Endpoint != route.Admin || rt.Scope != route.ScopeAdmin {
			continue
		}
		if mine {
			ok := false
			for _, p := range workspaceAdminPrefixes {
				ok = ok || rt.Path == p || strings.HasPrefix(rt.Path, p+"/")
			}
			if !ok {
				continue
			}
		}
		out = append(out, rt)
	}
	return out
}

// wsFillPath puts values in a route's parameters (:id, :name, :resource); a parameter without one gets a
// fresh UUID.
func wsFillPath(path string, values map[string]string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			v, has := values[name]
			if !has {
				v = uuid.NewString()
			}
			parts[i] = url.PathEscape(v)
		}
	}
	return strings.Join(parts, "/")
}

// wsBodyOf is a body a write route accepts in shape, for the matrices (refused before it is read).
func wsBodyOf(rt route.Route) any {
	if rt.Method == "GET" {
		return nil
	}
	return map[string]any{}
}

// wsTrail reads the admin API's audit trail of one object with key, newest first.
func wsTrail(t *testing.T, e *servertest.Env, key, resource, id string) []map[string]any {
	t.Helper()
	r := e.DoKey(key, "GET", "/v1/admin/audit?resource="+resource+"&record_id="+id, nil)
	e.Expect(r, 200, "")
	return r.List()
}

// wsExpectTrail checks that the newest entries of an object's trail have actions, newest first, each
// written by the admin key's owner with its request id.
func wsExpectTrail(t *testing.T, e *servertest.Env, key, member, resource, id string, actions ...string) []map[string]any {
	t.Helper()
	got := wsTrail(t, e, key, resource, id)
	var seen []string
	for _, en := range got {
		seen = append(seen, fmt.Sprint(en["action"]))
		if en["member_id"] != member || en["request_id"] == nil || en["key_id"] == nil {
			t.Errorf("%s %s: entry %v does not name the admin who wrote it", resource, id, en)
		}
	}
	if strings.Join(seen, ",") != strings.Join(actions, ",") {
		t.Errorf("%s %s: trail %v, want %v", resource, id, seen, actions)
	}
	return got
}

// TestAdminCustomFields: create (every type recordsctl takes), list, get, update, archive, restore, each
// write audited in its transaction; refusals by field (422), a duplicate key (409), strict bodies; the
// field is in a data key's catalog and writable as cf__<key> at once, and in the admin catalog.
func TestAdminCustomFields(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ak := e.NewKey(e.Member, auth.KeyOptions{Access: auth.AccessAdmin})
			const cfAudit = audit.AdminCustomFields

			for _, typ := range []string{"text", "long_text", "integer", "decimal", "boolean", "date", "datetime", "select", "multi_select", "email", "url", "phone", "reference"} {
				body := map[string]any{"resource": "contacts", "key": "t_" + typ, "type": typ}
				switch typ {
				case "select", "multi_select":
					body["options"] = []string{"a", "b"}
				case "reference":
					body["target"] = "companies"
				}
				r := e.DoKey(ak, "POST", "/v1/admin/custom-fields", body)
				e.Expect(r, 201, "")
				if d := r.Data(); d["type"] != typ || d["write_key"] != "cf__t_"+typ || d["filter_key"] != "cfv:"+fmt.Sprint(d["id"]) {
					t.Errorf("create %s: %v", typ, d)
				}
			}

			r := e.DoKey(ak, "POST", "/v1/admin/custom-fields", map[string]any{"resource": "deals", "key": "tier", "type": "select", "options": []string{"gold", "silver"}, "label": "Tier", "unique": false})
			e.Expect(r, 201, "")
			cf := r.Data()
			id := cf["id"].(string)
			wsExpectTrail(t, e, ak, e.Member, cfAudit, id, "create")

			// Refusals name each member, as record writes do.
			r = e.DoKey(ak, "POST", "/v1/admin/custom-fields", map[string]any{"resource": "nope", "key": "Bad Key", "type": "colour", "bogus": 1, "unique": "yes"})
			e.Expect(r, 422, "validation_failed")
			got := errorFields(r)
			for f, code := range map[string]string{"resource": "invalid_option", "key": "invalid_format", "type": "invalid_option", "bogus": "unknown_field", "unique": "invalid_type"} {
				if got[f] != code {
					t.Errorf("refused create: field %s has %q, want %q (all: %v)", f, got[f], code, got)
				}
			}
			r = e.DoKey(ak, "POST", "/v1/admin/custom-fields", map[string]any{"resource": "deals", "key": "tier2", "type": "text", "options": []string{"x"}})
			e.Expect(r, 422, "validation_failed")
			if errorFields(r)["options"] == "" {
				t.Errorf("options on a text field: %s", r.Raw)
			}
			e.Expect(e.DoKey(ak, "POST", "/v1/admin/custom-fields", map[string]any{"resource": "deals", "key": "tier", "type": "text"}), 409, "conflict")
			e.Expect(e.DoKey(ak, "POST", "/v1/admin/custom-fields", []byte(`{"resource": "deals", "resource": "deals"}`)), 400, "invalid_request")
			e.Expect(e.DoKey(ak, "POST", "/v1/admin/custom-fields", []byte(`{"resource": `)), 400, "invalid_request")
			e.Expect(e.DoKey(ak, "POST", "/v1/admin/custom-fields", []byte(`{"description": "`+strings.Repeat("x", 1<<20)+`"}`)), 413, "payload_too_large")
			if trail := wsTrail(t, e, ak, cfAudit, id); len(trail) != 1 {
				t.Errorf("refused writes left audit entries: %v", trail)
			}

			// A data key sees the field in the catalog and writes it as cf__tier.
			r = e.Do("GET", "/v1/resources/deals", nil)
			e.Expect(r, 200, "")
			found := false
			for _, it := range r.Data()["custom_fields"].([]any) {
				f := it.(map[string]any)
				if f["id"] == id {
					found = f["write_key"] == "cf__tier" && f["filter_key"] == "cfv:"+id
				}
			}
			if !found {
				t.Errorf("the data key's catalog lacks cf__tier: %s", r.Raw)
			}
			r = e.Do("POST", "/v1/deals", map[string]any{"name": "Admin deal", "cf__tier": "gold"})
			e.Expect(r, 201, "")
			if cfs, _ := r.Data()["custom_fields"].(map[string]any); cfs["tier"] != "gold" {
				t.Errorf("cf__tier not written: %s", r.Raw)
			}
			r = e.DoKey(ak, "GET", "/v1/admin/resources/deals", nil)
			e.Expect(r, 200, "")
			if !strings.Contains(string(r.Raw), `"cfv:`+id+`"`) || !strings.Contains(string(r.Raw), `"cf__tier"`) {
				t.Errorf("the admin catalog lacks the field: %s", r.Raw)
			}
			r = e.DoKey(ak, "GET", "/v1/admin/resources", nil)
			e.Expect(r, 200, "")
			for _, res := range r.List() {
				if res["name"] == "deals" && fmt.Sprint(res["custom_fields"]) != "1" {
					t.Errorf("deals in the admin resources: %v", res)
				}
				if res["name"] == "contacts" && fmt.Sprint(res["custom_fields"]) != "13" {
					t.Errorf("contacts in the admin resources: %v", res)
				}
			}

			// List, get, update, archive, restore.
			r = e.DoKey(ak, "GET", "/v1/admin/custom-fields?resource=deals", nil)
			e.Expect(r, 200, "")
			if l := r.List(); len(l) != 1 || l[0]["id"] != id {
				t.Errorf("list of deals: %s", r.Raw)
			}
			if meta, _ := r.Body["meta"].(map[string]any); meta == nil || meta["next_cursor"] != nil {
				t.Errorf("list meta: %s", r.Raw)
			}
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/custom-fields?resource=nope", nil), 404, "unknown_resource")
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/custom-fields?sort=key", nil), 400, "invalid_request")
			r = e.DoKey(ak, "GET", "/v1/admin/custom-fields/"+id, nil)
			e.Expect(r, 200, "")
			r = e.DoKey(ak, "PATCH", "/v1/admin/custom-fields/"+id, map[string]any{"label": "Customer tier", "options": []string{"gold", "silver", "bronze"}})
			e.Expect(r, 200, "")
			if r.Data()["label"] != "Customer tier" || len(r.Data()["options"].([]any)) != 3 {
				t.Errorf("update: %s", r.Raw)
			}
			e.Expect(e.DoKey(ak, "PATCH", "/v1/admin/custom-fields/"+id, map[string]any{"key": "other"}), 422, "validation_failed")
			e.Expect(e.DoKey(ak, "POST", "/v1/admin/custom-fields/"+id+"/archive", map[string]any{}), 200, "")
			r = e.DoKey(ak, "GET", "/v1/admin/custom-fields?archived=true", nil)
			e.Expect(r, 200, "")
			if l := r.List(); len(l) != 1 || l[0]["id"] != id || l[0]["archived"] != true {
				t.Errorf("archived list: %s", r.Raw)
			}
			e.Expect(e.DoKey(ak, "POST", "/v1/admin/custom-fields/"+id+"/restore", nil), 200, "")
			trail := wsExpectTrail(t, e, ak, e.Member, cfAudit, id, "restore", "archive", "update", "create")
			if ch, _ := trail[2]["changes"].(map[string]any); ch["label"] != "Customer tier" {
				t.Errorf("update entry: %v", trail[2])
			}
			if prev, _ := trail[2]["previous"].(map[string]any); prev["label"] != "Tier" {
				t.Errorf("update entry's previous: %v", trail[2])
			}
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/custom-fields/"+uuid.NewString(), nil), 404, "not_found")
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/custom-fields/not-a-uuid", nil), 404, "not_found")
		})
	}
}

// TestAdminModelsMembersRoles: the data models, members and roles routes, every write audited, and
// the trail paged and shown only to readers whose role holds api.manage (and to the operator).
func TestAdminModelsMembersRoles(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ak := e.NewKey(e.Member, auth.KeyOptions{Access: auth.AccessAdmin})

			// Data models.
			r := e.DoKey(ak, "POST", "/v1/admin/data-models", map[string]any{"name": "Vehicles", "fields": map[string]any{"plate": map[string]any{"type": "string", "required": true}, "seats": map[string]any{"type": "integer"}}})
			e.Expect(r, 201, "")
			modelID := r.Data()["id"].(string)
			e.Expect(e.DoKey(ak, "POST", "/v1/admin/data-models", map[string]any{"name": "Vehicles", "fields": map[string]any{}}), 409, "conflict")
			r = e.DoKey(ak, "POST", "/v1/admin/data-models", map[string]any{"name": "Bad", "fields": map[string]any{"x": map[string]any{"type": "colour"}, "y": map[string]any{"type": "string", "extra": 1}}})
			e.Expect(r, 422, "validation_failed")
			if f := errorFields(r); f["fields.x.type"] == "" || f["fields.y.extra"] != "unknown_field" {
				t.Errorf("refused model: %s", r.Raw)
			}
			r = e.DoKey(ak, "GET", "/v1/admin/data-models", nil)
			e.Expect(r, 200, "")
			if l := r.List(); len(l) != 1 || l[0]["id"] != modelID {
				t.Errorf("models: %s", r.Raw)
			}
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/data-models/"+modelID, nil), 200, "")
			r = e.DoKey(ak, "PATCH", "/v1/admin/data-models/"+modelID, map[string]any{"name": "Cars"})
			e.Expect(r, 200, "")
			if r.Data()["name"] != "Cars" || len(r.Data()["fields"].(map[string]any)) != 2 {
				t.Errorf("model update: %s", r.Raw)
			}
			wsExpectTrail(t, e, ak, e.Member, audit.AdminDataModels, modelID, "update", "create")
			r = e.DoKey(ak, "GET", "/v1/admin/resources/data_model_records?model_id="+modelID, nil)
			e.Expect(r, 200, "")
			if !strings.Contains(string(r.Raw), `"cf__plate"`) {
				t.Errorf("the model's catalog: %s", r.Raw)
			}

			// Members.
			other := e.NewMember("other@adminws.example", "member", "")
			r = e.DoKey(ak, "GET", "/v1/admin/members", nil)
			e.Expect(r, 200, "")
			if len(r.List()) != 2 {
				t.Errorf("members: %s", r.Raw)
			}
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/members/"+other, nil), 200, "")
			r = e.DoKey(ak, "PATCH", "/v1/admin/members/"+other, map[string]any{"role": "viewer"})
			e.Expect(r, 200, "")
			if r.Data()["role"] != "viewer" {
				t.Errorf("role change: %s", r.Raw)
			}
			r = e.DoKey(ak, "PATCH", "/v1/admin/members/"+other, map[string]any{"role": "nope"})
			e.Expect(r, 422, "validation_failed")
			if errorFields(r)["role"] == "" {
				t.Errorf("unknown role: %s", r.Raw)
			}
			e.Expect(e.DoKey(ak, "PATCH", "/v1/admin/members/"+other, map[string]any{}), 422, "validation_failed")
			otherKey := e.NewKey(other, auth.KeyOptions{Access: "read"})
			r = e.DoKey(ak, "POST", "/v1/admin/members/"+other+"/deactivate", nil)
			e.Expect(r, 200, "")
			if r.Data()["active"] != false {
				t.Errorf("deactivate: %s", r.Raw)
			}
			e.Expect(e.DoKey(otherKey, "GET", "/v1/me", nil), 401, "invalid_api_key")
			e.Expect(e.DoKey(ak, "POST", "/v1/admin/members/"+other+"/activate", map[string]any{}), 200, "")
			e.Expect(e.DoKey(otherKey, "GET", "/v1/me", nil), 401, "invalid_api_key") // revoked for good
			trail := wsExpectTrail(t, e, ak, e.Member, audit.AdminMembers, other, "activate", "deactivate", "update")
			if ch, _ := trail[2]["changes"].(map[string]any); ch["role"] != "viewer" {
				t.Errorf("role change entry: %v", trail[2])
			}

			// Roles.
			r = e.DoKey(ak, "GET", "/v1/admin/roles", nil)
			e.Expect(r, 200, "")
			if l := r.List(); len(l) < 4 || l[0]["name"] != "admin" || l[0]["builtin"] != true {
				t.Errorf("roles: %s", r.Raw)
			}
			r = e.DoKey(ak, "POST", "/v1/admin/roles", map[string]any{"name": "analyst", "label": "Analyst", "permissions": []string{"api.access"},
				"resources": map[string]string{"*": "read"}, "field_rules": map[string]any{"deals": map[string]string{"amount": "masked"}}})
			e.Expect(r, 201, "")
			roleID := r.Data()["id"].(string)
			if roleID != members.RoleID(e.Workspace, "analyst") {
				t.Errorf("role id %s, want the one derived from workspace and name", roleID)
			}
			r = e.DoKey(ak, "POST", "/v1/admin/roles", map[string]any{"name": "bad", "label": "", "permissions": []string{"api.fly"}, "resources": map[string]string{"nope": "read"}})
			e.Expect(r, 422, "validation_failed")
			if f := errorFields(r); f["permissions.0"] == "" && f["permissions"] == "" {
				t.Errorf("refused role: %s", r.Raw)
			}
			e.Expect(e.DoKey(ak, "POST", "/v1/admin/roles", map[string]any{"name": "analyst", "label": "Again", "permissions": []string{}, "resources": map[string]string{}}), 409, "conflict")
			e.Expect(e.DoKey(ak, "POST", "/v1/admin/roles", map[string]any{"name": "admin", "label": "Mine", "permissions": []string{}, "resources": map[string]string{}}), 422, "validation_failed")
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/roles/analyst", nil), 200, "")
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/roles/viewer", nil), 200, "")
			r = e.DoKey(ak, "PATCH", "/v1/admin/roles/analyst", map[string]any{"label": "Senior analyst"})
			e.Expect(r, 200, "")
			if r.Data()["label"] != "Senior analyst" || r.Data()["field_rules"].(map[string]any)["deals"] == nil {
				t.Errorf("role update kept the other members? %s", r.Raw)
			}
			e.Expect(e.DoKey(ak, "PATCH", "/v1/admin/roles/viewer", map[string]any{"label": "Mine"}), 409, "conflict")
			e.Expect(e.DoKey(ak, "PATCH", "/v1/admin/roles/analyst", map[string]any{"name": "x"}), 422, "validation_failed")
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/roles/nope", nil), 404, "not_found")
			wsExpectTrail(t, e, ak, e.Member, audit.AdminRoles, roleID, "update", "create")
			e.Expect(e.DoKey(ak, "PATCH", "/v1/admin/members/"+other, map[string]any{"role": "analyst"}), 200, "")

			// The trail: paged, filtered; admin entries to managers and the operator only.
			r = e.DoKey(ak, "GET", "/v1/admin/audit?limit=2&since=1h", nil)
			e.Expect(r, 200, "")
			cursor, _ := r.Body["meta"].(map[string]any)["next_cursor"].(string)
			if len(r.List()) != 2 || cursor == "" {
				t.Fatalf("first page: %s", r.Raw)
			}
			r2 := e.DoKey(ak, "GET", "/v1/admin/audit?limit=2&since=1h&cursor="+url.QueryEscape(cursor), nil)
			e.Expect(r2, 200, "")
			if len(r2.List()) != 2 || r2.List()[0]["id"] == r.List()[0]["id"] {
				t.Errorf("second page: %s", r2.Raw)
			}
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/audit?since=yesterday", nil), 400, "invalid_request")
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/audit?limit=0", nil), 400, "invalid_request")
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/audit?resource=nope", nil), 400, "invalid_request")
			e.Expect(e.DoKey(ak, "GET", "/v1/admin/audit?cursor=forged", nil), 400, "invalid_request")
			be := e.Server.Backend()
			ctx := context.Background()
			for _, who := range []struct {
				member string
				sees   bool
			}{{other, false}, {e.Member, true}, {"", true}} {
				a := records.Actor{Workspace: e.Workspace} // the operator: recordsctl audit list
				if who.member != "" {
					var err error
					if a, err = be.Current().Records.MemberActor(ctx, e.Workspace, who.member); err != nil {
						t.Fatal(err)
					}
				}
				page, err := be.Current().Records.AuditLog(ctx, a, audit.Query{Resource: audit.AdminMembers, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				all, err := be.Current().Records.AuditLog(ctx, a, audit.Query{Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				admin := 0
				for _, en := range all.Entries {
					if audit.IsAdminResource(en.Resource) {
						admin++
					}
				}
				if (len(page.Entries) > 0) != who.sees || (admin > 0) != who.sees {
					t.Errorf("reader %q: %d admin.members entries, %d admin entries in the whole trail; want them seen: %v", who.member, len(page.Entries), admin, who.sees)
				}
			}
		})
	}
}

// TestAdminPermissionMatrix: every admin route of the table refuses a data key (403
// insufficient_scope), an admin key whose owner's role no longer holds api.manage (403
// permission_denied) and no key (401).
func TestAdminPermissionMatrix(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			const roles = "version: 1\nroles:\n  keeper:\n    label: Keeper\n    permissions: [api.access]\n    resources: {\"*\": write}\n"
			if _, err := e.Server.Backend().Members.PutRoles(ctx, e.Workspace, "roles.yaml", []byte(roles), true); err != nil {
				t.Fatal(err)
			}
			demoted := e.NewMember("demoted@adminws.example", "admin", "")
			demotedKey := e.NewKey(demoted, auth.KeyOptions{Access: auth.AccessAdmin})
			e.Expect(e.DoKey(demotedKey, "GET", "/v1/admin/members", nil), 200, "")
			if err := e.Server.Backend().Members.SetRole(ctx, demoted, "keeper"); err != nil {
				t.Fatal(err)
			}
			routes := wsAdminRoutes(false)
			if len(routes) < len(workspaceAdminPrefixes) {
				t.Fatalf("%d admin routes in the table", len(routes))
			}
			values := map[string]string{"resource": "deals", "name": "admin", "id": e.Member}
			for _, rt := range routes {
				path := wsFillPath(rt.Path, values)
				e.Expect(e.DoKey(e.Key, rt.Method, path, wsBodyOf(rt)), 403, "insufficient_scope")
				e.Expect(e.DoKey(demotedKey, rt.Method, path, wsBodyOf(rt)), 403, "permission_denied")
				e.Expect(e.DoKey("", rt.Method, path, wsBodyOf(rt)), 401, "invalid_api_key")
			}
			// Nothing was written by the refused calls.
			r := e.DoKey(e.NewKey(e.Member, auth.KeyOptions{Access: auth.AccessAdmin}), "GET", "/v1/admin/audit", nil)
			e.Expect(r, 200, "")
			for _, en := range r.List() {
				if audit.IsAdminResource(fmt.Sprint(en["resource"])) {
					t.Errorf("a refused call was audited: %v", en)
				}
			}
		})
	}
}

// TestAdminIsolationMatrix: another workspace's custom fields, data models, members and roles are 404
// on every id route of this half, whatever the method, and stay as they were.
func TestAdminIsolationMatrix(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			be := e.Server.Backend()
			ak := e.NewKey(e.Member, auth.KeyOptions{Access: auth.AccessAdmin})
			ws2, member2, _ := e.NewWorkspace("growth", "admin", "write")
			def, err := be.Current().Custom.Create(ctx, ws2, customfields.Def{Resource: "deals", Key: "secret_tier", Type: "text"})
			if err != nil {
				t.Fatal(err)
			}
			modelID, err := be.Current().Custom.CreateModel(ctx, ws2, "Theirs", map[string]customfields.ModelField{"x": {Type: "string"}})
			if err != nil {
				t.Fatal(err)
			}
			const roles = "version: 1\nroles:\n  theirs:\n    label: Theirs\n    permissions: [api.access]\n    resources: {\"*\": read}\n"
			if _, err := be.Members.PutRoles(ctx, ws2, "roles.yaml", []byte(roles), true); err != nil {
				t.Fatal(err)
			}
			ids := map[string]map[string]string{
				"/v1/admin/custom-fields/": {"id": def.ID},
				"/v1/admin/data-models/":   {"id": modelID},
				"/v1/admin/members/":       {"id": member2},
				"/v1/admin/roles/":         {"name": "theirs"},
			}
			bodies := map[string]any{
				"PATCH /v1/admin/custom-fields/:id": map[string]any{"label": "Mine now"},
				"PATCH /v1/admin/data-models/:id":   map[string]any{"name": "Mine now"},
				"PATCH /v1/admin/members/:id":       map[string]any{"role": "viewer"},
				"PATCH /v1/admin/roles/:name":       map[string]any{"label": "Mine now"},
			}
			n := 0
			for _, rt := range wsAdminRoutes(true) {
				if !strings.Contains(rt.Path, "/:id") && !strings.Contains(rt.Path, "/:name") {
					continue
				}
				var values map[string]string
				for prefix, v := range ids {
					if strings.HasPrefix(rt.Path, prefix) {
						values = v
					}
				}
				if values == nil {
					t.Errorf("%s %s: no other workspace's object for this route", rt.Method, rt.Path)
					continue
				}
				body := bodies[rt.Method+" "+rt.Path]
				if body == nil {
					body = wsBodyOf(rt)
				}
				e.Expect(e.DoKey(ak, rt.Method, wsFillPath(rt.Path, values), body), 404, "not_found")
				n++
			}
			if n < 12 {
				t.Errorf("only %d id routes checked", n)
			}
			// The other workspace's objects are unchanged.
			if d, err := be.Current().Custom.Get(ctx, ws2, def.ID); err != nil || d.Label != def.Label || d.Archived {
				t.Errorf("their custom field: %+v, %v", d, err)
			}
			if m, err := be.Current().Custom.Model(ctx, ws2, modelID); err != nil || m.Name != "Theirs" {
				t.Errorf("their model: %+v, %v", m, err)
			}
			if m, err := be.Members.Member(ctx, ws2, member2); err != nil || !m.Active || m.Role != "admin" {
				t.Errorf("their member: %+v, %v", m, err)
			}
			if r, err := be.Members.Role(ctx, ws2, "theirs"); err != nil || r.Label != "Theirs" {
				t.Errorf("their role: %+v, %v", r, err)
			}
			// Their objects are in none of this workspace's lists.
			for _, p := range []string{"/v1/admin/custom-fields", "/v1/admin/data-models", "/v1/admin/members", "/v1/admin/roles"} {
				r := e.DoKey(ak, "GET", p, nil)
				e.Expect(r, 200, "")
				for _, leak := range []string{def.ID, modelID, member2, `"theirs"`} {
					if strings.Contains(string(r.Raw), leak) {
						t.Errorf("%s lists %s of another workspace", p, leak)
					}
				}
			}
		})
	}
}

// TestAdminEscalationAndLockout: an admin cannot create or change a role granting more than their own, nor
// give a member (themselves included) such a role (403 permission_denied); the last active member holding
// api.manage cannot be demoted or deactivated, directly or by changing their role (409 conflict).
func TestAdminEscalationAndLockout(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			const lead = "version: 1\nroles:\n  lead:\n    label: Lead\n    permissions: [api.access, api.manage]\n    resources: {\"*\": read, deals: write}\n    field_rules: {deals: {amount: masked}}\n"
			if _, err := e.Server.Backend().Members.PutRoles(ctx, e.Workspace, "roles.yaml", []byte(lead), true); err != nil {
				t.Fatal(err)
			}
			leader := e.NewMember("lead@adminws.example", "lead", "")
			lk := e.NewKey(leader, auth.KeyOptions{Access: auth.AccessAdmin})
			worker := e.NewMember("worker@adminws.example", "viewer", "")

			role := func(name string, resources map[string]string, fieldRules map[string]any) map[string]any {
				r := map[string]any{"name": name, "label": name, "permissions": []string{"api.access"}, "resources": resources}
				if fieldRules != nil {
					r["field_rules"] = fieldRules
				}
				return r
			}
			e.Expect(e.DoKey(lk, "POST", "/v1/admin/roles", role("writer", map[string]string{"*": "write"}, nil)), 403, "permission_denied")
			e.Expect(e.DoKey(lk, "POST", "/v1/admin/roles", role("peeker", map[string]string{"deals": "read"}, nil)), 403, "permission_denied") // amount unmasked
			e.Expect(e.DoKey(lk, "POST", "/v1/admin/roles", role("dealer", map[string]string{"deals": "write"}, map[string]any{"deals": map[string]string{"amount": "hidden"}})), 201, "")
			e.Expect(e.DoKey(lk, "PATCH", "/v1/admin/roles/dealer", map[string]any{"resources": map[string]string{"deals": "write", "contacts": "write"}}), 403, "permission_denied")
			e.Expect(e.DoKey(lk, "PATCH", "/v1/admin/roles/lead", map[string]any{"resources": map[string]string{"*": "write"}}), 403, "permission_denied")
			for _, m := range []string{worker, leader} {
				e.Expect(e.DoKey(lk, "PATCH", "/v1/admin/members/"+m, map[string]any{"role": "admin"}), 403, "permission_denied")
			}
			e.Expect(e.DoKey(lk, "PATCH", "/v1/admin/members/"+worker, map[string]any{"role": "dealer"}), 200, "")
			// Activating a member whose role grants more than the lead's is that grant: refused.
			boss := e.NewMember("boss@adminws.example", "admin", "")
			if err := e.Server.Backend().Members.Deactivate(ctx, boss); err != nil {
				t.Fatal(err)
			}
			e.Expect(e.DoKey(lk, "POST", "/v1/admin/members/"+boss+"/activate", nil), 403, "permission_denied")
			if m, _ := e.Server.Backend().Members.Member(ctx, e.Workspace, boss); m.Active {
				t.Error("the refused activation activated the member")
			}
			if m, _ := e.Server.Backend().Members.Member(ctx, e.Workspace, leader); m.Role != "lead" {
				t.Errorf("the lead's role is %s", m.Role)
			}
			trail := wsTrail(t, e, lk, audit.AdminRoles, members.RoleID(e.Workspace, "writer"))
			if len(trail) != 0 {
				t.Errorf("a refused role was audited: %v", trail)
			}

			// Lock-out, in a workspace of one admin.
			ws, solo, _ := e.NewWorkspace("growth", "admin", "write")
			sk := e.NewKey(solo, auth.KeyOptions{Access: auth.AccessAdmin})
			e.Expect(e.DoKey(sk, "PATCH", "/v1/admin/members/"+solo, map[string]any{"role": "member"}), 409, "conflict")
			e.Expect(e.DoKey(sk, "POST", "/v1/admin/members/"+solo+"/deactivate", nil), 409, "conflict")
			e.Expect(e.DoKey(sk, "POST", "/v1/admin/roles", map[string]any{"name": "boss", "label": "Boss", "permissions": []string{"api.access", "api.manage"}, "resources": map[string]string{"*": "write"}}), 201, "")
			e.Expect(e.DoKey(sk, "PATCH", "/v1/admin/members/"+solo, map[string]any{"role": "boss"}), 200, "")
			e.Expect(e.DoKey(sk, "PATCH", "/v1/admin/roles/boss", map[string]any{"permissions": []string{"api.access"}}), 409, "conflict")
			e.Expect(e.DoKey(sk, "GET", "/v1/admin/members/"+solo, nil), 200, "")
			// With a second manager, the first may step down.
			m2, err := e.Server.Backend().Members.CreateMember(ctx, ws, members.MemberProfile{Email: "second@adminws.example", Role: "admin"})
			if err != nil {
				t.Fatal(err)
			}
			e.Expect(e.DoKey(sk, "PATCH", "/v1/admin/members/"+m2.ID, map[string]any{"role": "member"}), 200, "")
			e.Expect(e.DoKey(sk, "POST", "/v1/admin/members/"+m2.ID+"/deactivate", nil), 200, "")
			e.Expect(e.DoKey(sk, "PATCH", "/v1/admin/members/"+solo, map[string]any{"role": "admin"}), 200, "")
			wsExpectTrail(t, e, sk, solo, audit.AdminMembers, solo, "update", "update")
		})
	}
}

// TestAdminChangesReachOtherServer: a custom field created, a member deactivated, a role and a data model changed
// through one server's admin API apply on another server of the same database within 2 s.
func TestAdminChangesReachOtherServer(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			db := servertest.DatabaseURL(t, b)
			e1 := servertest.Start(t, b, servertest.Options{DB: db})
			e2 := servertest.Start(t, b, servertest.Options{DB: db})
			e2.Key, e2.Workspace, e2.Member = e1.Key, e1.Workspace, e1.Member
			ak := e1.NewKey(e1.Member, auth.KeyOptions{Access: auth.AccessAdmin})
			ctx := context.Background()
			const roles = "version: 1\nroles:\n  clerk:\n    label: Clerk\n    permissions: [api.access]\n    resources: {\"*\": write}\n"
			if _, err := e1.Server.Backend().Members.PutRoles(ctx, e1.Workspace, "roles.yaml", []byte(roles), true); err != nil {
				t.Fatal(err)
			}
			clerk := e1.NewMember("clerk@adminws.example", "clerk", "")
			ck := e1.NewKey(clerk, auth.KeyOptions{Access: "write"})
			leaver := e1.NewMember("leaver@adminws.example", "member", "")
			lk := e1.NewKey(leaver, auth.KeyOptions{Access: "read"})
			r := e1.DoKey(ak, "POST", "/v1/admin/data-models", map[string]any{"name": "Boats", "fields": map[string]any{"hull": map[string]any{"type": "string"}}})
			e1.Expect(r, 201, "")
			modelID := r.Data()["id"].(string)
			// Warm e2's caches: the key, the custom-field snapshot and the data model's fields.
			e2.Expect(e2.Do("GET", "/v1/resources/deals", nil), 200, "")
			e2.Expect(e2.Do("GET", "/v1/resources/data_model_records?model_id="+modelID, nil), 200, "")
			e2.Expect(e2.DoKey(lk, "GET", "/v1/me", nil), 200, "")
			e2.Expect(e2.DoKey(ck, "POST", "/v1/deals", map[string]any{"name": "Before"}), 201, "")

			start := time.Now()
			e1.Expect(e1.DoKey(ak, "POST", "/v1/admin/custom-fields", map[string]any{"resource": "deals", "key": "region", "type": "text"}), 201, "")
			e1.Expect(e1.DoKey(ak, "POST", "/v1/admin/members/"+leaver+"/deactivate", nil), 200, "")
			e1.Expect(e1.DoKey(ak, "PATCH", "/v1/admin/roles/clerk", map[string]any{"resources": map[string]string{"*": "read"}}), 200, "")
			e1.Expect(e1.DoKey(ak, "PATCH", "/v1/admin/data-models/"+modelID, map[string]any{"fields": map[string]any{"hull": map[string]any{"type": "string"}, "mast": map[string]any{"type": "integer"}}}), 200, "")
			checks := map[string]func() bool{
				"data model": func() bool {
					return strings.Contains(string(e2.Do("GET", "/v1/resources/data_model_records?model_id="+modelID, nil).Raw), `"cf__mast"`)
				},
				"custom field": func() bool {
					return strings.Contains(string(e2.Do("GET", "/v1/resources/deals", nil).Raw), `"cf__region"`)
				},
				"deactivation": func() bool { return e2.DoKey(lk, "GET", "/v1/me", nil).Status == 401 },
				"role change":  func() bool { return e2.DoKey(ck, "POST", "/v1/deals", map[string]any{"name": "After"}).Status == 403 },
			}
			// Within 2 s (DESIGN.md §4) under RECORDS_TIMING=strict; 15 s in make test (servertest.Budget).
			bound := servertest.Budget(2*time.Second, 15*time.Second)
			for name, ok := range checks {
				_, done := servertest.WaitFor(bound+3*time.Second, ok)
				if elapsed := time.Since(start); !done || elapsed > bound {
					t.Errorf("%s: reached the other server %v after the change (reached: %v), want within %v", name, elapsed, done, bound)
				}
			}
			e2.Expect(e2.Do("POST", "/v1/deals", map[string]any{"name": "Regional", "cf__region": "north"}), 201, "")
		})
	}
}
