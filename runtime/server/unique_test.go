package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// expectKeyConflict checks a 409 conflict naming unique key key, which never names the record that
// holds the value (other, whom the caller's record rules may hide).
func expectKeyConflict(t *testing.T, e *servertest.Env, r *servertest.Response, key, other string) {
	t.Helper()
	e.Expect(r, http.StatusConflict, "conflict")
	errBody, _ := r.Body["error"].(map[string]any)
	details, _ := errBody["details"].(map[string]any)
	if details["unique_key"] != key {
		t.Errorf("details.unique_key = %v, want %s: %s", details["unique_key"], key, r.Raw)
	}
	if msg, _ := errBody["message"].(string); !strings.Contains(msg, key) {
		t.Errorf("message does not name %s: %q", key, msg)
	}
	items, _ := details["errors"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["field"] != key || items[0].(map[string]any)["code"] != "duplicate" {
		t.Errorf("details.errors = %v, want one duplicate of %s", items, key)
	}
	if other != "" && strings.Contains(string(r.Raw), other) {
		t.Errorf("the 409 names the record holding the value: %s", r.Raw)
	}
}

// Unique keys (companies.domain, contacts.email): one active record of a workspace per value; a create,
// update or restore taking a held value is 409 conflict naming the key; archived records and nulls hold
// no value; another workspace is not affected; the catalog and the document list the keys.
func TestUniqueKeys(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			first := e.Do("POST", "/v1/companies", map[string]any{"name": "Acme", "domain": "acme.example"})
			e.Expect(first, 201, "")
			id := first.Data()["id"].(string)

			expectKeyConflict(t, e, e.Do("POST", "/v1/companies", map[string]any{"name": "Acme 2", "domain": "acme.example"}), "domain", id)
			// Values compare exactly as stored.
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Acme 3", "domain": "ACME.example"}), 201, "")
			// Nulls never collide.
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "No domain 1"}), 201, "")
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "No domain 2", "domain": nil}), 201, "")

			second := e.Do("POST", "/v1/companies", map[string]any{"name": "Beta", "domain": "beta.example"})
			e.Expect(second, 201, "")
			sid := second.Data()["id"].(string)
			expectKeyConflict(t, e, e.Do("PATCH", "/v1/companies/"+sid, map[string]any{"domain": "acme.example"}), "domain", id)
			// Writing a record's own value again is no conflict.
			e.Expect(e.Do("PATCH", "/v1/companies/"+id, map[string]any{"domain": "acme.example", "name": "Acme Inc"}), 200, "")

			// Archived records hold no value; restoring one whose value is now taken is 409.
			e.Expect(e.Do("DELETE", "/v1/companies/"+id, nil), 200, "")
			third := e.Do("POST", "/v1/companies", map[string]any{"name": "Acme again", "domain": "acme.example"})
			e.Expect(third, 201, "")
			expectKeyConflict(t, e, e.Do("POST", "/v1/companies/"+id+"/restore", nil), "domain", third.Data()["id"].(string))
			if got := e.Do("GET", "/v1/companies/"+id, nil).Data(); got["archived"] != true {
				t.Errorf("refused restore changed the record: %v", got)
			}
			e.Expect(e.Do("PATCH", "/v1/companies/"+third.Data()["id"].(string), map[string]any{"domain": "acme2.example"}), 200, "")
			e.Expect(e.Do("POST", "/v1/companies/"+id+"/restore", nil), 200, "")

			// contacts.email
			c1 := e.Do("POST", "/v1/contacts", map[string]any{"first_name": "Ada", "last_name": "L", "email": "ada@acme.example"})
			e.Expect(c1, 201, "")
			expectKeyConflict(t, e, e.Do("POST", "/v1/contacts", map[string]any{"first_name": "Ada", "last_name": "M", "email": "ada@acme.example"}), "email", c1.Data()["id"].(string))

			// Another workspace holds its own values.
			_, _, other := e.NewWorkspace("growth", "admin", "write")
			e.Expect(e.DoKey(other, "POST", "/v1/companies", map[string]any{"name": "Acme", "domain": "acme.example"}), 201, "")

			// The catalog and the document list the keys.
			cat := e.Do("GET", "/v1/resources/companies", nil).Data()
			if keys, _ := cat["unique_keys"].([]any); len(keys) != 1 || keys[0] != "domain" {
				t.Errorf("unique_keys = %v", cat["unique_keys"])
			}
			for _, f := range cat["fields"].([]any) {
				f := f.(map[string]any)
				if want := f["key"] == "domain"; f["unique"] != want {
					t.Errorf("field %v: unique = %v", f["key"], f["unique"])
				}
			}
			if doc := string(e.Do("GET", "/v1/openapi.json", nil).Raw); !strings.Contains(doc, `"x-unique"`) {
				t.Errorf("the document has no x-unique")
			}
		})
	}
}

