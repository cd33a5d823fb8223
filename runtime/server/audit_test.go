package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/migrate"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// auditOf returns every audit entry of the env's workspace that q selects, newest first, as the
// operator sees them, walking pages of 2 so that paging is exercised too.
func auditOf(t *testing.T, e *servertest.Env, q audit.Query) []audit.Row {
	t.Helper()
	return auditAs(t, e, records.Actor{Workspace: e.Workspace}, q)
}

func auditAs(t *testing.T, e *servertest.Env, a records.Actor, q audit.Query) []audit.Row {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 2
	}
	var out []audit.Row
	seen := map[string]bool{}
	for {
		page, err := e.Server.Backend().Current().Records.AuditLog(context.Background(), a, q)
		if err != nil {
			t.Fatalf("audit log %+v: %v", q, err)
		}
		if len(page.Entries) > q.Limit {
			t.Fatalf("page of %d entries, limit %d", len(page.Entries), q.Limit)
		}
		for _, en := range page.Entries {
			if seen[en.ID] {
				t.Fatalf("entry %s on two pages", en.ID)
			}
			seen[en.ID] = true
			out = append(out, en)
		}
		if page.NextCursor == nil {
			break
		}
		q.Cursor = *page.NextCursor
	}
	for i := 1; i < len(out); i++ {
		if a, b := out[i-1], out[i]; a.CreatedAt < b.CreatedAt || (a.CreatedAt == b.CreatedAt && a.ID < b.ID) {
			t.Errorf("entries not newest first: %s %s then %s %s", a.CreatedAt, a.ID, b.CreatedAt, b.ID)
		}
	}
	return out
}

func auditJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func auditStr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// Every write through the API leaves exactly one audit entry with its member, key, request id
// (X-Request-Id of the response), time and values: create, update (only what changed, with what it
// replaced, custom fields included), archive, restore, link (with attributes) and unlink; an
// idempotent replay writes nothing more.
func TestAuditEveryWrite(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			if _, err := e.Server.Backend().Current().Custom.Create(ctx, e.Workspace, customfields.Def{Resource: "deals", Key: "tier", Type: "select", Options: []string{"gold", "silver"}}); err != nil {
				t.Fatal(err)
			}
			key := keyID(t, e)
			contact := e.Do("POST", "/v1/contacts", map[string]any{"last_name": "Lee"}).Data()["id"].(string)
			roleType := e.Do("POST", "/v1/deal_role_types", map[string]any{"name": "Champion"}).Data()["id"].(string)
			roleType2 := e.Do("POST", "/v1/deal_role_types", map[string]any{"name": "Buyer"}).Data()["id"].(string)

			type write struct {
				method, path string
				body         any
				action       string
				changes      string // JSON of the entry's changes
				previous     string // JSON of the entry's previous
			}
			before := time.Now().UTC().Add(-time.Second)
			var id string
			writes := []write{
				{"POST", "/v1/deals", map[string]any{"name": "Audit deal", "amount": 1200.5, "cf__tier": "gold"}, "create", "", "null"},
				{"PATCH", "/v1/deals/{id}", map[string]any{"name": "Audit deal", "amount": 1500, "cf__tier": "silver"}, "update",
					`{"amount":1500,"custom_fields":{"tier":"silver"}}`, `{"amount":1200.5,"custom_fields":{"tier":"gold"}}`},
				// Every value given equals the stored one: a no-op, which writes no entry (issue 37).
				{"PATCH", "/v1/deals/{id}", map[string]any{"name": "Audit deal", "cf__tier": "silver"}, "", "", ""},
				{"DELETE", "/v1/deals/{id}", map[string]any{"reason": "duplicate"}, "archive", `{"archive_reason":"duplicate"}`, "null"},
				{"POST", "/v1/deals/{id}/restore", nil, "restore", `{}`, "null"},
				{"PUT", "/v1/deals/{id}/contacts/" + contact, map[string]any{"role_type_id": roleType}, "link",
					`{"attributes":{"role_type_id":"` + roleType + `"},"contacts":"` + contact + `"}`, "null"},
				{"PUT", "/v1/deals/{id}/contacts/" + contact, map[string]any{"role_type_id": roleType2}, "link",
					`{"attributes":{"role_type_id":"` + roleType2 + `"},"contacts":"` + contact + `"}`, `{"attributes":{"role_type_id":"` + roleType + `"}}`},
				{"DELETE", "/v1/deals/{id}/contacts/" + contact, nil, "unlink", `{"contacts":"` + contact + `"}`, `{"attributes":{"role_type_id":"` + roleType2 + `"}}`},
			}
			var requestIDs []string
			for i, w := range writes {
				res := e.Do(w.method, strings.ReplaceAll(w.path, "{id}", id), w.body, "Idempotency-Key", fmt.Sprintf("audit-%d", i))
				if res.Status >= 300 {
					t.Fatalf("%s %s: %d %s", w.method, w.path, res.Status, res.Raw)
				}
				if i == 0 {
					id = res.Data()["id"].(string)
				}
				requestIDs = append(requestIDs, res.Header.Get("X-Request-Id"))
				// A replay is answered from the idempotency record: no second write, no second entry.
				replay := e.Do(w.method, strings.ReplaceAll(w.path, "{id}", id), w.body, "Idempotency-Key", fmt.Sprintf("audit-%d", i))
				if replay.Header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("%s %s: not replayed: %d %s", w.method, w.path, replay.Status, replay.Raw)
				}
			}
			// A create records every value it wrote: the defaults too.
			writes[0].changes = `{"amount":1200.5,"currency":"USD","custom_fields":{"tier":"gold"},"name":"Audit deal","status":"open"}`

			got := auditOf(t, e, audit.Query{Resource: "deals", RecordID: id})
			var written []int // the writes that wrote an entry: all but the no-ops
			for i, w := range writes {
				if w.action != "" {
					written = append(written, i)
				}
			}
			if len(got) != len(written) {
				t.Fatalf("%d audit entries for %d writes (%d of them no-ops): %s", len(got), len(writes), len(writes)-len(written), auditJSON(got))
			}
			for n, i := range written {
				w := writes[i]
				en := got[len(got)-1-n] // newest first
				if en.Action != w.action || en.Resource != "deals" || en.RecordID != id {
					t.Errorf("write %d (%s): entry %s %s %s", i, w.action, en.Action, en.Resource, en.RecordID)
				}
				if auditStr(en.MemberID) != e.Member || auditStr(en.KeyID) != key || auditStr(en.RequestID) != requestIDs[i] {
					t.Errorf("write %d (%s): member %s key %s request %s, want %s %s %s", i, w.action, auditStr(en.MemberID), auditStr(en.KeyID), auditStr(en.RequestID), e.Member, key, requestIDs[i])
				}
				if auditJSON(en.Changes) != w.changes || auditJSON(en.Previous) != w.previous {
					t.Errorf("write %d (%s): changes %s previous %s, want %s %s", i, w.action, auditJSON(en.Changes), auditJSON(en.Previous), w.changes, w.previous)
				}
				at, err := time.Parse(time.RFC3339Nano, en.CreatedAt)
				if err != nil || at.Before(before) || at.After(time.Now().Add(time.Second)) {
					t.Errorf("write %d (%s): created_at %s", i, w.action, en.CreatedAt)
				}
			}
			// Every request id is its own.
			if len(slices.Compact(slices.Sorted(slices.Values(requestIDs)))) != len(requestIDs) {
				t.Errorf("request ids repeat: %v", requestIDs)
			}
		})
	}
}

