package server_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// fieldErrors lists a 422's details.errors as "field/code/message", in the answer's order.
func fieldErrors(t *testing.T, res *servertest.Response) []string {
	t.Helper()
	e, _ := res.Body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	list, _ := d["errors"].([]any)
	var out []string
	for _, raw := range list {
		item, _ := raw.(map[string]any)
		out = append(out, item["field"].(string)+"/"+item["code"].(string)+"/"+item["message"].(string))
	}
	return out
}

// wantErrors checks that got holds exactly the problems want, "field/code" or "field/code/message".
func wantErrors(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d problems %q, want %q", what, len(got), got, want)
		return
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return g == w || strings.HasPrefix(g, w+"/") }) {
			t.Errorf("%s: no problem %q in %q", what, w, got)
		}
	}
}

// Declarative rules (definitions' rules:) through the real server: a create's rule failures come in one
// 422 with its schema problems; an update's rules see the stored record with the body over it, a
// transition rule (oldSelf) holds on update and not on create, and a refused update body gets its schema
// problems and its rule failures in one answer too. The shipped rules of deals apply as written.
func TestDeclarativeRules(t *testing.T) {
	t.Parallel()
	shipments, err := os.ReadFile("testdata/shipments.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			dir := definitionsWith(t, map[string]string{"shipments.yaml": string(shipments)})
			e := servertest.Start(t, b, servertest.Options{DefinitionsDir: dir})

			// One create, three kinds of problem in one answer: a schema error (reference too long), a
			// rule failure at a field (shipped before packed) and one about the record (no carrier). The
			// weight rule reads weight_kg, which the schema refused: it is not judged on a value that is
			// not the one sent.
			res := e.Do("POST", "/v1/shipments", map[string]any{
				"reference": strings.Repeat("x", 41), "status": "shipped", "weight_kg": -1,
				"packed_on": "2026-03-10", "shipped_on": "2026-03-09",
			})
			e.Expect(res, 422, "validation_failed")
			wantErrors(t, "create", fieldErrors(t, res),
				"reference/too_long",
				"weight_kg/out_of_range",
				"shipped_on/out_of_range/a shipment cannot ship before it is packed",
				"shipments/invalid/a shipped shipment names its carrier")
			if !strings.Contains(string(res.Raw), `"type":"validation_error"`) || !strings.Contains(string(res.Raw), `"request_id"`) {
				t.Errorf("envelope: %s", res.Raw)
			}
			if n := len(e.Do("GET", "/v1/shipments", nil).List()); n != 0 {
				t.Errorf("refused create wrote %d records", n)
			}

			// A valid body with a rule failure alone is refused the same way.
			res = e.Do("POST", "/v1/shipments", map[string]any{"reference": "S-1", "status": "packed"})
			e.Expect(res, 422, "validation_failed")
			wantErrors(t, "create without weight", fieldErrors(t, res), "weight_kg/required/a shipment past draft has a weight")

			// Transition rules are skipped on create: a shipment may be created delivered.
			delivered := e.Do("POST", "/v1/shipments", map[string]any{"reference": "S-0", "status": "delivered", "weight_kg": 2})
			e.Expect(delivered, 201, "")

			created := e.Do("POST", "/v1/shipments", map[string]any{
				"reference": "S-2", "status": "packed", "weight_kg": 12.5, "packed_on": "2026-03-10",
			})
			e.Expect(created, 201, "")
			id := created.Data()["id"].(string)

			// Update: self is the stored record with the body over it. Shipping before the stored packing
			// date is refused though the body names only shipped_on.
			res = e.Do("PATCH", "/v1/shipments/"+id, map[string]any{"shipped_on": "2026-03-01"})
			e.Expect(res, 422, "validation_failed")
			wantErrors(t, "update", fieldErrors(t, res), "shipped_on/out_of_range/a shipment cannot ship before it is packed")

			// A refused update body: its schema problem and the rule failure the stored record shows, in one
			// answer (status shipped, no carrier stored or sent).
			res = e.Do("PATCH", "/v1/shipments/"+id, map[string]any{"reference": 7, "status": "shipped", "shipped_on": "2026-03-12"})
			e.Expect(res, 422, "validation_failed")
			wantErrors(t, "refused update", fieldErrors(t, res),
				"reference/invalid_type",
				"shipments/invalid/a shipped shipment names its carrier")

			// Clearing a value a rule needs is judged too (the weight of a packed shipment).
			res = e.Do("PATCH", "/v1/shipments/"+id, map[string]any{"weight_kg": nil})
			e.Expect(res, 422, "validation_failed")
			wantErrors(t, "clear weight", fieldErrors(t, res), "weight_kg/required")

			e.Expect(e.Do("PATCH", "/v1/shipments/"+id, map[string]any{"status": "shipped", "carrier": "Post", "shipped_on": "2026-03-12"}), 200, "")
			e.Expect(e.Do("PATCH", "/v1/shipments/"+id, map[string]any{"status": "delivered"}), 200, "")

			// The transition rule: oldSelf is the stored record. A delivered shipment cannot go back.
			res = e.Do("PATCH", "/v1/shipments/"+id, map[string]any{"status": "shipped"})
			e.Expect(res, 422, "validation_failed")
			wantErrors(t, "transition", fieldErrors(t, res), "status/invalid_option/a delivered shipment stays delivered")
			if got := e.Do("GET", "/v1/shipments/"+id, nil).Data()["status"]; got != "delivered" {
				t.Errorf("refused transition changed the record: status %v", got)
			}
			// A write that changes nothing a rule reads is not judged by it.
			e.Expect(e.Do("PATCH", "/v1/shipments/"+id, map[string]any{"reference": "S-2b"}), 200, "")

			// Batch items: a create item's rule failure is its own 422; an update item's is found on the
			// locked read.
			res = e.Do("POST", "/v1/shipments/batch", map[string]any{"mode": "per_item", "items": []any{
				map[string]any{"op": "create", "body": map[string]any{"reference": "B-1", "status": "packed"}},
				map[string]any{"op": "create", "body": map[string]any{"reference": "B-2", "status": "packed", "weight_kg": 1}},
				map[string]any{"op": "update", "id": id, "body": map[string]any{"status": "draft"}},
			}})
			e.Expect(res, 200, "")
			if got := res.Statuses(); got != "422,201,422" {
				t.Errorf("batch statuses %s: %s", got, res.Raw)
			}

			// Upsert by a unique key is not declared on shipments; the shipped deals' rules apply through the
			// same pipeline.
			res = e.Do("POST", "/v1/deals", map[string]any{"name": "Won without a date", "status": "won"})
			e.Expect(res, 422, "validation_failed")
			wantErrors(t, "deal", fieldErrors(t, res), "close_date/required/a won or lost deal needs a close date")
			res = e.Do("POST", "/v1/deals", map[string]any{"name": "Lost", "status": "lost", "close_date": "2026-02-01", "amount": "x"})
			e.Expect(res, 422, "validation_failed")
			wantErrors(t, "lost deal", fieldErrors(t, res), "amount/invalid_type", "loss_reason_id/required/a lost deal needs a loss reason")
			e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": "Won", "status": "won", "close_date": "2026-02-01"}), 201, "")
		})
	}
}
