package server_test

// A record's history (README "History"): GET /v1/{resource}/{id}/history, the record's audit entries
// newest first, in keyset pages, readable exactly when the record is, with the caller's masks applied.

import (
	"context"
	"fmt"
	"github.com/workspace-records/records/runtime/customfields"
	"net/url"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// historyWalk reads the whole history at path with key, size entries a page, and returns its entries in
// the order given; it fails the test when the walk does not end.
func historyWalk(t *testing.T, e *servertest.Env, key, path string, size int) []map[string]any {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var out []map[string]any
	cursor := ""
	for range 100 {
		q := fmt.Sprintf("%spage_size=%d", sep, size)
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		res := e.DoKey(key, "GET", path+q, nil)
		e.Expect(res, 200, "")
		page := res.List()
		out = append(out, page...)
		meta, _ := res.Body["meta"].(map[string]any)
		cursor = res.NextCursor()
		if (cursor != "") != (meta["has_more"] == true) {
			t.Fatalf("%s: next_cursor %q with has_more %v", path, cursor, meta["has_more"])
		}
		if fmt.Sprint(meta["page_size"]) != fmt.Sprint(size) {
			t.Errorf("%s: meta.page_size %v, want %d", path, meta["page_size"], size)
		}
		if len(page) > size || (cursor != "" && len(page) != size) {
			t.Fatalf("%s: a page of %d entries (page_size %d, next_cursor %q)", path, len(page), size, cursor)
		}
		if cursor == "" {
			return out
		}
	}
	t.Fatalf("%s: the walk does not end", path)
	return nil
}

// actions are the history entries' actions, comma-separated (as types are the feed's event types).
func actions(entries []map[string]any) string { return joinMember(entries, "action") }

func TestHistory(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()

			// create, update, archive, restore: newest first, with the values each wrote.
			created := e.Do("POST", "/v1/companies", map[string]any{"name": "Old name", "annual_revenue": 1234567})
			e.Expect(created, 201, "")
			id := created.Data()["id"].(string)
			path := "/v1/companies/" + id + "/history"
			updated := e.Do("PATCH", "/v1/companies/"+id, map[string]any{"name": "New name", "annual_revenue": 7654321})
			e.Expect(updated, 200, "")
			e.Expect(e.Do("DELETE", "/v1/companies/"+id, map[string]any{"reason": "merged"}), 200, "")
			// The history of an archived record is readable, as the record is.
			if got := actions(historyWalk(t, e, e.Key, path, 25)); got != "archive,update,create" {
				t.Errorf("the archived record's history: %s", got)
			}
			e.Expect(e.Do("POST", "/v1/companies/"+id+"/restore", nil), 200, "")

			res := e.Do("GET", path, nil)
			e.Expect(res, 200, "")
			entries := res.List()
			if got := actions(entries); got != "restore,archive,update,create" {
				t.Fatalf("history actions %s, want restore,archive,update,create: %s", got, res.Raw)
			}
			if meta := res.Body["meta"].(map[string]any); meta["has_more"] != false || meta["next_cursor"] != nil || fmt.Sprint(meta["page_size"]) != "25" {
				t.Errorf("meta of a whole history: %v", meta)
			}
			for i, en := range entries {
				if en["record_id"] != id || en["resource"] != "companies" {
					t.Errorf("entry %d names %v %v", i, en["resource"], en["record_id"])
				}
				actor, _ := en["actor"].(map[string]any)
				if actor["member_id"] != e.Member || actor["key_id"] == nil || actor["request_id"] == nil {
					t.Errorf("entry %d actor %v", i, actor)
				}
				if i > 0 && fmt.Sprint(en["created_at"]) > fmt.Sprint(entries[i-1]["created_at"]) {
					t.Errorf("entry %d (%v) is newer than entry %d (%v)", i, en["created_at"], i-1, entries[i-1]["created_at"])
				}
			}
			update := entries[2]
			if actor := update["actor"].(map[string]any); actor["request_id"] != updated.Header.Get("X-Request-Id") {
				t.Errorf("the update's entry names request %v, the update was %s", actor["request_id"], updated.Header.Get("X-Request-Id"))
			}
			changes, _ := update["changes"].(map[string]any)
			previous, _ := update["previous"].(map[string]any)
			if changes["name"] != "New name" || previous["name"] != "Old name" || fmt.Sprint(changes["annual_revenue"]) != "7654321" || fmt.Sprint(previous["annual_revenue"]) != "1234567" {
				t.Errorf("the update's entry: changes %v, previous %v", changes, previous)
			}
			if _, ok := changes["updated_at"]; ok || len(changes) != 2 {
				t.Errorf("the update's changes hold more than the changed fields: %v", changes)
			}
			if c := entries[3]["changes"].(map[string]any); c["name"] != "Old name" || entries[3]["previous"] != nil {
				t.Errorf("the create's entry: %v", entries[3])
			}
			if c := entries[1]["changes"].(map[string]any); c["archive_reason"] != "merged" {
				t.Errorf("the archive's entry: %v", entries[1])
			}

			// Paging: every page size walks every entry once, in the same order.
			for _, size := range []int{1, 2, 3, 4, 100} {
				walk := historyWalk(t, e, e.Key, path, size)
				var ids, want []string
				for i := range walk {
					ids = append(ids, fmt.Sprint(walk[i]["id"]))
				}
				for i := range entries {
					want = append(want, fmt.Sprint(entries[i]["id"]))
				}
				if strings.Join(ids, ",") != strings.Join(want, ",") {
					t.Errorf("page_size=%d walks %v, want %v", size, ids, want)
				}
			}
			// HEAD beside GET, and the other methods refused with Allow.
			head := e.Do("HEAD", path, nil)
			if head.Status != 200 || len(head.Raw) != 0 {
				t.Errorf("HEAD %s: %d %q", path, head.Status, head.Raw)
			}
			for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
				res := e.Do(m, path, nil)
				e.Expect(res, 405, "method_not_allowed")
				if got := res.Header.Get("Allow"); got != "GET, HEAD" {
					t.Errorf("%s %s: Allow %q", m, path, got)
				}
			}

			// Cursors: a forged, an edited, and another record's cursor are 400.
			first := e.Do("GET", path+"?page_size=1", nil)
			e.Expect(first, 200, "")
			cursor := first.NextCursor()
			if cursor == "" {
				t.Fatal("no cursor after a page of 1")
			}
			other := e.Do("POST", "/v1/companies", map[string]any{"name": "Other"}).Data()["id"].(string)
			e.Expect(e.Do("PATCH", "/v1/companies/"+other, map[string]any{"name": "Other, renamed"}), 200, "")
			otherCursor := e.Do("GET", "/v1/companies/"+other+"/history?page_size=1", nil).NextCursor()
			edited := []byte(cursor)
			i := len(edited) / 2
			if edited[i] == 'A' {
				edited[i] = 'B'
			} else {
				edited[i] = 'A'
			}
			listCursor := e.Do("GET", "/v1/companies?page_size=1&cursor=start", nil).NextCursor()
			for _, c := range []string{string(edited), otherCursor, listCursor, "not-a-cursor", strings.Repeat("x", 5000), cursor + "x"} {
				res := e.Do("GET", path+"?cursor="+url.QueryEscape(c), nil)
				e.Expect(res, 400, "invalid_request")
				if !strings.Contains(string(res.Raw), `"field":"cursor"`) {
					t.Errorf("cursor %.40q: the refusal does not name cursor: %s", c, res.Raw)
				}
			}
			e.Expect(e.Do("GET", path+"?cursor=start", nil), 200, "")

			// Bad input is 400 (never a 500); a well-formed unknown id is 404.
			for _, p := range []string{
				"/v1/companies/not-a-uuid/history", path + "?page_size=0", path + "?page_size=101", path + "?page_size=x",
				path + "?page_size=1&page_size=2", path + "?page=2", path + "?sort=name", path + "?model_id=" + id, path + "?filter=%zz",
			} {
				e.Expect(e.Do("GET", p, nil), 400, "invalid_request")
			}
			e.Expect(e.Do("GET", "/v1/companies/0190a6d4-0000-7000-8000-00000000beef/history", nil), 404, "not_found")
			e.Expect(e.Do("GET", "/v1/deals/"+id+"/history", nil), 404, "not_found") // a company's id as a deal's
			e.Expect(e.Do("GET", "/v1/nothing/"+id+"/history", nil), 404, "unknown_resource")

			// Access as for a get: a key whose allowlist leaves the resource out is 403; the member role
			// reads the company's history with annual_revenue masked (its field rule).
			dealsOnly := e.NewKey(e.Member, auth.KeyOptions{Access: "read", Resources: []string{"deals"}})
			e.Expect(e.DoKey(dealsOnly, "GET", "/v1/companies/"+id, nil), 403, "insufficient_scope")
			e.Expect(e.DoKey(dealsOnly, "GET", path, nil), 403, "insufficient_scope")
			member := e.NewKey(e.NewMember("m@x.example", "member", ""), auth.KeyOptions{Access: "read"})
			mres := e.DoKey(member, "GET", path, nil)
			e.Expect(mres, 200, "")
			for _, secret := range []string{"1234567", "7654321"} {
				if strings.Contains(string(mres.Raw), secret) {
					t.Errorf("the member's history shows masked annual_revenue %s: %s", secret, mres.Raw)
				}
			}
			if m := mres.List(); len(m) != 4 {
				t.Errorf("the member reads %d entries", len(m))
			} else {
				c, p := m[2]["changes"].(map[string]any), m[2]["previous"].(map[string]any)
				if _, ok := c["annual_revenue"]; !ok || c["name"] != "New name" || p["name"] != "Old name" {
					t.Errorf("the member's update entry: %v %v", c, p)
				}
				if _, ok := p["annual_revenue"]; !ok {
					t.Errorf("the member's update entry leaves out masked annual_revenue: %v", p)
				}
			}

			// A link written from a deal is in the deal's history; a key that may not use contacts sees it
			// withheld.
			deal := e.Do("POST", "/v1/deals", map[string]any{"name": "Linked deal"}).Data()["id"].(string)
			contact := e.Do("POST", "/v1/contacts", map[string]any{"first_name": "Ann", "last_name": "Lee", "email": "ann.lee@x.example"})
			e.Expect(contact, 201, "")
			contactID := contact.Data()["id"].(string)
			e.Expect(e.Do("PUT", "/v1/deals/"+deal+"/contacts/"+contactID, nil), 200, "")
			dh := e.Do("GET", "/v1/deals/"+deal+"/history", nil).List()
			if got := actions(dh); got != "link,create" || dh[0]["changes"].(map[string]any)["contacts"] != contactID {
				t.Errorf("the deal's history: %v", dh)
			}
			dres := e.DoKey(dealsOnly, "GET", "/v1/deals/"+deal+"/history", nil)
			e.Expect(dres, 200, "")
			if l := dres.List(); len(l) != 2 || fmt.Sprint(l[0]["withheld"]) != "[contacts]" || strings.Contains(string(dres.Raw), contactID) {
				t.Errorf("a deals-only key reads the link's entry: %s", dres.Raw)
			}

			// Data model records: model_id as on the other routes there.
			ctx := context.Background()
			modelID, err := e.Server.Backend().Current().Custom.CreateModel(ctx, e.Workspace, "Vendors", map[string]customfields.ModelField{"category": {Type: "string"}})
			if err != nil {
				t.Fatal(err)
			}
			otherModel, err := e.Server.Backend().Current().Custom.CreateModel(ctx, e.Workspace, "Partners", map[string]customfields.ModelField{"category": {Type: "string"}})
			if err != nil {
				t.Fatal(err)
			}
			rec := e.Do("POST", "/v1/data_model_records?model_id="+modelID, map[string]any{"name": "Vendor", "cf__category": "paper"})
			e.Expect(rec, 201, "")
			recID := rec.Data()["id"].(string)
			e.Expect(e.Do("PATCH", "/v1/data_model_records/"+recID+"?model_id="+modelID, map[string]any{"cf__category": "ink"}), 200, "")
			mh := e.Do("GET", "/v1/data_model_records/"+recID+"/history?model_id="+modelID, nil)
			e.Expect(mh, 200, "")
			if l := mh.List(); actions(l) != "update,create" {
				t.Errorf("the data model record's history: %s", mh.Raw)
			} else if c, _ := l[0]["changes"].(map[string]any)["custom_fields"].(map[string]any); c["category"] != "ink" {
				t.Errorf("the data model record's update entry: %v", l[0])
			}
			e.Expect(e.Do("GET", "/v1/data_model_records/"+recID+"/history", nil), 400, "invalid_request")
			e.Expect(e.Do("GET", "/v1/data_model_records/"+recID+"/history?model_id="+otherModel, nil), 404, "not_found")
			e.Expect(e.Do("GET", "/v1/data_model_records/"+recID+"/history?model_id=x", nil), 400, "invalid_request")
		})
	}
}