// A write that fails or rolls back leaves no audit entry: validation failures, a plugin's veto, a
// conflict, a failed reference check of an import, and a failure inside the transaction after the
// audit row was written (the actor's OnWrite, where idempotency stores its response).
func TestAuditRolledBackWrites(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			be := e.Server.Backend()
			ctx := context.Background()
			pipeline := e.Do("POST", "/v1/pipelines", map[string]any{"name": "Sales"}).Data()["id"]
			stage := func(name, kind string, probability int) any {
				return e.Do("POST", "/v1/pipeline_stages", map[string]any{"pipeline_id": pipeline, "name": name, "stage_type": kind, "probability": probability}).Data()["id"]
			}
			open, won := stage("Qualified", "open", 30), stage("Won", "won", 100)
			deal := e.Do("POST", "/v1/deals", map[string]any{"name": "Vetoed", "pipeline_id": pipeline, "stage_id": open}).Data()["id"].(string)
			contact := e.Do("POST", "/v1/contacts", map[string]any{"last_name": "Kept"}).Data()["id"].(string)
			e.Expect(e.Do("DELETE", "/v1/contacts/"+contact, nil), 200, "")
			baseline := len(auditOf(t, e, audit.Query{Limit: 100}))

			e.Expect(e.Do("POST", "/v1/contacts", map[string]any{"first_name": "No last name"}), 422, "validation_failed")
			e.Expect(e.Do("PATCH", "/v1/deals/"+deal, map[string]any{"amount": "lots"}), 422, "validation_failed")
			e.Expect(e.Do("PATCH", "/v1/deals/"+deal, map[string]any{"stage_id": won}), 422, "validation_failed") // deal-rules: won needs close_date
			e.Expect(e.Do("PATCH", "/v1/contacts/"+contact, map[string]any{"first_name": "Archived"}), 409, "conflict")
			e.Expect(e.Do("DELETE", "/v1/contacts/"+contact, nil), 409, "conflict")
			e.Expect(e.Do("PUT", "/v1/deals/"+deal+"/contacts/"+store.NewID(), nil), 404, "")

			// A receipt whose claim another request took over fails after the audit row is written,
			// inside the write's transaction: the write and its audit row roll back together.
			lost := &records.Receipt{Claim: &idempotency.Claim{APIKey: store.NewID(), Key: "taken-over"},
				Respond: func(records.Record, records.Effect) idempotency.Response { return idempotency.Response{Status: 200} }}
			a := records.Actor{Workspace: e.Workspace, Member: e.Member, RequestID: "req-rolled-back"}
			deals, _ := be.Current().Catalog.Resource("deals")
			contacts, _ := be.Current().Catalog.Resource("contacts")
			assoc, _ := deals.Association("contacts")
			dc, err := be.Current().Records.Collection(ctx, a, deals, "")
			if err != nil {
				t.Fatal(err)
			}
			cc, err := be.Current().Records.Collection(ctx, a, contacts, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := be.Current().Records.Create(ctx, a, dc, map[string]any{"name": "Never"}, lost); !errors.Is(err, idempotency.ErrLost) {
				t.Errorf("create: %v", err)
			}
			if _, _, err := be.Current().Records.Update(ctx, a, dc, deal, map[string]any{"name": "Never"}, nil, lost); !errors.Is(err, idempotency.ErrLost) {
				t.Errorf("update: %v", err)
			}
			if _, err := be.Current().Records.Restore(ctx, a, cc, contact, nil, nil, lost); !errors.Is(err, idempotency.ErrLost) {
				t.Errorf("restore: %v", err)
			}
			if _, err := be.Current().Records.PutLink(ctx, a, dc, assoc, deal, contact, map[string]any{}, lost); !errors.Is(err, idempotency.ErrLost) {
				t.Errorf("link: %v", err)
			}
			_, err = be.Current().Records.Import(ctx, records.Actor{Workspace: e.Workspace}, contacts, "", []map[string]any{{"last_name": "Fine"}, {"last_name": "Bad ref", "company_id": store.NewID()}})
			var fl field.ErrorList
			if !errors.As(err, &fl) {
				t.Errorf("import with a missing reference: %v", err)
			}

			if got := auditOf(t, e, audit.Query{Limit: 100}); len(got) != baseline {
				t.Errorf("%d audit entries after failed writes, want %d: %s", len(got), baseline, auditJSON(got[:len(got)-baseline]))
			}
			if got := e.Do("GET", "/v1/deals/"+deal, nil).Data(); got["name"] != "Vetoed" || got["stage_id"] != open {
				t.Errorf("a rolled-back write changed the deal: %v", got)
			}
		})
	}
}

