package tenancy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// tenant is one workspace of the isolation tests and what it holds.
type tenant struct {
	ws, member, key string
	model           string              // a data model of the workspace
	ids             map[string][]string // record ids by resource; [1] is archived where the resource archives
	gen             *sample.Generator
	seen            map[string]map[string]any
}

// refs names the active records of res (the first) for the sample generator.
func (tn *tenant) refs(res string) []string {
	if ids := tn.ids[res]; len(ids) > 1 {
		return ids[:1]
	}
	return tn.ids[res]
}

// newTenant creates a workspace (enterprise: the matrix outruns smaller plans' per-minute limits) with
// two records of every resource (imports for read-only ones), the second archived where it can be, and
// a data model with modelFields.
func newTenant(t *testing.T, e *servertest.Env, seed uint64, modelFields map[string]customfields.ModelField) *tenant {
	t.Helper()
	be := e.Server.Backend()
	ctx := context.Background()
	tn := &tenant{ids: map[string][]string{}, gen: sample.New(seed), seen: map[string]map[string]any{}}
	tn.ws, tn.member, tn.key = e.NewWorkspace("enterprise", "admin", "write")
	tn.ids["entity_members"] = []string{tn.member}
	tn.gen.SetLookup(func(_, id string) map[string]any { return tn.seen[id] })
	var err error
	if tn.model, err = be.Current().Custom.CreateModel(ctx, tn.ws, "Vendors", modelFields); err != nil {
		t.Fatal(err)
	}
	actor := records.Actor{Workspace: tn.ws, Member: tn.member}
	for _, r := range servertest.ResourceOrder(be.Current().Catalog) {
		if r.Name == "entity_members" {
			continue
		}
		q := ""
		if r.ModelScoped {
			q = "?model_id=" + tn.model
		}
		if r.ReadOnly() {
			for i := 0; i < 2; i++ {
				if _, err := be.Current().Records.Import(ctx, actor, r, "", []map[string]any{tn.gen.Body(r, tn.refs, time.Now())}); err != nil {
					t.Fatal(err)
				}
			}
			for _, rec := range e.DoKey(tn.key, "GET", "/v1/"+r.Name, nil).List() {
				id := fmt.Sprint(rec["id"])
				tn.ids[r.Name] = append(tn.ids[r.Name], id)
				tn.seen[id] = rec
			}
			continue
		}
		for i := 0; i < 2; i++ {
			res := e.DoKey(tn.key, "POST", "/v1/"+r.Name+q, tn.gen.Body(r, tn.refs, time.Now()))
			id, ok := res.Data()["id"].(string)
			if res.Status != 201 || !ok {
				t.Fatalf("create %s: %d %.300s", r.Name, res.Status, res.Raw)
			}
			tn.ids[r.Name] = append(tn.ids[r.Name], id)
			tn.seen[id] = res.Data()
		}
	}
	for _, r := range be.Current().Catalog.Resources {
		if r.Ops.Has(model.OpArchive) {
			q := ""
			if r.ModelScoped {
				q = "?model_id=" + tn.model
			}
			e.Expect(e.DoKey(tn.key, "DELETE", "/v1/"+r.Name+"/"+tn.ids[r.Name][1]+q, nil), 200, "")
		}
	}
	return tn
}

// MatrixCounts is what IsolationMatrix sent.
type MatrixCounts struct {
	Requests int         // B's requests in the matrix
	ByStatus map[int]int // B's requests by answer status
	Snapshot int         // A's requests per snapshot
}

