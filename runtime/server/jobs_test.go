package server_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// awaitJob polls job id with key until it has ended, and returns it.
func awaitJob(t *testing.T, e *servertest.Env, key, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(servertest.Budget(20*time.Second, 60*time.Second))
	for {
		r := e.DoKey(key, "GET", "/v1/jobs/"+id, nil)
		e.Expect(r, 200, "")
		j := r.Data()
		switch j["state"] {
		case "completed", "failed", "cancelled":
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %v: %v", id, j["state"], j)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runImport creates an import with spec, uploads parts and closes it, and returns the finished job.
func runImport(t *testing.T, e *servertest.Env, key string, spec map[string]any, parts ...string) map[string]any {
	t.Helper()
	made := e.DoKey(key, "POST", "/v1/jobs", spec)
	e.Expect(made, 201, "")
	id := made.Data()["id"].(string)
	if made.Data()["state"] != "open" || made.Header.Get("Location") != "/v1/jobs/"+id {
		t.Fatalf("new import: %v, Location %q", made.Data(), made.Header.Get("Location"))
	}
	ct := "text/csv"
	if spec["format"] == "ndjson" {
		ct = "application/x-ndjson"
	}
	for i, p := range parts {
		e.Expect(e.DoKey(key, "PUT", fmt.Sprintf("/v1/jobs/%s/parts/%d", id, i+1), []byte(p), "Content-Type", ct), 200, "")
	}
	e.Expect(e.DoKey(key, "POST", "/v1/jobs/"+id+"/close", nil), 200, "")
	return awaitJob(t, e, key, id)
}

func counts(j map[string]any) string {
	c, _ := j["counts"].(map[string]any)
	return fmt.Sprintf("read %v written %v failed %v unchanged %v", c["read"], c["written"], c["failed"], c["unchanged"])
}

// download fetches a completed export's file.
func download(t *testing.T, e *servertest.Env, key, id string) (string, string) {
	t.Helper()
	r := e.DoKey(key, "GET", "/v1/jobs/"+id+"/download", nil)
	e.Expect(r, 200, "")
	return r.Header.Get("Content-Type"), string(r.Raw)
}

// Bulk import jobs (issue 37), on both backends: a CSV uploaded in two parts (a row spanning them), with
// a custom field column, a mapped column and a bad row: the good rows land, the bad one is in the
// failures with its row number and field; a dry run of the same writes nothing and says the same; an
// upsert import run twice changes nothing the second time; NDJSON works alike; another workspace's key
// and another member's key see no job (404).
func TestImportJobs(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			if _, err := e.Server.Backend().Current().Custom.Create(context.Background(), e.Workspace, customfields.Def{Resource: "companies", Key: "tier", Type: "text"}); err != nil {
				t.Fatal(err)
			}
			data := "Company,domain,employee_count,cf__tier\n" +
				"Acme,acme.example,10,gold\n" +
				"Bolt,bolt.example,lots,silver\n" +
				"\"Crane, Inc\",crane.example,30,bro" // the row goes on in the next part
			rest := "nze\nDune,dune.example,,\n"
			spec := map[string]any{"type": "import", "resource": "companies", "mapping": map[string]any{"Company": "name"}}

			// A dry run validates every row and writes nothing.
			dry := runImport(t, e, e.Key, map[string]any{"type": "import", "resource": "companies", "mapping": map[string]any{"Company": "name"}, "dry_run": true}, data, rest)
			if dry["state"] != "completed" || counts(dry) != "read 4 written 0 failed 1 unchanged 0" {
				t.Errorf("dry run: %v, %s", dry["state"], counts(dry))
			}
			if n := len(e.Do("GET", "/v1/companies?page_size=100", nil).List()); n != 0 {
				t.Errorf("a dry run wrote %d companies", n)
			}

			job := runImport(t, e, e.Key, spec, data, rest)
			if job["state"] != "completed" || counts(job) != "read 4 written 3 failed 1 unchanged 0" {
				t.Fatalf("import: %v %v, %s", job["state"], job["error"], counts(job))
			}
			if p, _ := job["progress"].(map[string]any); fmt.Sprint(p) != "map[fraction:1 seconds_left:0]" {
				t.Errorf("a completed import's progress: %v", job["progress"])
			}
			id := job["id"].(string)
			failures := e.Do("GET", "/v1/jobs/"+id+"/failures", nil)
			e.Expect(failures, 200, "")
			if f := failures.List(); len(f) != 1 || num(f[0], "row") != "2" || num(f[0], "status") != "422" ||
				!strings.Contains(fmt.Sprint(f[0]["errors"]), "employee_count") {
				t.Errorf("failures: %s", failures.Raw)
			}
			successes := e.Do("GET", "/v1/jobs/"+id+"/successes?limit=2", nil)
			e.Expect(successes, 200, "")
			s := successes.List()
			if len(s) != 2 || num(s[0], "row") != "1" || num(s[1], "row") != "3" || successes.NextCursor() != "3" {
				t.Fatalf("successes, first page: %s", successes.Raw)
			}
			crane := e.Do("GET", "/v1/companies/"+s[1]["id"].(string), nil).Data()
			if crane["name"] != "Crane, Inc" || num(crane, "employee_count") != "30" || fmt.Sprint(crane["custom_fields"]) != "map[tier:bronze]" {
				t.Errorf("the row that spans two parts: %v", crane)
			}
			more := e.Do("GET", "/v1/jobs/"+id+"/successes?after=3", nil)
			if l := more.List(); len(l) != 1 || num(l[0], "row") != "4" || more.NextCursor() != "" {
				t.Errorf("successes, second page: %s", more.Raw)
			}
			if n := len(e.Do("GET", "/v1/companies?page_size=100", nil).List()); n != 3 {
				t.Errorf("%d companies after the import, want 3", n)
			}

			// An upsert by domain of the same rows, twice: the second run changes nothing.
			ndjson := `{"domain":"acme.example","name":"Acme","employee_count":10}` + "\n" + `{"domain":"new.example","name":"New"}` + "\n"
			up := map[string]any{"type": "import", "resource": "companies", "format": "ndjson", "operation": "upsert", "key": "domain"}
			first := runImport(t, e, e.Key, up, ndjson)
			second := runImport(t, e, e.Key, up, ndjson)
			if counts(first) != "read 2 written 1 failed 0 unchanged 1" || counts(second) != "read 2 written 0 failed 0 unchanged 2" {
				t.Errorf("upserts: first %s, second %s", counts(first), counts(second))
			}

			// Association targets by unique key: a column mapped to company_id.domain names each contact's
			// company by its domain. A domain no company of the workspace holds — nowhere, or only in another
			// workspace — is the row's failure (reference_not_found on company_id), never another's record.
			_, _, elsewhere := e.NewWorkspace("growth", "admin", "write")
			e.Expect(e.DoKey(elsewhere, "POST", "/v1/companies", map[string]any{"name": "Elsewhere", "domain": "elsewhere.example"}), 201, "")
			people := "first_name,last_name,Employer\nAda,One,acme.example\nBob,Two,nowhere.example\nCy,Three,elsewhere.example\nDee,Four,\n"
			refJob := runImport(t, e, e.Key, map[string]any{"type": "import", "resource": "contacts", "mapping": map[string]any{"Employer": "company_id.domain"}}, people)
			if counts(refJob) != "read 4 written 2 failed 2 unchanged 0" {
				t.Errorf("an import naming companies by domain: %s %v", counts(refJob), refJob["error"])
			}
			refFails := e.Do("GET", "/v1/jobs/"+refJob["id"].(string)+"/failures", nil).List()
			if len(refFails) != 2 || num(refFails[0], "row") != "2" || num(refFails[1], "row") != "3" || !strings.Contains(fmt.Sprint(refFails), "reference_not_found") || !strings.Contains(fmt.Sprint(refFails[1]), "company_id") {
				t.Errorf("failures of the rows naming no company of the workspace: %v", refFails)
			}
			refDone := e.Do("GET", "/v1/jobs/"+refJob["id"].(string)+"/successes", nil).List()
			if len(refDone) != 2 {
				t.Fatalf("successes: %v", refDone)
			}
			ada := e.Do("GET", "/v1/contacts/"+refDone[0]["id"].(string), nil).Data()
			dee := e.Do("GET", "/v1/contacts/"+refDone[1]["id"].(string), nil).Data()
			if ada["company_id"] != s[0]["id"] || dee["company_id"] != nil {
				t.Errorf("Ada's company %v (want Acme's %v), Dee's %v (want none)", ada["company_id"], s[0]["id"], dee["company_id"])
			}
			// A mapping to <field>.<key> whose field is no reference fails the job, saying so.
			badMap := runImport(t, e, e.Key, map[string]any{"type": "import", "resource": "contacts", "mapping": map[string]any{"Employer": "last_name.domain"}}, people)
			if badMap["state"] != "failed" || !strings.Contains(fmt.Sprint(badMap["error"]), "reference field") {
				t.Errorf("a mapping to a field that is no reference: %v %v", badMap["state"], badMap["error"])
			}

			// Refusals: a malformed spec, closing without data, another workspace's and another member's key.
			e.Expect(e.Do("POST", "/v1/jobs", map[string]any{"type": "import", "resource": "companies", "operation": "upsert"}), 400, "")
			e.Expect(e.Do("POST", "/v1/jobs", map[string]any{"type": "move", "resource": "nope"}), 400, "")
			empty := e.Do("POST", "/v1/jobs", spec)
			e.Expect(empty, 201, "")
			e.Expect(e.Do("POST", "/v1/jobs/"+empty.Data()["id"].(string)+"/close", nil), 409, "conflict")
			e.Expect(e.Do("POST", "/v1/jobs/"+empty.Data()["id"].(string)+"/cancel", nil), 200, "")
			// Idempotency-Key: a repeat answers the job made, and makes no second one; another body is 422.
			once := e.Do("POST", "/v1/jobs", spec, "Idempotency-Key", "import-once")
			again := e.Do("POST", "/v1/jobs", spec, "Idempotency-Key", "import-once")
			e.Expect(again, 201, "")
			if again.Data()["id"] != once.Data()["id"] || again.Header.Get("Idempotent-Replayed") != "true" || again.Header.Get("Location") != once.Header.Get("Location") {
				t.Errorf("a repeated job creation: %s then %s (replayed %q)", once.Raw, again.Raw, again.Header.Get("Idempotent-Replayed"))
			}
			e.Expect(e.Do("POST", "/v1/jobs", map[string]any{"type": "export", "resource": "companies"}, "Idempotency-Key", "import-once"), 422, "idempotency_key_reused")
			e.Expect(e.Do("POST", "/v1/jobs/"+once.Data()["id"].(string)+"/cancel", nil), 200, "")
			_, _, other := e.NewWorkspace("growth", "admin", "write")
			mate := e.NewKey(e.NewMember("mate@example.com", "member", ""), auth.KeyOptions{Access: "write"})
			for _, k := range []string{other, mate} {
				for _, path := range []string{"", "/failures", "/successes"} {
					e.Expect(e.DoKey(k, "GET", "/v1/jobs/"+id+path, nil), 404, "not_found")
				}
				e.Expect(e.DoKey(k, "POST", "/v1/jobs/"+id+"/cancel", nil), 404, "not_found")
				if l := e.DoKey(k, "GET", "/v1/jobs", nil).List(); len(l) != 0 {
					t.Errorf("another's key lists %d jobs", len(l))
				}
			}
			if l := e.Do("GET", "/v1/jobs?limit=2", nil); len(l.List()) != 2 || l.NextCursor() == "" {
				t.Errorf("the admin's jobs, first page: %s", l.Raw)
			}

			// An import's rows count against the monthly quota, a chunk (2,000 rows) at a time: with 2,020
			// left, the first chunk lands and the job fails on the second, saying why.
			qws, _, qkey := e.NewWorkspace("growth", "admin", "write")
			quota := int64(2020)
			if err := e.Server.Backend().Members.SetLimits(context.Background(), qws, auth.Limits{MonthlyQuota: &quota}); err != nil {
				t.Fatal(err)
			}
			var big strings.Builder
			big.WriteString("name\n")
			for i := range 2500 {
				fmt.Fprintf(&big, "Quota %d\n", i)
			}
			made := e.DoKey(qkey, "POST", "/v1/jobs", map[string]any{"type": "import", "resource": "companies"})
			e.Expect(made, 201, "")
			qid := made.Data()["id"].(string)
			e.Expect(e.DoKey(qkey, "PUT", "/v1/jobs/"+qid+"/parts/1", []byte(big.String()), "Content-Type", "text/csv"), 200, "")
			e.Expect(e.DoKey(qkey, "POST", "/v1/jobs/"+qid+"/close", nil), 200, "")
			deadline := time.Now().Add(servertest.Budget(20*time.Second, 60*time.Second))
			for {
				j, err := e.Server.Backend().Jobs.Get(context.Background(), qws, qid)
				if err != nil {
					t.Fatal(err)
				}
				if j.Final() {
					if j.State != "failed" || j.RowsWritten != 2000 || !strings.Contains(j.Error, "quota") {
						t.Errorf("an import past the quota: %s, %d written, %q", j.State, j.RowsWritten, j.Error)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the import past the quota is still %s", j.State)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// Export jobs (issue 37), on both backends: a CSV export of a filtered, sorted list is the list, row for
// row; an export as a viewer never holds a masked value in clear nor a hidden field; NDJSON holds the
// records as a list shows them.
func TestExportJobs(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			company := e.Do("POST", "/v1/companies", map[string]any{"name": "Exported Co"}).Data()["id"].(string)
			ctx := context.Background()
			var scoreID string
			for _, d := range []customfields.Def{{Resource: "contacts", Key: "score", Type: "decimal"}, {Resource: "contacts", Key: "tags", Type: "multi_select", Options: []string{"vip", "new, \"quoted\""}}} {
				made, err := e.Server.Backend().Current().Custom.Create(ctx, e.Workspace, d)
				if err != nil {
					t.Fatal(err)
				}
				if d.Key == "score" {
					scoreID = made.ID
				}
			}
			for i := range 25 {
				body := map[string]any{"first_name": fmt.Sprintf("P%02d", i), "last_name": "Export", "email": fmt.Sprintf("p%02d@secret.example", i), "company_id": company}
				body["custom_fields"] = map[string]any{"score": float64(i) + 0.25}
				if i%3 == 0 {
					body["custom_fields"] = map[string]any{"score": float64(i) + 0.25, "tags": []any{"vip", "new, \"quoted\""}}
				}
				if i%4 == 0 {
					body["job_title"] = " Lead, \"ops\"\nteam"
				}
				e.Expect(e.Do("POST", "/v1/contacts", body), 201, "")
			}
			export := func(key string, body map[string]any) (map[string]any, string, string) {
				t.Helper()
				r := e.DoKey(key, "POST", "/v1/jobs", body)
				e.Expect(r, 201, "")
				j := awaitJob(t, e, key, r.Data()["id"].(string))
				if j["state"] != "completed" {
					t.Fatalf("export: %v", j)
				}
				ct, file := download(t, e, key, j["id"].(string))
				return j, ct, file
			}
			q := map[string]any{"sort": "first_name", "order": "desc", "filters": []any{map[string]any{"field": "last_name", "op": "eq", "value": "Export"}}}
			j, ct, file := export(e.Key, map[string]any{"type": "export", "resource": "contacts", "query": q})
			rows, err := csv.NewReader(strings.NewReader(file)).ReadAll()
			if err != nil || len(rows) != 26 || !strings.HasPrefix(ct, "text/csv") || counts(j) != "read 25 written 25 failed 0 unchanged 0" {
				t.Fatalf("export: %v %d rows, %s, %s", err, len(rows), ct, counts(j))
			}
			col := slices.Index(rows[0], "first_name")
			email := slices.Index(rows[0], "email")
			if col < 0 || email < 0 || rows[1][col] != "P24" || rows[25][col] != "P00" || rows[1][email] != "p24@secret.example" {
				t.Errorf("export header %v, first %v, last %v", rows[0], rows[1], rows[25])
			}

			// A viewer: emails masked, never in clear.
			viewer := e.NewKey(e.NewMember("viewer@example.com", "viewer", ""), auth.KeyOptions{Access: "read"})
			_, _, file = export(viewer, map[string]any{"type": "export", "resource": "contacts", "query": q})
			if strings.Contains(file, "@secret.example") || !strings.Contains(file, "p•••@•••.example") {
				t.Errorf("a viewer's export shows emails in clear or not masked:\n%s", file)
			}
			// A query one statement reads is exported from one snapshot (records.Service.Stream); one sorted
			// by a custom field is walked a page at a time. Sorted by score or by first name, the records come
			// in the same order, so the two files are the same bytes: custom numbers and lists, quoted text,
			// nulls and masks alike, as each key sees them.
			for _, key := range []string{e.Key, viewer} {
				walked := map[string]any{}
				for k, v := range q {
					walked[k] = v
				}
				walked["sort"] = "cfv:" + scoreID
				_, _, streamed := export(key, map[string]any{"type": "export", "resource": "contacts", "query": q})
				_, _, paged := export(key, map[string]any{"type": "export", "resource": "contacts", "query": walked})
				if streamed != paged || !strings.Contains(streamed, "cf__score") || !strings.Contains(streamed, `"vip;new, ""quoted"""`) || !strings.Contains(streamed, "21.25") {
					t.Errorf("the streamed export differs from the walked one:\n%s\n---\n%s", streamed, paged)
				}
			}
			// An NDJSON export of deals: the viewer's role hides amount.
			e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": "Big deal", "amount": 123456}), 201, "")
			_, ct, file = export(viewer, map[string]any{"type": "export", "resource": "deals", "format": "ndjson"})
			if strings.Contains(file, "amount") || strings.Contains(file, "123456") || ct != "application/x-ndjson" || strings.Count(file, "\n") != 1 {
				t.Errorf("a viewer's deals export (%s):\n%s", ct, file)
			}
			// A read key may not import.
			e.Expect(e.DoKey(viewer, "POST", "/v1/jobs", map[string]any{"type": "import", "resource": "contacts"}), 403, "")
			// A bad query is refused at once.
			e.Expect(e.Do("POST", "/v1/jobs", map[string]any{"type": "export", "resource": "contacts", "query": map[string]any{"sort": "nope"}}), 400, "")
		})
	}
}

// Jobs of a data model's records (issue 37), on both backends: an import names the model (model_id) and
// its rows carry the model's fields as cf__ columns (a row without a required field fails alone); an
// export of the model's records (model_id in its query, as a list takes it) holds them and none of
// another model's; data_model_records without a model_id is 400, a model_id that names no model 404,
// and a model_id on another resource 400.
func TestDataModelJobs(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			ak := e.NewKey(e.Member, auth.KeyOptions{Access: "admin"})
			model := func(name string) string {
				r := e.DoKey(ak, "POST", "/v1/admin/data-models", map[string]any{"name": name, "fields": map[string]any{"plate": map[string]any{"type": "string", "required": true}, "seats": map[string]any{"type": "integer"}}})
				e.Expect(r, 201, "")
				return r.Data()["id"].(string)
			}
			cars, boats := model("Cars"), model("Boats")
			e.Expect(e.Do("POST", "/v1/data_model_records?model_id="+boats, map[string]any{"name": "Dinghy", "cf__plate": "B-1"}), 201, "")
			job := runImport(t, e, e.Key, map[string]any{"type": "import", "resource": "data_model_records", "model_id": cars}, "name,cf__plate,cf__seats\nVan,V-1,8\nMini,M-2,4\nBad,,2\n")
			if counts(job) != "read 3 written 2 failed 1 unchanged 0" || job["state"] != "completed" {
				t.Fatalf("a data model's import: %v %s %v", job["state"], counts(job), job["error"])
			}
			if list := e.Do("GET", "/v1/data_model_records?model_id="+cars, nil).List(); len(list) != 2 || !strings.Contains(fmt.Sprint(list), "map[plate:M-2 seats:4]") {
				t.Errorf("the model's records after the import: %v", list)
			}
			r := e.Do("POST", "/v1/jobs", map[string]any{"type": "export", "resource": "data_model_records", "query": map[string]any{"model_id": cars, "sort": "name"}})
			e.Expect(r, 201, "")
			j := awaitJob(t, e, e.Key, r.Data()["id"].(string))
			if j["state"] != "completed" {
				t.Fatalf("a data model's export: %v", j)
			}
			_, file := download(t, e, e.Key, j["id"].(string))
			rows, err := csv.NewReader(strings.NewReader(file)).ReadAll()
			if err != nil || len(rows) != 3 || !slices.Contains(rows[0], "cf__plate") || !strings.Contains(file, "V-1") || strings.Contains(file, "B-1") {
				t.Errorf("the model's export (%v):\n%s", err, file)
			}
			e.Expect(e.Do("POST", "/v1/jobs", map[string]any{"type": "import", "resource": "data_model_records"}), 400, "invalid_request")
			e.Expect(e.Do("POST", "/v1/jobs", map[string]any{"type": "export", "resource": "data_model_records", "model_id": "0190a6d4-0000-7000-8000-000000000001"}), 404, "not_found")
			e.Expect(e.Do("POST", "/v1/jobs", map[string]any{"type": "import", "resource": "companies", "model_id": cars}), 400, "invalid_request")
		})
	}
}