// The admin import path audits every record it writes as "import", without member, key or request,
// custom values included; read-only resources too.
func TestAuditImport(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			be := e.Server.Backend()
			ctx := context.Background()
			if _, err := be.Current().Custom.Create(ctx, e.Workspace, customfields.Def{Resource: "contacts", Key: "source_system", Type: "text"}); err != nil {
				t.Fatal(err)
			}
			admin := records.Actor{Workspace: e.Workspace}
			contacts, _ := be.Current().Catalog.Resource("contacts")
			automations, _ := be.Current().Catalog.Resource("automations")
			n, err := be.Current().Records.Import(ctx, admin, contacts, "", []map[string]any{{"last_name": "Lee", "cf__source_system": "crm-v1"}, {"last_name": "Kim"}})
			if err != nil || n != 2 {
				t.Fatalf("import: %d %v", n, err)
			}
			if _, err := be.Current().Records.Import(ctx, admin, automations, "", []map[string]any{{"name": "Nightly sync"}}); err != nil {
				t.Fatal(err)
			}
			got := auditOf(t, e, audit.Query{})
			if len(got) != 3 {
				t.Fatalf("%d entries for 3 imported records", len(got))
			}
			names := map[string]string{}
			for _, en := range got {
				if en.Action != "import" || en.MemberID != nil || en.KeyID != nil || en.RequestID != nil || en.Previous != nil {
					t.Errorf("import entry %s", auditJSON(en))
				}
				name, _ := en.Changes["last_name"].(string)
				if en.Resource == "automations" {
					name, _ = en.Changes["name"].(string)
				}
				names[name] = auditJSON(en.Changes["custom_fields"])
			}
			if names["Lee"] != `{"source_system":"crm-v1"}` || names["Kim"] != "null" || names["Nightly sync"] != "null" {
				t.Errorf("import entries name %v", names)
			}
			// Synthetic data (recordsctl seed) is imported without audit entries.
			if n, err := be.Current().Records.Import(ctx, records.Actor{Workspace: e.Workspace, Synthetic: true}, contacts, "", []map[string]any{{"last_name": "Generated"}}); err != nil || n != 1 {
				t.Fatalf("synthetic import: %d %v", n, err)
			}
			if got := auditOf(t, e, audit.Query{}); len(got) != 3 {
				t.Errorf("%d entries after a synthetic import, want the 3 of before", len(got))
			}
		})
	}
}

