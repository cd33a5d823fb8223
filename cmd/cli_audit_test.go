package cmd_test

// recordsctl audit list: the audit log read from the command line.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// auditCall sends one API request and returns its status, decoded body and X-Request-Id.
func auditCall(t *testing.T, base, key, method, path, body string) (int, map[string]any, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out, res.Header.Get("X-Request-Id")
}

// auditText runs recordsctl without --json and returns its stdout.
func auditText(c ctl, args ...string) string {
	c.t.Helper()
	full := append([]string{"--db", c.db, "--definitions", servertest.DefinitionsDir()}, args...)
	cmd := exec.Command(filepath.Join(binDir, "recordsctl"), full...)
	cmd.Dir = c.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("recordsctl %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// auditEntries runs audit list --json with args and returns its entries, checking the output shape.
func auditEntries(c ctl, args ...string) ([]map[string]any, any) {
	c.t.Helper()
	out := c.run(append([]string{"audit", "list"}, args...)...)
	next, ok := out["next_cursor"]
	if !ok || len(out) != 2 {
		c.t.Fatalf("audit list printed %v, want {data, next_cursor}", out)
	}
	list, ok := out["data"].([]any)
	if !ok {
		c.t.Fatalf("audit list data: %v", out["data"])
	}
	entries := make([]map[string]any, len(list))
	for i, item := range list {
		entries[i] = item.(map[string]any)
		for _, k := range []string{"id", "resource", "record_id", "action", "member_id", "key_id", "request_id", "changes", "previous", "created_at"} {
			if _, ok := entries[i][k]; !ok {
				c.t.Errorf("audit entry lacks %s: %v", k, entries[i])
			}
		}
	}
	return entries, next
}

// recordsctl audit list: every API write with its member, key and request id; filters by resource,
// record and time; pages; the operator sees stored values, --as-member the member's masks; another
// workspace's entries never show; bad arguments fail cleanly.
func TestAuditList(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := migrated(t, b)
			ws := c.run("workspace", "create", "--name", "Audited", "--plan", "growth")["id"].(string)
			admin := c.run("member", "create", "--workspace", ws, "--email", "ops@audited.example", "--role", "admin")["id"].(string)
			viewer := c.run("member", "create", "--workspace", ws, "--email", "viewer@audited.example", "--role", "viewer")["id"].(string)
			key := c.run("key", "create", "--member", admin, "--access", "write")
			secret, keyID := key["secret"].(string), key["id"].(string)
			file := filepath.Join(c.dir, "companies.jsonl")
			os.WriteFile(file, []byte(`{"name":"Imported Co"}`+"\n"), 0o644)
			c.run("records", "import", "--workspace", ws, "--resource", "companies", "--file", file)
			ws2 := c.run("workspace", "create", "--name", "Elsewhere", "--plan", "growth")["id"].(string)
			c.run("records", "import", "--workspace", ws2, "--resource", "companies", "--file", file)

			base, _ := startServer(t, c)
			type write struct{ action, record, requestID string }
			var writes []write
			do := func(method, path, body, action string, want int) map[string]any {
				t.Helper()
				code, out, rid := auditCall(t, base, secret, method, path, body)
				if code != want {
					t.Fatalf("%s %s: %d %v", method, path, code, out)
				}
				data, _ := out["data"].(map[string]any)
				if action != "" {
					writes = append(writes, write{action: action, requestID: rid})
				}
				return data
			}
			contact := do("POST", "/v1/contacts", `{"last_name":"Lee","email":"jane@acme.example"}`, "create", 201)["id"].(string)
			writes[0].record = contact
			do("PATCH", "/v1/contacts/"+contact, `{"email":"j.lee@acme.example"}`, "update", 200)
			do("POST", "/v1/contacts", `{"first_name":"no last name"}`, "", 422) // refused: leaves no entry
			deal := do("POST", "/v1/deals", `{"name":"Big one","amount":90000}`, "create", 201)["id"].(string)
			do("DELETE", "/v1/deals/"+deal, `{"reason":"duplicate"}`, "archive", 200)
			do("POST", "/v1/deals/"+deal+"/restore", "", "restore", 200)
			do("PUT", "/v1/deals/"+deal+"/contacts/"+contact, "", "link", 200)
			do("DELETE", "/v1/deals/"+deal+"/contacts/"+contact, "", "unlink", 200)
			for i := range writes {
				if writes[i].record == "" {
					writes[i].record = deal
					if i == 1 {
						writes[i].record = contact
					}
				}
			}

			all, next := auditEntries(c, "--workspace", ws)
			if next != nil || len(all) != len(writes)+1 {
				t.Fatalf("%d entries (next %v), want %d writes and 1 import: %s", len(all), next, len(writes), mustString(all))
			}
			for i, w := range writes {
				en := all[len(writes)-1-i]
				if en["action"] != w.action || en["record_id"] != w.record || en["member_id"] != admin || en["key_id"] != keyID || en["request_id"] != w.requestID {
					t.Errorf("write %d: %v, want %s of %s by %s with key %s, request %s", i, en, w.action, w.record, admin, keyID, w.requestID)
				}
			}
			if imp := all[len(all)-1]; imp["action"] != "import" || imp["member_id"] != nil || imp["key_id"] != nil || imp["resource"] != "companies" {
				t.Errorf("import entry %v", imp)
			}

			// Filters.
			if got, _ := auditEntries(c, "--workspace", ws, "--resource", "contacts"); len(got) != 2 {
				t.Errorf("--resource contacts: %s", mustString(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws, "--record", deal); len(got) != 5 {
				t.Errorf("--record deal: %d entries, want 5", len(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws, "--resource", "deals", "--record", contact); len(got) != 0 {
				t.Errorf("--resource deals --record contact: %s", mustString(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws, "--since", all[1]["created_at"].(string)); len(got) < 2 || len(got) == len(all) {
				t.Errorf("--since %s: %d entries", all[1]["created_at"], len(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws, "--since", "24h"); len(got) != len(all) {
				t.Errorf("--since 24h: %d entries", len(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws, "--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); len(got) != 0 {
				t.Errorf("--since an hour ahead: %d entries", len(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws2); len(got) != 1 || got[0]["action"] != "import" {
				t.Errorf("the other workspace: %s", mustString(got))
			}

			// Pages.
			var walked []any
			args := []string{"--workspace", ws, "--limit", "3"}
			for {
				page, next := auditEntries(c, args...)
				for _, en := range page {
					walked = append(walked, en["id"])
				}
				if next == nil {
					break
				}
				args = []string{"--workspace", ws, "--limit", "3", "--cursor", next.(string)}
			}
			want := make([]any, len(all))
			for i, en := range all {
				want[i] = en["id"]
			}
			if mustString(walked) != mustString(want) {
				t.Errorf("pages of 3 walked %v, want %v", walked, want)
			}

			// The operator sees stored values; the viewer its masks.
			byAction := func(entries []map[string]any, record, action string) map[string]any {
				for _, en := range entries {
					if en["record_id"] == record && en["action"] == action {
						return en
					}
				}
				t.Fatalf("no %s entry of %s in %s", action, record, mustString(entries))
				return nil
			}
			if en := byAction(all, contact, "update"); mustString(en["changes"]) != `{"email":"j.lee@acme.example"}` || mustString(en["previous"]) != `{"email":"jane@acme.example"}` {
				t.Errorf("operator's contact update: %v", en)
			}
			if en := byAction(all, deal, "create"); mustString(en["changes"].(map[string]any)["amount"]) != "90000" {
				t.Errorf("operator's deal create: %v", en)
			}
			seen, _ := auditEntries(c, "--workspace", ws, "--as-member", viewer)
			if en := byAction(seen, contact, "update"); mustString(en["changes"]) != `{"email":"j•••@•••.example"}` || mustString(en["previous"]) != `{"email":"j•••@•••.example"}` {
				t.Errorf("viewer's contact update: %v", en)
			}
			if en := byAction(seen, deal, "create"); en["changes"].(map[string]any)["amount"] != nil || mustString(en["withheld"]) != `["amount"]` {
				t.Errorf("viewer's deal create: %v", en)
			}

			text := auditText(c, "audit", "list", "--workspace", ws, "--record", contact)
			if !strings.Contains(text, "CREATED_AT") || !strings.Contains(text, "j.lee@acme.example") || strings.Count(text, "\n") != 3 {
				t.Errorf("text output:\n%s", text)
			}
			if text := auditText(c, "audit", "list", "--workspace", ws, "--record", contact, "--as-member", viewer); strings.Contains(text, "acme.example") {
				t.Errorf("--as-member text output shows a masked value:\n%s", text)
			}
			if help := auditText(c, "audit", "list", "--help"); !strings.Contains(help, "--as-member") || !strings.Contains(help, "operator") {
				t.Errorf("audit list --help:\n%s", help)
			}

			for _, bad := range [][]string{
				{"audit", "list"},
				{"audit", "list", "--workspace", store.NewID()},
				{"audit", "list", "--workspace", "not-a-uuid"},
				{"audit", "list", "--workspace", ws, "--resource", "gizmos"},
				{"audit", "list", "--workspace", ws, "--since", "yesterday"},
				{"audit", "list", "--workspace", ws, "--since", "-5h"},
				{"audit", "list", "--workspace", ws, "--record", "42"},
				{"audit", "list", "--workspace", ws, "--as-member", "someone"},
				{"audit", "list", "--workspace", ws, "--as-member", store.NewID()},
				{"audit", "list", "--workspace", ws, "--limit", "0"},
				{"audit", "list", "--workspace", ws, "--cursor", "forged"},
				{"audit", "nonsense", "--workspace", ws},
			} {
				if msg := c.fail(bad...); strings.Contains(msg, "panic") || strings.Contains(msg, "goroutine") {
					t.Errorf("recordsctl %v panicked: %s", bad, msg)
				}
			}
		})
	}
}