// IsolationMatrix drives a key of workspace B against workspace A's ids on e. Every route comes from
// the router's own tables: route.Table's item routes (get, update, archive, restore, with and without
// the operation allowed), list and query (filters by A's ids, on id and on every reference field; A's
// cursors; A's custom field filter keys; A's model ids), create and update with reference fields,
// custom reference fields and association attributes pointing at A's records, the association routes
// with A's record as source, as target and as both, A's association cursors, and the catalog routes.
//
// Pass: every answer is the expected refusal (404 for ids in paths, 422 naming the field for ids in
// bodies, 400 for A's cursors and filter keys, 405 where the resource takes no writes) or an empty
// 200; no answer holds anything of A's that B did not send itself (ids, workspace, member, model,
// custom field ids, marker values); and everything of A's, read through A's key before and after, is
// unchanged.
func IsolationMatrix(t *testing.T, e *servertest.Env) MatrixCounts {
	t.Helper()
	be := e.Server.Backend()
	cat := be.Current().Catalog
	ctx := context.Background()
	const marker = "A-SECRET-MARKER"
	A := newTenant(t, e, 11, map[string]customfields.ModelField{"a_secret_code": {Type: "string"}})
	B := newTenant(t, e, 12, map[string]customfields.ModelField{"partner": {Type: "reference", Target: "companies"}})
	// B's webhook endpoint, taking every event from here on: its payloads are checked with the answers.
	bHooks := newPayloadReceiver(t)
	bEndpoint := bHooks.endpoint(t, e, B.ws, B.member)

	// A's custom field (its value is a marker), B's custom reference field.
	aField, err := be.Current().Custom.Create(ctx, A.ws, customfields.Def{Resource: "companies", Key: "a_secret_tier", Type: "text"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := be.Current().Custom.Create(ctx, B.ws, customfields.Def{Resource: "companies", Key: "b_partner", Type: "reference", Target: "companies"}); err != nil {
		t.Fatal(err)
	}
	e.Expect(e.DoKey(A.key, "PATCH", "/v1/companies/"+A.ids["companies"][0], map[string]any{"cf__a_secret_tier": marker}), 200, "")
	e.Expect(e.DoKey(A.key, "POST", "/v1/data_model_records?model_id="+A.model, map[string]any{"name": "A model record", "cf__a_secret_code": marker}), 201, "")
	var aModelFilterKey string
	fields, _ := e.DoKey(A.key, "GET", "/v1/resources/data_model_records?model_id="+A.model, nil).Data()["custom_fields"].([]any)
	for _, f := range fields {
		aModelFilterKey, _ = f.(map[string]any)["filter_key"].(string)
	}
	if aModelFilterKey == "" {
		t.Fatal("A's model field has no filter key")
	}

	// A's links: every association of every writable resource, from A's record to A's record; deals.contacts
	// twice so that its list has a second page.
	for _, r := range cat.Resources {
		if !r.Ops.Has(model.OpUpdate) {
			continue
		}
		for _, as := range r.Associations {
			path := "/v1/" + r.Name + "/" + A.ids[r.Name][0] + "/" + as.Name + "/" + A.ids[as.Target][0]
			e.Expect(e.DoKey(A.key, "PUT", path, A.gen.Body(as.Attrs, A.refs, time.Now())), 200, "")
		}
	}
	e.Expect(e.DoKey(A.key, "PUT", "/v1/deals/"+A.ids["deals"][0]+"/contacts/"+A.ids["contacts"][1], nil), 200, "")
	linkCursor := e.DoKey(A.key, "GET", "/v1/deals/"+A.ids["deals"][0]+"/contacts?cursor=start&page_size=1", nil).NextCursor()
	if linkCursor == "" {
		t.Fatal("A's association list has no second page")
	}

	// Unique keys for upserts and custom references for batch items, on every resource that takes them
	// (route.Upserts, route.Batches): A's first record holds a value of each declared unique key (read
	// through A's key, set where it has none) and of a unique custom field ext_id that both workspaces
	// define; B has a custom reference field b_partner to companies. A alone has a unique custom field
	// a_only_key on companies.
	type heldKey struct{ name, value string }
	aHeld := map[string][]heldKey{}
	aTags := map[string]string{} // the ETag of A's first record, once its keys are set
	var aCustomIDs []string
	for _, r := range cat.Resources {
		if route.Batches(r) && !r.ModelScoped && r.Name != "companies" {
			if _, err := be.Current().Custom.Create(ctx, B.ws, customfields.Def{Resource: r.Name, Key: "b_partner", Type: "reference", Target: "companies"}); err != nil {
				t.Fatal(err)
			}
		}
		if !route.Upserts(r) {
			continue
		}
		path := "/v1/" + r.Name + "/" + A.ids[r.Name][0]
		cur := e.DoKey(A.key, "GET", path, nil)
		e.Expect(cur, 200, "")
		for _, f := range r.Declared() {
			if !f.Unique || f.Custom {
				continue
			}
			v, _ := cur.Data()[f.Key].(string)
			if v == "" {
				v = "a-held-" + strings.ReplaceAll(r.Name, "_", "-") + ".example"
				if f.Type == model.Email {
					v = "held@" + v
				}
				e.Expect(e.DoKey(A.key, "PATCH", path, map[string]any{f.Key: v}), 200, "")
			}
			aHeld[r.Name] = append(aHeld[r.Name], heldKey{f.Key, v})
		}
		for _, ws := range []string{A.ws, B.ws} {
			def, err := be.Current().Custom.Create(ctx, ws, customfields.Def{Resource: r.Name, Key: "ext_id", Type: "text", Unique: true})
			if err != nil {
				t.Fatal(err)
			}
			if ws == A.ws {
				aCustomIDs = append(aCustomIDs, def.ID)
			}
		}
		v := "EXT-A-" + r.Name
		e.Expect(e.DoKey(A.key, "PATCH", path, map[string]any{"cf__ext_id": v}), 200, "")
		aHeld[r.Name] = append(aHeld[r.Name], heldKey{"cf__ext_id", v})
		aTags[r.Name] = e.DoKey(A.key, "GET", path, nil).Header.Get("ETag")
	}
	aOnly, err := be.Current().Custom.Create(ctx, A.ws, customfields.Def{Resource: "companies", Key: "a_only_key", Type: "text", Unique: true})
	if err != nil {
		t.Fatal(err)
	}
	aCustomIDs = append(aCustomIDs, aOnly.ID)
	e.Expect(e.DoKey(A.key, "PATCH", "/v1/companies/"+A.ids["companies"][0], map[string]any{"cf__a_only_key": marker}), 200, "")

	// A's list cursors, one per resource where A has two records.
	aQuery := func(r *model.Resource) string {
		if r.ModelScoped {
			return "model_id=" + A.model + "&"
		}
		return ""
	}
	cursors := map[string]string{}
	for _, r := range cat.Resources {
		res := e.DoKey(A.key, "GET", "/v1/"+r.Name+"?"+aQuery(r)+"include_archived=true&cursor=start&page_size=1", nil)
		if c := res.NextCursor(); c != "" {
			cursors[r.Name] = c
		}
	}

	// A's history cursors, one per resource whose first record has two entries or more.
	historyCursors := map[string]string{}
	for _, r := range cat.Resources {
		if !route.Histories(r) {
			continue
		}
		path := strings.Replace(route.Pattern(r.Name, route.History), ":id", A.ids[r.Name][0], 1)
		if c := e.DoKey(A.key, "GET", path+"?"+aQuery(r)+"page_size=1", nil).NextCursor(); c != "" {
			historyCursors[r.Name] = c
		}
	}
	if historyCursors["companies"] == "" {
		t.Fatal("A's first company's history has no second page")
	}

	// Everything of A's that must never reach B (unless B sent it itself).
	secrets := []string{A.ws, A.member, A.model, aField.ID, marker, strings.TrimPrefix(aModelFilterKey, "cfv:")}
	secrets = append(secrets, aCustomIDs...)
	for _, ids := range A.ids {
		secrets = append(secrets, ids...)
	}

	snapshot := func() (map[string]any, int) {
		snap, n := map[string]any{}, 0
		get := func(path string) {
			n++
			res := e.DoKey(A.key, "GET", path, nil)
			e.Expect(res, 200, "")
			snap[path] = res.Body["data"]
		}
		for _, r := range cat.Resources {
			get("/v1/" + r.Name + "?" + aQuery(r) + "include_archived=true&page_size=100")
			for _, as := range r.Associations {
				for _, id := range A.ids[r.Name] {
					get("/v1/" + r.Name + "/" + id + "/" + as.Name + "?page_size=100")
				}
			}
		}
		get("/v1/resources/companies")
		get("/v1/resources/data_model_records?model_id=" + A.model)
		return snap, n
	}
	// A's bulk jobs: an open import whose upload holds the marker, and a completed export of A's
	// companies (its file holds A's records).
	aImport := e.DoKey(A.key, "POST", "/v1/jobs", map[string]any{"type": "import", "resource": "companies"}).Data()["id"].(string)
	e.Expect(e.DoKey(A.key, "PUT", "/v1/jobs/"+aImport+"/parts/1", []byte("name\n"+marker+"\n"), "Content-Type", "text/csv"), 200, "")
	aExport := e.DoKey(A.key, "POST", "/v1/jobs", map[string]any{"type": "export", "resource": "companies"}).Data()["id"].(string)
	for deadline := time.Now().Add(servertest.Budget(10*time.Second, 60*time.Second)); ; time.Sleep(20 * time.Millisecond) {
		if st := e.DoKey(A.key, "GET", "/v1/jobs/"+aExport, nil).Data()["state"]; st == "completed" {
			break
		} else if st != "queued" && st != "running" || time.Now().After(deadline) {
			t.Fatalf("A's export is %v", st)
		}
	}
	before, snapN := snapshot()

	counts := MatrixCounts{ByStatus: map[int]int{}, Snapshot: snapN}
	// do sends one request with B's key and checks the answer.
	do := func(t *testing.T, method, path string, body any, status int, code string, header ...string) *servertest.Response {
		t.Helper()
		counts.Requests++
		res := e.DoKey(B.key, method, path, body, header...)
		counts.ByStatus[res.Status]++
		if res.Status != status || (code != "" && res.Code() != code) {
			t.Errorf("B %s %s: got %d %s, want %d %s: %.300s", method, path, res.Status, res.Code(), status, code, res.Raw)
		}
		sent, _ := json.Marshal(body)
		sent = append(sent, path...)
		for _, s := range secrets {
			if strings.Contains(string(res.Raw), s) && !strings.Contains(string(sent), s) {
				t.Errorf("B %s %s: the answer holds %s of workspace A: %.300s", method, path, s, res.Raw)
			}
		}
		return res
	}
	empty := func(t *testing.T, method, path string, body any) {
		t.Helper()
		if l := do(t, method, path, body, 200, "").List(); len(l) != 0 {
			t.Errorf("B %s %s: %d records", method, path, len(l))
		}
	}
	names := func(res *servertest.Response) string {
		env, _ := res.Body["error"].(map[string]any)
		d, _ := env["details"].(map[string]any)
		data, _ := json.Marshal(d["errors"])
		return string(data)
	}
	refused := func(t *testing.T, method, path string, body any, key string) {
		t.Helper()
		if res := do(t, method, path, body, 422, "validation_failed"); !strings.Contains(names(res), `"`+key+`"`) {
			t.Errorf("B %s %s: 422 does not name %s: %s", method, path, key, res.Raw)
		}
	}
	filterOf := func(items ...map[string]any) string {
		data, _ := json.Marshal(items)
		return url.QueryEscape(string(data))
	}
	inA := func(field string, ids []string) map[string]any {
		return map[string]any{"field": field, "op": "in", "value": ids}
	}

	// batchIsolation: B's batches on r (route.Batches). A's ids as update, archive and restore items are
	// each item's 404, per item and atomic (where every item is refused, none aborted); create and update
	// items whose bodies refer to A's records (declared reference fields, B's custom reference field) are
	// the item's 422 naming the field, beside B's own create, which is written per item and aborted
	// atomically; A's model is the batch's 404.
	batchIsolation := func(t *testing.T, r *model.Resource, bq, aq string, now time.Time) {
		t.Helper()
		path := route.Pattern(r.Name, route.Batch)
		var byID []any
		for _, id := range A.ids[r.Name] {
			if r.Ops.Has(model.OpUpdate) {
				byID = append(byID, map[string]any{"op": "update", "id": id, "body": B.gen.Body(r, B.refs, now)})
			}
			if r.Ops.Has(model.OpArchive) {
				byID = append(byID, map[string]any{"op": "archive", "id": id, "body": map[string]any{"reason": "B was here"}})
			}
			if r.Ops.Has(model.OpRestore) {
				byID = append(byID, map[string]any{"op": "restore", "id": id})
			}
		}
		itemWant := func(t *testing.T, what string, res *servertest.Response, want []string) {
			t.Helper()
			got := res.Results()
			if len(got) != len(want) {
				t.Errorf("B's %s batch of %s: %d results for %d items: %.300s", what, r.Name, len(got), len(want), res.Raw)
				return
			}
			for i, w := range want {
				status, name, _ := strings.Cut(w, " ")
				env, _ := got[i]["error"].(map[string]any)
				d, _ := env["details"].(map[string]any)
				named, _ := json.Marshal(d["errors"])
				switch {
				case fmt.Sprint(got[i]["status"]) != status:
					t.Errorf("B's %s batch of %s, item %d: status %v, want %s: %.300v", what, r.Name, i, got[i]["status"], status, got[i])
				case status == "404" && env["code"] != "not_found", status == "424" && env["code"] != "batch_aborted":
					t.Errorf("B's %s batch of %s, item %d: %v", what, r.Name, i, got[i])
				case name != "" && (env["code"] != "validation_failed" || !strings.Contains(string(named), `"`+name+`"`)):
					t.Errorf("B's %s batch of %s, item %d: does not name %s: %v", what, r.Name, i, name, got[i])
				}
			}
		}
		if len(byID) > 0 {
			want := make([]string, len(byID))
			for i := range want {
				want[i] = "404"
			}
			itemWant(t, "per_item", do(t, "POST", path+bq, map[string]any{"mode": "per_item", "items": byID}, 200, ""), want)
			itemWant(t, "atomic", do(t, "POST", path+bq, map[string]any{"mode": "atomic", "items": byID}, 422, "batch_failed"), want)
		}
		// refs makes the items afresh (bodies holding unique keys are written once) and what each answers.
		refs := func() (items []any, want []string) {
			if r.Ops.Has(model.OpCreate) {
				items, want = append(items, map[string]any{"op": "create", "body": B.gen.Body(r, B.refs, now)}), append(want, "201")
			}
			refer := func(key, bodyKey string, target string) {
				if r.Ops.Has(model.OpCreate) {
					body := B.gen.Body(r, B.refs, now)
					body[key] = target
					items, want = append(items, map[string]any{"op": "create", "body": body}), append(want, "422 "+key)
				}
				if r.Ops.Has(model.OpUpdate) {
					body := map[string]any{key: target}
					if bodyKey != key {
						body = map[string]any{"custom_fields": map[string]any{strings.TrimPrefix(key, "cf__"): target}}
					}
					items, want = append(items, map[string]any{"op": "update", "id": B.ids[r.Name][0], "body": body}), append(want, "422 "+bodyKey)
				}
			}
			for _, f := range r.Declared() {
				if f.Type == model.Reference && f.Writable() && len(A.ids[f.Target]) > 0 {
					refer(f.Key, f.Key, A.ids[f.Target][0])
				}
			}
			if r.ModelScoped {
				refer("cf__partner", "custom_fields.partner", A.ids["companies"][0])
			} else {
				refer("cf__b_partner", "custom_fields.b_partner", A.ids["companies"][0])
			}
			return items, want
		}
		if items, want := refs(); len(want) > 0 && want[len(want)-1] != "201" {
			itemWant(t, "per_item", do(t, "POST", path+bq, map[string]any{"mode": "per_item", "items": items}, 200, ""), want)
			items, want = refs()
			for i, w := range want {
				if w == "201" {
					want[i] = "424"
				}
			}
			itemWant(t, "atomic", do(t, "POST", path+bq, map[string]any{"mode": "atomic", "items": items}, 422, "batch_failed"), want)
		}
		if r.ModelScoped {
			items := append([]any{map[string]any{"op": "create", "body": map[string]any{"name": "B in A's model"}}}, byID...)
			do(t, "POST", path+aq, map[string]any{"mode": "per_item", "items": items}, 404, "not_found")
			itemWant(t, "model_id", do(t, "POST", path+bq, map[string]any{"mode": "per_item", "items": []any{
				map[string]any{"op": "create", "body": map[string]any{"name": "B in A's model", "model_id": A.model}},
			}}, 200, ""), []string{"400"})
		}
	}

	// upsertIsolation: B's upserts on r (route.Upserts) by the values A's first record holds. No record of
	// B's holds them: If-Match (A's record's ETag, or "*") is 412, as a single upsert and as a batch item;
	// the upsert creates B's own record (201), which the next upsert changes (200) and If-None-Match: *
	// refuses; A's record is never touched (the snapshot) nor named (do's secrets). A key only A has is
	// B's 404.
	upsertIsolation := func(t *testing.T, r *model.Resource, now time.Time) {
		t.Helper()
		for _, k := range aHeld[r.Name] {
			path := strings.NewReplacer(":key", k.name, ":value", url.PathEscape(k.value)).Replace(route.Pattern(r.Name, route.Upsert))
			body := B.gen.Body(r, B.refs, now)
			delete(body, k.name)
			bpath := route.Pattern(r.Name, route.Batch)
			item := func(extra ...string) map[string]any {
				it := map[string]any{"op": "upsert", "key": k.name, "value": k.value, "body": body}
				for i := 0; i+1 < len(extra); i += 2 {
					it[extra[i]] = extra[i+1]
				}
				return it
			}
			for _, im := range []string{aTags[r.Name], "*"} {
				do(t, "PUT", path, body, 412, "precondition_failed", "If-Match", im)
				res := do(t, "POST", bpath, map[string]any{"mode": "per_item", "items": []any{item("if_match", im)}}, 200, "")
				if got := res.Statuses(); got != "412" {
					t.Errorf("B's upsert item of %s by %s with If-Match %s: %s", r.Name, k.name, im, res.Raw)
				}
			}
			made := do(t, "PUT", path, body, 201, "")
			id, _ := made.Data()["id"].(string)
			if id == "" || slices.Contains(A.ids[r.Name], id) {
				t.Fatalf("B's upsert of %s by %s made %q", r.Name, k.name, id)
			}
			if again := do(t, "PUT", path, map[string]any{}, 200, ""); again.Data()["id"] != id {
				t.Errorf("B's second upsert of %s by %s: %.300s", r.Name, k.name, again.Raw)
			}
			do(t, "PUT", path, body, 412, "precondition_failed", "If-None-Match", "*")
			res := do(t, "POST", bpath, map[string]any{"mode": "atomic", "items": []any{item(), item("if_none_match", "*")}}, 422, "batch_failed")
			if got := res.Statuses(); got != "424,412" {
				t.Errorf("B's atomic upsert items of %s by %s: %s", r.Name, k.name, res.Raw)
			}
			res = do(t, "POST", bpath, map[string]any{"mode": "per_item", "items": []any{item()}}, 200, "")
			if got := res.Results(); len(got) != 1 || fmt.Sprint(got[0]["status"]) != "200" {
				t.Errorf("B's upsert item of %s by %s: %s", r.Name, k.name, res.Raw)
			} else if d, _ := got[0]["data"].(map[string]any); d["id"] != id {
				t.Errorf("B's upsert item of %s by %s changed %v, not B's %s", r.Name, k.name, d["id"], id)
			}
		}
		if r.Name == "companies" {
			do(t, "PUT", route.Pattern(r.Name, route.Upsert)[:len("/v1/companies/by/")]+"cf__a_only_key/x", map[string]any{"name": "B"}, 404, "not_found")
			res := do(t, "POST", route.Pattern(r.Name, route.Batch), map[string]any{"mode": "per_item", "items": []any{
				map[string]any{"op": "upsert", "key": "cf__a_only_key", "value": "x", "body": map[string]any{"name": "B"}},
			}}, 200, "")
			if got := res.Statuses(); got != "404" {
				t.Errorf("B's upsert item by A's key: %s", res.Raw)
			}
		}
	}

	for _, r := range cat.Resources {
		t.Run(r.Name, func(t *testing.T) {
			base := "/v1/" + r.Name
			bq, aq := "", ""
			if r.ModelScoped {
				bq, aq = "model_id="+B.model, "model_id="+A.model
			}
			join := func(q ...string) string {
				var parts []string
				for _, s := range q {
					if s != "" {
						parts = append(parts, s)
					}
				}
				if len(parts) == 0 {
					return ""
				}
				return "?" + strings.Join(parts, "&")
			}
			now := time.Now()

			// Item routes, from the route table: every operation on an id, allowed or not.
			for _, id := range A.ids[r.Name] {
				for _, op := range []model.Operation{model.OpGet, model.OpUpdate, model.OpArchive, model.OpRestore} {
					method, shape := route.Where(op)
					path := strings.Replace(route.Pattern(r.Name, shape), ":id", id, 1)
					var body any
					switch op {
					case model.OpUpdate:
						body = B.gen.Body(r, B.refs, now)
					case model.OpArchive:
						body = map[string]any{"reason": "B was here"}
					}
					for _, q := range []string{bq, aq} {
						if !r.Ops.Has(op) {
							do(t, method, path+join(q), body, 405, "method_not_allowed")
						} else {
							do(t, method, path+join(q), body, 404, "not_found")
						}
						if !r.ModelScoped {
							break
						}
					}
				}
			}

			// A record's history, from the route table: A's ids are 404 (with B's model and A's), and A's
			// history cursor is 400 on B's own record.
			if route.Histories(r) {
				for _, id := range A.ids[r.Name] {
					path := strings.Replace(route.Pattern(r.Name, route.History), ":id", id, 1)
					for _, q := range []string{bq, aq} {
						do(t, "GET", path+join(q), nil, 404, "not_found")
						if !r.ModelScoped {
							break
						}
					}
				}
				if c, ok := historyCursors[r.Name]; ok {
					path := strings.Replace(route.Pattern(r.Name, route.History), ":id", B.ids[r.Name][0], 1)
					do(t, "GET", path+join(bq, "cursor="+url.QueryEscape(c)), nil, 400, "invalid_request")
				}
			}

			// Lists and queries: A's ids as filters on id and on every reference field.
			filters := []map[string]any{inA("id", A.ids[r.Name])}
			for _, f := range r.FilterFields() {
				if f.Type == model.Reference && !f.Custom {
					filters = append(filters, inA(f.Key, A.ids[f.Target]))
				}
			}
			// Paths across every relation to A's records: by id, and by the value of their first
			// filterable text field (A's name of it): B's records never match through A's.
			for _, rel := range r.Relations() {
				target, _ := cat.Resource(rel.Target)
				if target.ModelScoped || (rel.Field != nil && !rel.Field.Filterable) {
					continue
				}
				filters = append(filters, inA(rel.Name+".id", A.ids[rel.Target]))
				// (A value of A's that none of B's records of the target holds: vocabularies repeat names.)
				bHolds := func(key, v string) bool {
					for _, id := range B.ids[rel.Target] {
						if B.seen[id][key] == v {
							return true
						}
					}
					return false
				}
			value:
				for _, f := range target.FilterFields() {
					for _, id := range A.ids[rel.Target] {
						if v, ok := A.seen[id][f.Key].(string); ok && v != "" && f.Type == model.String && !f.Custom && !bHolds(f.Key, v) {
							filters = append(filters, map[string]any{"field": rel.Name + "." + f.Key, "op": "eq", "value": v})
							break value
						}
					}
				}
			}
			for _, f := range filters {
				empty(t, "GET", base+join(bq, "include_archived=true", "page_size=100", "filter="+filterOf(f)), nil)
				q := map[string]any{"include_archived": true, "page_size": 100, "filters": []any{f}}
				if r.ModelScoped {
					q["model_id"] = B.model
				}
				empty(t, "POST", base+"/query", q)
			}
			// An unfiltered list holds only B's records.
			for _, rec := range do(t, "GET", base+join(bq, "include_archived=true", "page_size=100"), nil, 200, "").List() {
				if !slices.Contains(B.ids[r.Name], fmt.Sprint(rec["id"])) {
					t.Errorf("B lists %s %v, not one of its own", r.Name, rec["id"])
				}
			}
			// Expansions: B expands every relation of its records (the catalog's, at most
			// listplan.MaxExpansions at a time) on list, query and get; do checks that no answer holds
			// anything of A, and B's get of A's record with an expansion is still 404.
			if rels := listplan.Expandable(cat, r, nil); len(rels) > 0 && !r.ModelScoped {
				for i := 0; i < len(rels); i += listplan.MaxExpansions {
					var names []string
					for _, rel := range rels[i:min(i+listplan.MaxExpansions, len(rels))] {
						names = append(names, rel.Name)
					}
					exp := url.QueryEscape(strings.Join(names, ","))
					do(t, "GET", base+"?include_archived=true&page_size=100&expand="+exp, nil, 200, "")
					do(t, "POST", base+"/query", map[string]any{"include_archived": true, "page_size": 100, "expand": names}, 200, "")
					do(t, "GET", base+"/"+B.ids[r.Name][0]+"?expand="+exp, nil, 200, "")
					do(t, "GET", base+"/"+A.ids[r.Name][0]+"?expand="+exp, nil, 404, "not_found")
				}
			}
			// A's cursors.
			if c, ok := cursors[r.Name]; ok {
				do(t, "GET", base+join(bq, "include_archived=true", "page_size=1", "cursor="+url.QueryEscape(c)), nil, 400, "invalid_request")
				q := map[string]any{"include_archived": true, "page_size": 1, "cursor": c}
				if r.ModelScoped {
					q["model_id"] = B.model
				}
				do(t, "POST", base+"/query", q, 400, "invalid_request")
			}
			// A's model id.
			if r.ModelScoped {
				do(t, "GET", base+join(aq), nil, 404, "not_found")
				do(t, "POST", base+"/query", map[string]any{"model_id": A.model}, 404, "not_found")
				do(t, "POST", base+join(aq), map[string]any{"name": "B in A's model"}, 404, "not_found")
				do(t, "POST", base, map[string]any{"model_id": A.model, "name": "B in A's model"}, 404, "not_found")
				do(t, "GET", "/v1/resources/"+r.Name+join(aq), nil, 404, "not_found")
				// A's model field filter key, on B's model.
				do(t, "GET", base+join(bq, "filter="+filterOf(map[string]any{"field": aModelFilterKey, "op": "eq", "value": marker})), nil, 400, "invalid_request")
				// B's model reference field pointing at A's company.
				refused(t, "POST", base+join(bq), map[string]any{"name": "B", "cf__partner": A.ids["companies"][0]}, "cf__partner")
			}
			// B's catalog of the resource shows nothing of A's.
			do(t, "GET", "/v1/resources/"+r.Name+join(bq), nil, 200, "")
			// B's change feed of the resource, from the start and waiting, holds B's own records only.
			for _, q := range []string{"cursor=start&limit=1000", "cursor=0&type=" + r.Name + ".created," + r.Name + ".updated," + r.Name + ".archived&wait=1ms"} {
				for _, ev := range do(t, "GET", "/v1/events?resource="+r.Name+"&"+q, nil, 200, "").List() {
					if !slices.Contains(B.ids[r.Name], fmt.Sprint(ev["record_id"])) {
						t.Errorf("B's feed of %s holds %v", r.Name, ev["record_id"])
					}
				}
			}

			// Reference fields in bodies pointing at A's records: create and update.
			if r.Ops.Has(model.OpCreate) {
				for _, f := range r.Declared() {
					if f.Type != model.Reference || !f.Writable() {
						continue
					}
					for _, target := range A.ids[f.Target] {
						body := B.gen.Body(r, B.refs, now)
						body[f.Key] = target
						refused(t, "POST", base+join(bq), body, f.Key)
						refused(t, "PATCH", base+"/"+B.ids[r.Name][0]+join(bq), map[string]any{f.Key: target}, f.Key)
						break
					}
				}
			}

			// Associations: A's record as source, as target and as both; attributes pointing at A's records.
			for _, as := range r.Associations {
				for _, id := range A.ids[r.Name] {
					do(t, "GET", base+"/"+id+"/"+as.Name, nil, 404, "not_found")
				}
				for _, l := range do(t, "GET", base+"/"+B.ids[r.Name][0]+"/"+as.Name+"?page_size=100", nil, 200, "").List() {
					if !slices.Contains(B.ids[as.Target], fmt.Sprint(l["id"])) {
						t.Errorf("B's %s.%s lists %v", r.Name, as.Name, l["id"])
					}
				}
				pairs := [][2]string{
					{A.ids[r.Name][0], B.ids[as.Target][0]},
					{B.ids[r.Name][0], A.ids[as.Target][0]},
					{A.ids[r.Name][0], A.ids[as.Target][0]},
				}
				for _, p := range pairs {
					path := base + "/" + p[0] + "/" + as.Name + "/" + p[1]
					for _, m := range []string{"PUT", "DELETE"} {
						if r.Ops.Has(model.OpUpdate) {
							do(t, m, path, nil, 404, "not_found")
						} else {
							do(t, m, path, nil, 405, "method_not_allowed")
						}
					}
				}
				if !r.Ops.Has(model.OpUpdate) {
					continue
				}
				for _, f := range as.Attrs.Declared() {
					if f.Type == model.Reference && f.Writable() {
						body := B.gen.Body(as.Attrs, B.refs, now)
						body[f.Key] = A.ids[f.Target][0]
						refused(t, "PUT", base+"/"+B.ids[r.Name][0]+"/"+as.Name+"/"+B.ids[as.Target][0], body, f.Key)
					}
				}
			}

			if route.Batches(r) {
				batchIsolation(t, r, join(bq), join(aq), now)
			}
			if route.Upserts(r) {
				upsertIsolation(t, r, now)
			}
		})
	}

	// Custom fields: A's filter key and write key on B's companies; B's reference field at A's company.
	cf := func(op string, v any) string {
		return filterOf(map[string]any{"field": aField.FilterKey(), "op": op, "value": v})
	}
	do(t, "GET", "/v1/companies?filter="+cf("eq", marker), nil, 400, "invalid_request")
	do(t, "GET", "/v1/companies?filter="+cf("is_not_empty", nil), nil, 400, "invalid_request")
	do(t, "POST", "/v1/companies/query", map[string]any{"filters": []any{map[string]any{"field": aField.FilterKey(), "op": "eq", "value": marker}}}, 400, "invalid_request")
	do(t, "GET", "/v1/companies?sort="+aField.FilterKey(), nil, 400, "invalid_request")
	// A's custom field filter key across a path from B's records.
	do(t, "GET", "/v1/deals?filter="+filterOf(map[string]any{"field": "company." + aField.FilterKey(), "op": "eq", "value": marker}), nil, 400, "invalid_request")
	do(t, "GET", "/v1/contacts?filter="+filterOf(map[string]any{"field": "companies." + aField.FilterKey(), "op": "is_not_empty"}), nil, 400, "invalid_request")
	refused(t, "POST", "/v1/companies", map[string]any{"name": "B", "cf__a_secret_tier": "x"}, "cf__a_secret_tier")
	refused(t, "POST", "/v1/companies", map[string]any{"name": "B", "cf__b_partner": A.ids["companies"][0]}, "cf__b_partner")
	refused(t, "PATCH", "/v1/companies/"+B.ids["companies"][0], map[string]any{"custom_fields": map[string]any{"b_partner": A.ids["companies"][0]}}, "custom_fields.b_partner")
	// A's association cursor on B's own record.
	do(t, "GET", "/v1/deals/"+B.ids["deals"][0]+"/contacts?cursor="+url.QueryEscape(linkCursor), nil, 400, "invalid_request")
	// Bulk jobs: every /v1/jobs/:id route of the route table, with A's import and A's export, is 404 for
	// B (a part upload, a close and a cancel change nothing of A's job); B's job list holds none of A's.
	// The admin API's job routes (/v1/admin/jobs/:id…) likewise, with an admin key of B's admin.
	bAdmin := e.NewKey(B.member, auth.KeyOptions{Access: "admin"})
	jobRoutes := 0
	for _, rt := range route.Table(cat) {
		admin := strings.HasPrefix(rt.Path, "/v1/admin/jobs/:id")
		if !strings.HasPrefix(rt.Path, "/v1/jobs/:id") && !admin {
			continue
		}
		jobRoutes++
		for _, id := range []string{aImport, aExport} {
			path := strings.NewReplacer(":id", id, ":part", "1").Replace(rt.Path)
			var body any
			var header []string
			if rt.Method == "PUT" {
				body, header = []byte("name\nB\n"), []string{"Content-Type", "text/csv"}
			}
			if admin {
				counts.Requests++
				e.Expect(e.DoKey(bAdmin, rt.Method, path, body, header...), 404, "not_found")
				continue
			}
			do(t, rt.Method, path, body, 404, "not_found", header...)
		}
	}
	if jobRoutes < 10 {
		t.Errorf("the route table has %d job routes with an id, want 10 at least (7 of /v1/jobs, 3 of the admin API)", jobRoutes)
	}
	if l := do(t, "GET", "/v1/jobs", nil, 200, "").List(); len(l) != 0 {
		t.Errorf("B's job list holds %d jobs", len(l))
	}
	if l := e.DoKey(bAdmin, "GET", "/v1/admin/jobs", nil).List(); len(l) != 0 {
		t.Errorf("B's admin job list holds %d jobs", len(l))
	}
	for _, id := range []string{aImport, aExport} {
		if j := e.DoKey(A.key, "GET", "/v1/jobs/"+id, nil).Data(); fmt.Sprintf("%v %v", j["state"], j["upload"]) != map[string]string{aImport: "open map[bytes:21 parts:1]", aExport: "completed <nil>"}[id] {
			t.Errorf("A's job after B's requests: %v %v", j["state"], j["upload"])
		}
	}
	// Discovery.
	do(t, "GET", "/v1/me", nil, 200, "")
	do(t, "GET", "/v1/resources", nil, 200, "")

	// B's webhook payloads, once delivered, hold nothing of A's.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		pending, err := be.Webhooks.Deliveries(ctx, B.ws, bEndpoint.ID, dispatch.StatePending, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("B's webhook deliveries still pending after 20 s")
			break
		}
	}
	for _, r := range bHooks.requests() {
		raw, _ := json.Marshal(r.event)
		for _, s := range secrets {
			if strings.Contains(string(raw), s) {
				t.Errorf("B's webhook payload holds %s of workspace A: %.300s", s, raw)
			}
		}
		if !r.verified {
			t.Errorf("B's webhook payload not verified: %.300s", raw)
		}
	}
	// Even a record of B that stores A's ids — no API writes one: reference and link checks refuse them —
	// expands none of A's records: B's deal's references set to A's records in the database, and a link
	// row from it to A's contact, expand to null and to no linked record.
	foreignIDsNeverExpand(t, e, B.ws, B.key, B.ids["deals"][0], A.ids, secrets)
	after, _ := snapshot()
	for path, v := range before {
		if !reflect.DeepEqual(v, after[path]) {
			b1, _ := json.Marshal(v)
			b2, _ := json.Marshal(after[path])
			t.Errorf("A's %s changed:\nbefore %.400s\nafter  %.400s", path, b1, b2)
		}
	}
	var statuses []string
	for s, n := range counts.ByStatus {
		statuses = append(statuses, fmt.Sprintf("%d×%d", n, s))
	}
	sort.Strings(statuses)
	t.Logf("BOLA matrix: %d requests with B's key (%s); A's snapshot: %d requests, before and after; %d webhook payloads to B", counts.Requests, strings.Join(statuses, " "), counts.Snapshot, len(bHooks.requests()))
	return counts
}