// Filters (resource, record, since), paging, and workspace isolation.
func TestAuditLogFilters(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			var companies []string
			for i := range 5 {
				companies = append(companies, e.Do("POST", "/v1/companies", map[string]any{"name": fmt.Sprintf("Company %d", i)}).Data()["id"].(string))
			}
			e.Expect(e.Do("PATCH", "/v1/companies/"+companies[0], map[string]any{"name": "Renamed"}), 200, "")
			tag := e.Do("POST", "/v1/tags", map[string]any{"name": "vip"}).Data()["id"].(string)

			// Another workspace writes too; none of it may appear.
			ws2, _, key2 := e.NewWorkspace("growth", "admin", "write")
			other := e.DoKey(key2, "POST", "/v1/companies", map[string]any{"name": "Elsewhere"}).Data()["id"].(string)
			e.DoKey(key2, "PATCH", "/v1/companies/"+other, map[string]any{"name": "Elsewhere too"})

			all := auditOf(t, e, audit.Query{})
			if len(all) != 7 {
				t.Fatalf("%d entries in the workspace, want 7: %s", len(all), auditJSON(all))
			}
			if all[0].RecordID != tag || all[1].Action != "update" || all[len(all)-1].RecordID != companies[0] {
				t.Errorf("not newest first: %s", auditJSON(all))
			}
			for _, en := range all {
				if en.RecordID == other {
					t.Errorf("another workspace's entry listed: %s", auditJSON(en))
				}
			}
			if got := auditOf(t, e, audit.Query{Resource: "companies"}); len(got) != 6 {
				t.Errorf("--resource companies: %d entries, want 6", len(got))
			}
			if got := auditOf(t, e, audit.Query{Resource: "companies", RecordID: companies[0]}); len(got) != 2 || got[0].Action != "update" || got[1].Action != "create" {
				t.Errorf("--record: %s", auditJSON(got))
			}
			if got := auditOf(t, e, audit.Query{RecordID: strings.ToUpper(companies[1])}); len(got) != 1 {
				t.Errorf("--record in upper case: %d entries", len(got))
			}
			if got := auditOf(t, e, audit.Query{RecordID: other}); len(got) != 0 {
				t.Errorf("another workspace's record: %s", auditJSON(got))
			}
			if got := auditAs(t, e, records.Actor{Workspace: ws2}, audit.Query{}); len(got) != 2 || got[0].RecordID != other {
				t.Errorf("the other workspace's trail: %s", auditJSON(got))
			}
			since, _ := time.Parse(time.RFC3339Nano, all[1].CreatedAt)
			if got := auditOf(t, e, audit.Query{Since: since}); len(got) < 2 || len(got) == len(all) || got[0].ID != all[0].ID {
				t.Errorf("--since %s: %s", since, auditJSON(got))
			}
			if got := auditOf(t, e, audit.Query{Since: time.Now().Add(time.Hour)}); len(got) != 0 {
				t.Errorf("--since an hour ahead: %d entries", len(got))
			}

			rs := e.Server.Backend().Current().Records
			first, err := rs.AuditLog(ctx, records.Actor{Workspace: e.Workspace}, audit.Query{Limit: 3})
			if err != nil || len(first.Entries) != 3 || first.NextCursor == nil {
				t.Fatalf("first page: %v %v", first, err)
			}
			for name, q := range map[string]audit.Query{
				"unknown resource":     {Resource: "gizmos"},
				"bad record id":        {RecordID: "42"},
				"limit too large":      {Limit: audit.MaxPage + 1},
				"negative limit":       {Limit: -1},
				"cursor of a query":    {Resource: "companies", Cursor: *first.NextCursor},
				"cursor tampered with": {Cursor: *first.NextCursor + "x"},
			} {
				if _, err := rs.AuditLog(ctx, records.Actor{Workspace: e.Workspace}, q); !errors.As(err, new(field.ErrorList)) {
					t.Errorf("%s: %v, want a field error", name, err)
				}
			}
			if _, err := rs.AuditLog(ctx, records.Actor{Workspace: ws2}, audit.Query{Cursor: *first.NextCursor}); err == nil {
				t.Error("a cursor of one workspace is accepted in another")
			}
		})
	}
}

const auditRoles = `version: 1
roles:
  auditor:
    label: Auditor
    permissions: [api.access]
    resources: {"*": read, tags: none}
    field_rules:
      companies: {website: hidden, phone: masked}
`

