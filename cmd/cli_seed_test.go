package cmd_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// recordsctl seed as tools/bench runs it, in many small transactions (--batch) written by its two
// workers: every record arrives, with its integer custom field in the record's document and in the
// side table its filters read; the same --seed in another workspace makes the same companies.
func TestSeed(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := migrated(t, b)
			seeded := func(batch string) (ws, key, filterKey string) {
				ws = c.run("workspace", "create", "--name", "Bench", "--plan", "enterprise")["id"].(string)
				member := c.run("member", "create", "--workspace", ws, "--email", "bench@example.com", "--role", "admin")["id"].(string)
				key = c.run("key", "create", "--member", member, "--access", "write")["secret"].(string)
				filterKey = c.run("field", "create", "--workspace", ws, "--resource", "companies", "--key", "employee_target", "--type", "integer")["filter_key"].(string)
				if got := c.run("seed", "--workspace", ws, "--resource", "companies", "--count", "1000", "--seed", "1", "--batch", batch); got["created"] != float64(1000) {
					t.Fatalf("seed printed %v", got)
				}
				return ws, key, filterKey
			}
			_, key, filterKey := seeded("150") // 7 transactions, the last of 100
			_, key2, _ := seeded("1000")
			base, _ := startServer(t, c)
			list := func(key, query string) []map[string]any {
				var out []map[string]any
				cursor := ""
				for {
					code, body := mustCall(t, base, key, "GET", "/v1/companies?page_size=100&sort=name"+query+cursor, "")
					if code != 200 {
						t.Fatalf("list: %d %v", code, body)
					}
					for _, r := range body["data"].([]any) {
						out = append(out, r.(map[string]any))
					}
					next, _ := body["meta"].(map[string]any)["next_cursor"].(string)
					if next == "" {
						return out
					}
					cursor = "&cursor=" + url.QueryEscape(next)
				}
			}
			all := list(key, "")
			withTarget := 0
			for _, r := range all {
				if _, ok := r["custom_fields"].(map[string]any)["employee_target"]; ok {
					withTarget++
				}
			}
			if len(all) != 1000 || withTarget < 500 || withTarget == 1000 {
				t.Fatalf("%d companies, %d with employee_target", len(all), withTarget)
			}
			filter, _ := json.Marshal([]any{map[string]any{"field": filterKey, "op": "is_not_empty"}})
			if got := list(key, "&filter="+url.QueryEscape(string(filter))); len(got) != withTarget {
				t.Errorf("the custom field's filter finds %d companies, their documents %d", len(got), withTarget)
			}
			again := list(key2, "")
			for i := range all {
				if i < len(again) && fmt.Sprint(all[i]["name"], all[i]["domain"]) != fmt.Sprint(again[i]["name"], again[i]["domain"]) {
					t.Fatalf("the same --seed made %v, then %v", all[i]["name"], again[i]["name"])
				}
			}
		})
	}
}
