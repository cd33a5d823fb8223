package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// num reads a JSON number member as text ("" for null or absent).
func num(rec map[string]any, key string) string {
	switch v := rec[key].(type) {
	case json.Number:
		return v.String()
	case float64:
		return fmt.Sprint(v)
	case nil:
		return ""
	default:
		return fmt.Sprintf("%v", v)
	}
}

// A formula field is computed on create and on every update of an input, is the same on get, list and
// query, sorts and filters like a stored field, cannot be written, and is as restricted as its inputs.
func TestFormulaFields(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			everywhere := func(id, want string) {
				t.Helper()
				got := e.Do("GET", "/v1/deals/"+id, nil)
				e.Expect(got, 200, "")
				if w := num(got.Data(), "weighted_amount"); w != want {
					t.Errorf("get: weighted_amount %q, want %q", w, want)
				}
				filter := url.QueryEscape(fmt.Sprintf(`[{"field":"id","op":"eq","value":%q}]`, id))
				list := e.Do("GET", "/v1/deals?filter="+filter, nil).List()
				if len(list) != 1 || num(list[0], "weighted_amount") != want {
					t.Errorf("list: %v, want weighted_amount %q", list, want)
				}
				q := e.Do("POST", "/v1/deals/query", map[string]any{"filters": []any{map[string]any{"field": "id", "op": "eq", "value": id}}, "fields": []string{"weighted_amount"}})
				e.Expect(q, 200, "")
				if l := q.List(); len(l) != 1 || num(l[0], "weighted_amount") != want {
					t.Errorf("query: %s, want weighted_amount %q", q.Raw, want)
				}
			}

			created := e.Do("POST", "/v1/deals", map[string]any{"name": "Formula", "amount": 1000, "probability": 25})
			e.Expect(created, 201, "")
			id := created.Data()["id"].(string)
			if w := num(created.Data(), "weighted_amount"); w != "250" {
				t.Errorf("create: weighted_amount %q, want 250", w)
			}
			everywhere(id, "250")
			e.Expect(e.Do("PATCH", "/v1/deals/"+id, map[string]any{"probability": 40}), 200, "")
			everywhere(id, "400")
			e.Expect(e.Do("PATCH", "/v1/deals/"+id, map[string]any{"amount": 2000.5}), 200, "")
			everywhere(id, "800.2")
			e.Expect(e.Do("PATCH", "/v1/deals/"+id, map[string]any{"name": "Renamed"}), 200, "")
			everywhere(id, "800.2")
			e.Expect(e.Do("PATCH", "/v1/deals/"+id, map[string]any{"amount": nil}), 200, "")
			everywhere(id, "")
			e.Expect(e.Do("PATCH", "/v1/deals/"+id, map[string]any{"amount": 10}), 200, "")
			everywhere(id, "4")

			// Writing a formula field is refused, naming it, on create and update.
			for _, res := range []*servertest.Response{
				e.Do("POST", "/v1/deals", map[string]any{"name": "Forged", "amount": 10, "weighted_amount": 99}),
				e.Do("PATCH", "/v1/deals/"+id, map[string]any{"weighted_amount": 99}),
			} {
				e.Expect(res, 422, "validation_failed")
				if !strings.Contains(string(res.Raw), `"weighted_amount"`) {
					t.Errorf("refusal does not name the field: %s", res.Raw)
				}
			}
			// The bulk path computes it too, and refuses it as input.
			r, _ := e.Server.Backend().Current().Catalog.Resource("deals")
			if _, err := e.Server.Backend().Current().Records.Import(context.Background(), adminActor(e), r, "", []map[string]any{{"name": "Imported", "amount": 300, "probability": 50}}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Server.Backend().Current().Records.Import(context.Background(), adminActor(e), r, "", []map[string]any{{"name": "Imported", "weighted_amount": 1}}); err == nil {
				t.Errorf("import accepted a formula value")
			}

			// Sort and filter by the computed value.
			for _, d := range [][2]int{{100, 90}, {1000, 5}, {400, 50}, {50, 100}} {
				e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": "Sorted", "amount": d[0], "probability": d[1]}), 201, "")
			}
			walk := func(order string) []string {
				filter := url.QueryEscape(`[{"field":"name","op":"eq","value":"Sorted"}]`)
				var out []string
				cursor := "start"
				for cursor != "" {
					page := e.Do("GET", "/v1/deals?page_size=1&sort=weighted_amount&order="+order+"&filter="+filter+"&cursor="+url.QueryEscape(cursor), nil)
					e.Expect(page, 200, "")
					for _, rec := range page.List() {
						out = append(out, num(rec, "weighted_amount"))
					}
					cursor, _ = page.Body["meta"].(map[string]any)["next_cursor"].(string)
				}
				return out
			}
			if got := strings.Join(walk("asc"), " "); got != "50 50 90 200" {
				t.Errorf("ascending walk: %s", got)
			}
			if got := strings.Join(walk("desc"), " "); got != "200 90 50 50" {
				t.Errorf("descending walk: %s", got)
			}
			filter := url.QueryEscape(`[{"field":"name","op":"eq","value":"Sorted"},{"field":"weighted_amount","op":"gte","value":90}]`)
			if l := e.Do("GET", "/v1/deals?filter="+filter, nil).List(); len(l) != 2 {
				t.Errorf("filter weighted_amount >= 90: %d records, want 2", len(l))
			}

			// The viewer cannot see amount, so it cannot see what is computed from it either.
			vkey := e.NewKey(e.NewMember("viewer@formula.example", "viewer", ""), auth.KeyOptions{Access: "read"})
			got := e.DoKey(vkey, "GET", "/v1/deals/"+id, nil)
			e.Expect(got, 200, "")
			if _, present := got.Data()["weighted_amount"]; present {
				t.Errorf("viewer sees weighted_amount: %s", got.Raw)
			}
			e.Expect(e.DoKey(vkey, "GET", "/v1/deals?sort=weighted_amount", nil), 400, "invalid_request")
			e.Expect(e.DoKey(vkey, "GET", "/v1/deals?filter="+filter, nil), 400, "invalid_request")

			// Other shipped formulas: dates, greatest, rounding, division by zero.
			p := e.Do("POST", "/v1/projects", map[string]any{"name": "Launch", "start_date": "2026-01-01", "due_date": "2026-03-01"})
			e.Expect(p, 201, "")
			if d := num(p.Data(), "planned_days"); d != "59" {
				t.Errorf("planned_days %q, want 59", d)
			}
			pt := e.Do("POST", "/v1/project_tasks", map[string]any{"title": "Build", "project_id": p.Data()["id"], "estimate_hours": 8, "logged_hours": 10.5})
			e.Expect(pt, 201, "")
			if h := num(pt.Data(), "remaining_hours"); h != "0" {
				t.Errorf("remaining_hours %q, want 0", h)
			}
			prod := e.Do("POST", "/v1/products", map[string]any{"name": "Seat", "unit_price": 30, "unit_cost": 20})
			e.Expect(prod, 201, "")
			if m := num(prod.Data(), "margin_percent"); m != "33.33" {
				t.Errorf("margin_percent %q, want 33.33", m)
			}
			free := e.Do("POST", "/v1/products", map[string]any{"name": "Trial", "unit_price": 0, "unit_cost": 5})
			e.Expect(free, 201, "")
			if m, present := free.Data()["margin_percent"]; !present || m != nil {
				t.Errorf("margin_percent of a free product: %v (present %v), want null", m, present)
			}
		})
	}
}