// Read as a member, the trail follows the member's role: masked fields masked as in responses, hidden
// ones left out and named in withheld, resources the role cannot read and records outside its record
// rule left out. The operator sees every value as stored.
func TestAuditLogAsMember(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			be := e.Server.Backend()
			ctx := context.Background()
			if _, err := be.Members.PutRoles(ctx, e.Workspace, "roles.yaml", []byte(auditRoles), true); err != nil {
				t.Fatal(err)
			}
			viewer := e.NewMember("viewer@audit.example", "viewer", "")
			member := e.NewMember("member@audit.example", "member", "")
			auditor := e.NewMember("auditor@audit.example", "auditor", "")
			memberKey := e.NewKey(member, auth.KeyOptions{Access: "write"})

			contact := e.Do("POST", "/v1/contacts", map[string]any{"last_name": "Lee", "email": "jane@acme.example"}).Data()["id"].(string)
			e.Expect(e.Do("PATCH", "/v1/contacts/"+contact, map[string]any{"email": "j.lee@acme.example", "job_title": "CFO"}), 200, "")
			deal := e.Do("POST", "/v1/deals", map[string]any{"name": "Big one", "amount": 90000}).Data()["id"].(string)
			e.Expect(e.Do("PATCH", "/v1/deals/"+deal, map[string]any{"amount": 95000}), 200, "")
			company := e.Do("POST", "/v1/companies", map[string]any{"name": "Acme", "annual_revenue": 5000000, "website": "https://acme.example", "phone": "+1 415 555 0100"}).Data()["id"].(string)
			e.Do("POST", "/v1/tags", map[string]any{"name": "vip"})
			ownDeal := e.DoKey(memberKey, "POST", "/v1/deals", map[string]any{"name": "Member's own"}).Data()["id"].(string)
			automations, _ := be.Current().Catalog.Resource("automations")
			if _, err := be.Current().Records.Import(ctx, records.Actor{Workspace: e.Workspace}, automations, "", []map[string]any{{"name": "Nightly"}}); err != nil {
				t.Fatal(err)
			}

			byRecord := func(entries []audit.Row) map[string][]audit.Row {
				out := map[string][]audit.Row{}
				for _, en := range entries {
					out[en.RecordID] = append(out[en.RecordID], en)
				}
				return out
			}
			as := func(m string) []audit.Row {
				a, err := be.Current().Records.MemberActor(ctx, e.Workspace, m)
				if err != nil {
					t.Fatal(err)
				}
				return auditAs(t, e, a, audit.Query{})
			}

			// The operator: everything, as stored.
			op := byRecord(auditOf(t, e, audit.Query{}))
			if got := auditJSON(op[contact][0].Changes); got != `{"email":"j.lee@acme.example","job_title":"CFO"}` || auditJSON(op[contact][0].Previous) != `{"email":"jane@acme.example","job_title":null}` {
				t.Errorf("operator's contact update: %s was %s", got, auditJSON(op[contact][0].Previous))
			}
			if got := auditJSON(op[deal][0].Changes); got != `{"amount":95000}` || op[deal][0].Withheld != nil {
				t.Errorf("operator's deal update: %s", got)
			}

			// The viewer: contact emails masked, deal amounts hidden, automations (none) left out.
			vw := byRecord(as(viewer))
			if got := auditJSON(vw[contact][0].Changes); got != `{"email":"j•••@•••.example","job_title":"CFO"}` || auditJSON(vw[contact][0].Previous) != `{"email":"j•••@•••.example","job_title":null}` {
				t.Errorf("viewer's contact update: %s was %s", got, auditJSON(vw[contact][0].Previous))
			}
			if got := vw[contact][1]; got.Action != "create" || got.Changes["email"] != "j•••@•••.example" || got.Changes["last_name"] != "Lee" {
				t.Errorf("viewer's contact create: %s", auditJSON(got))
			}
			if got := vw[deal][0]; auditJSON(got.Changes) != `{}` || auditJSON(got.Previous) != `{}` || auditJSON(got.Withheld) != `["amount"]` {
				t.Errorf("viewer's deal update: %s", auditJSON(got))
			}
			if got := vw[deal][1]; got.Changes["name"] != "Big one" || got.Changes["amount"] != nil || auditJSON(got.Withheld) != `["amount"]` {
				t.Errorf("viewer's deal create: %s", auditJSON(got))
			}
			for _, entries := range vw {
				if entries[0].Resource == "automations" {
					t.Errorf("viewer sees automations: %s", auditJSON(entries))
				}
			}
			if len(byRecord(as(viewer))) != len(op)-1 {
				t.Errorf("viewer sees %d records' entries, operator %d (all but the automation)", len(vw), len(op))
			}

			// The member: only its own deals (record rule owned), annual revenue masked (null).
			mb := byRecord(as(member))
			if _, ok := mb[deal]; ok {
				t.Errorf("member sees the trail of a deal it does not own: %s", auditJSON(mb[deal]))
			}
			if len(mb[ownDeal]) != 1 || auditStr(mb[ownDeal][0].MemberID) != member {
				t.Errorf("member's own deal: %s", auditJSON(mb[ownDeal]))
			}
			if got := mb[company][0].Changes; got["name"] != "Acme" || got["annual_revenue"] != nil || got["website"] != "https://acme.example" {
				t.Errorf("member's company create: %s", auditJSON(got))
			}
			if _, ok := mb[company][0].Changes["annual_revenue"]; !ok {
				t.Errorf("a masked field must stay present (masked), not be left out: %s", auditJSON(mb[company][0]))
			}

			// A workspace role: website hidden, phone masked, tags unreadable.
			au := as(auditor)
			for _, en := range au {
				if en.Resource == "tags" {
					t.Errorf("auditor sees tags: %s", auditJSON(en))
				}
			}
			if got := byRecord(au)[company][0]; got.Changes["phone"] != "+•••" || got.Changes["website"] != nil || auditJSON(got.Withheld) != `["website"]` {
				t.Errorf("auditor's company create: %s", auditJSON(got))
			}
			if got := auditAs(t, e, mustActor(t, e, auditor), audit.Query{Resource: "tags"}); len(got) != 0 {
				t.Errorf("auditor --resource tags: %s", auditJSON(got))
			}

			if _, err := be.Current().Records.MemberActor(ctx, e.Workspace, store.NewID()); !errors.Is(err, records.ErrMemberNotFound) {
				t.Errorf("unknown member: %v", err)
			}
			ws2, m2, _ := e.NewWorkspace("growth", "viewer", "read")
			if _, err := be.Current().Records.MemberActor(ctx, e.Workspace, m2); !errors.Is(err, records.ErrMemberNotFound) {
				t.Errorf("member %s of workspace %s read in another: %v", m2, ws2, err)
			}
		})
	}
}