// Concurrent creates of one value of a unique key leave exactly one record: 50 creates at once give one
// 201 and 49 × 409 conflict, on both backends.
func TestUniqueKeyConcurrentCreates(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e, client := concurrentEnv(t, b)
			raceCreates(t, e, client, "domain", "race.example")
			if l := e.Do("GET", "/v1/companies?filter="+url.QueryEscape(`[{"field":"domain","op":"eq","value":"race.example"}]`), nil).List(); len(l) != 1 {
				t.Errorf("%d records hold the value", len(l))
			}
		})
	}
}

// Adding unique: true to a field creates its index at the next migration; when active records of a
// workspace already share a value, the migration fails naming the resource, the field and the value,
// and applies nothing (the other changes of the same run are not left behind). Once the duplicate is
// archived the migration passes; removing unique: true drops the index.
func TestUniqueKeyMigration(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			db := servertest.DatabaseURL(t, b)
			v1 := definitionsWith(t, map[string]string{"widgets.yaml": widgetsYAML(t)})
			e := servertest.Start(t, b, servertest.Options{DB: db, DefinitionsDir: v1})
			ids := []string{}
			for range 2 {
				r := e.Do("POST", "/v1/widgets", map[string]any{"name": "Twin"})
				e.Expect(r, 201, "")
				ids = append(ids, r.Data()["id"].(string))
			}

			v2 := definitionsWith(t, map[string]string{"widgets.yaml": strings.Replace(strings.Replace(widgetsYAML(t),
				"  name: {type: string, required: true, max_length: 120, sortable: true, filterable: true}\n",
				"  name: {type: string, required: true, max_length: 120, sortable: true, filterable: true, unique: true}\n", 1),
				"  notes: {type: text, max_length: 5000}\n",
				"  notes: {type: text, max_length: 5000}\n  colour: {type: string, max_length: 20}\n", 1)})
			cfg := config.Default(func(string) string { return "" })
			cfg.DB, cfg.DefinitionsDir = db, v2
			_, err := server.Open(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), "widgets.name") || !strings.Contains(err.Error(), `"Twin"`) {
				t.Fatalf("migration over duplicates: %v", err)
			}
			// Nothing of the failed run was applied: the column it would have added is not there.
			e.Expect(e.Do("GET", "/v1/widgets?fields=name", nil), 200, "")
			cols := e.Do("GET", "/v1/widgets/"+ids[0], nil).Data()
			if _, ok := cols["colour"]; ok {
				t.Errorf("the failed migration left a column behind")
			}

			e.Expect(e.Do("DELETE", "/v1/widgets/"+ids[1], nil), 200, "")
			be := openBackend(t, db, v2, false)
			if applied := strings.Join(be.Migration.Applied, "\n"); !strings.Contains(applied, "create index rec_widgets_name_unique_idx") || !strings.Contains(applied, "add column rec_widgets.colour") {
				t.Errorf("applied:\n%s", applied)
			}
			be.Close()
			e2 := servertest.Start(t, b, servertest.Options{DB: db, DefinitionsDir: v2})
			expectKeyConflict(t, e2, e2.DoKey(e.Key, "POST", "/v1/widgets", map[string]any{"name": "Twin"}), "name", ids[0])
			expectKeyConflict(t, e2, e2.DoKey(e.Key, "POST", "/v1/widgets/"+ids[1]+"/restore", nil), "name", ids[0])

			v3 := definitionsWith(t, map[string]string{"widgets.yaml": widgetsYAML(t)})
			be = openBackend(t, db, v3, false)
			if !contains(be.Migration.Applied, "drop index rec_widgets_name_unique_idx") {
				t.Errorf("applied without unique: %v", be.Migration.Applied)
			}
			be.Close()
		})
	}
}

// raceCreates sends writers creates of companies holding value under the unique key at once: exactly one
// is created, every other is 409 conflict.
func raceCreates(t *testing.T, e *servertest.Env, client *http.Client, key, value string) {
	t.Helper()
	var created, conflicts atomic.Int32
	together(writers, func(i int) {
		r := try(t, e, client, e.Key, "POST", "/v1/companies", map[string]any{"name": fmt.Sprintf("Racer %d", i), key: value})
		switch {
		case r.Status == 201:
			created.Add(1)
		case r.Status == 409 && r.Code() == "conflict":
			conflicts.Add(1)
		default:
			t.Errorf("create %d: %d %s", i, r.Status, r.Raw)
		}
	})
	if created.Load() != 1 || conflicts.Load() != writers-1 {
		t.Errorf("created %d, conflicts %d; want 1 and %d", created.Load(), conflicts.Load(), writers-1)
	}
}