// Changing a formula in the definitions recomputes the stored values at the next migration, in every
// workspace, once.
func TestFormulaRecomputedOnChange(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			db := servertest.DatabaseURL(t, b)
			e := servertest.Start(t, b, servertest.Options{DB: db})
			other, _, otherKey := e.NewWorkspace("growth", "admin", "write")
			id := e.Do("POST", "/v1/deals", map[string]any{"name": "A", "amount": 1000, "probability": 25}).Data()["id"].(string)
			otherID := e.DoKey(otherKey, "POST", "/v1/deals", map[string]any{"name": "B", "amount": 80, "probability": 50}).Data()["id"].(string)

			dir := definitionsWith(t, nil)
			path := filepath.Join(dir, "resources", "deals.yaml")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			changed := strings.Replace(string(data), `formula: "amount * double(probability) / 100.0"`, `formula: "amount * double(probability) / 50.0"`, 1)
			if changed == string(data) {
				t.Fatal("deals.yaml no longer has the expected formula")
			}
			if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
				t.Fatal(err)
			}
			be := openBackend(t, db, dir, false)
			defer be.Close()
			if !contains(be.Migration.Applied, "compute rec_deals.{weighted_amount} for 2 records") {
				t.Errorf("applied: %v", be.Migration.Applied)
			}
			r, _ := be.Current().Catalog.Resource("deals")
			ctx := context.Background()
			for _, c := range []struct{ ws, id, want string }{{e.Workspace, id, "500"}, {other, otherID, "80"}} {
				col, err := be.Current().Records.Collection(ctx, records.Actor{Workspace: c.ws}, r, "")
				if err != nil {
					t.Fatal(err)
				}
				rec, err := be.Current().Records.Get(ctx, col, c.id, nil)
				if err != nil {
					t.Fatal(err)
				}
				if w := num(rec, "weighted_amount"); w != c.want {
					t.Errorf("recomputed weighted_amount %q, want %q", w, c.want)
				}
			}
			again := openBackend(t, db, dir, false)
			if len(again.Migration.Applied) != 0 {
				t.Errorf("second start applied %v", again.Migration.Applied)
			}
			again.Close()
		})
	}
}