func mustActor(t *testing.T, e *servertest.Env, member string) records.Actor {
	t.Helper()
	a, err := e.Server.Backend().Current().Records.MemberActor(context.Background(), e.Workspace, member)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A database whose audit_log predates the previous column and the time indexes gets them from the
// migration at start (additive: existing entries stay readable, with previous null), once.
func TestAuditLogMigration(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := servertest.DatabaseURL(t, b)
			st, err := store.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			uuid, ts, js, strict := "uuid", "timestamptz", "jsonb", ""
			if b == servertest.SQLite {
				uuid, ts, js, strict = "TEXT", "TEXT", "TEXT", " STRICT"
			}
			ws, rec := store.NewID(), store.NewID()
			for _, s := range []string{
				`CREATE TABLE audit_log (workspace_id ` + uuid + ` NOT NULL, id ` + uuid + ` NOT NULL, resource TEXT NOT NULL, record_id ` + uuid + ` NOT NULL,
  action TEXT NOT NULL, member_id ` + uuid + `, key_id ` + uuid + `, request_id TEXT, changes ` + js + `, created_at ` + ts + ` NOT NULL, PRIMARY KEY (workspace_id, id))` + strict,
				`CREATE INDEX audit_log_record_idx ON audit_log (workspace_id, resource, record_id, created_at)`,
			} {
				if _, err := st.Exec(ctx, st.Dialect().Bind(s)); err != nil {
					t.Fatal(err)
				}
			}
			legacy := st.Dialect().Bind("INSERT INTO audit_log (workspace_id, id, resource, record_id, action, changes, created_at) VALUES (?, ?, 'companies', ?, 'update', ?, ?)",
				ws, store.NewID(), rec, `{"name":"Old"}`, time.Now().UTC().Truncate(time.Microsecond))
			if _, err := st.Exec(store.WithWorkspace(ctx, ws), legacy); err != nil {
				t.Fatal(err)
			}
			st.Close()

			e := servertest.Start(t, b, servertest.Options{DB: url})
			applied := strings.Join(e.Server.Backend().Migration.Applied, "\n")
			for _, want := range []string{"add column audit_log.previous " + js, "create index audit_log_time_idx", "create index audit_log_resource_idx"} {
				if !strings.Contains(applied, want) {
					t.Errorf("migration did not apply %q:\n%s", want, applied)
				}
			}
			got := auditAs(t, e, records.Actor{Workspace: ws}, audit.Query{})
			if len(got) != 1 || auditJSON(got[0].Changes) != `{"name":"Old"}` || got[0].Previous != nil || got[0].MemberID != nil {
				t.Errorf("legacy entry: %s", auditJSON(got))
			}
			company := e.Do("POST", "/v1/companies", map[string]any{"name": "New"}).Data()["id"].(string)
			e.Expect(e.Do("PATCH", "/v1/companies/"+company, map[string]any{"name": "Newer"}), 200, "")
			if got := auditOf(t, e, audit.Query{RecordID: company}); len(got) != 2 || auditJSON(got[0].Previous) != `{"name":"New"}` {
				t.Errorf("entries after the migration: %s", auditJSON(got))
			}
			be := e.Server.Backend()
			again, err := migrate.Run(ctx, be.Store, be.Current().Catalog, migrate.Options{})
			if err != nil || len(again.Applied) != 0 {
				t.Errorf("second migration: %v %v", again, err)
			}
		})
	}
}
