package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// A plan, role, resource or type that does not exist is refused with the valid ones listed, and the
// nearest one named when it looks like a typo.
func TestUnknownNamesListValid(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := migrated(t, b)
			ws := c.run("workspace", "create", "--name", "Acme", "--plan", "growth")["id"].(string)
			rolesFile := filepath.Join(c.dir, "roles.yaml")
			os.WriteFile(rolesFile, []byte("version: 1\nroles:\n  auditor:\n    label: Auditor\n    permissions: [api.access]\n    resources: {deals: read}\n"), 0o644)
			c.run("role", "create", "--workspace", ws, "--file", rolesFile)
			member := c.run("member", "create", "--workspace", ws, "--email", "ada@acme.example", "--role", "admin")["id"].(string)
			check := func(want []string, args ...string) {
				t.Helper()
				msg := c.fail(args...)
				for _, w := range want {
					if !strings.Contains(msg, w) {
						t.Errorf("recordsctl %v: %q lacks %q", args, msg, w)
					}
				}
			}
			plans := `(valid: enterprise, free, growth, pro, scale)`
			check([]string{`unknown plan "platinum" ` + plans}, "workspace", "create", "--name", "X", "--plan", "platinum")
			check([]string{`unknown plan "grwth" (did you mean "growth"? valid: enterprise, free, growth, pro, scale)`}, "workspace", "create", "--name", "X", "--plan", "grwth")
			check([]string{`unknown plan "Scale" (did you mean "scale"?`}, "workspace", "set-plan", ws, "--plan", "Scale")
			roles := "valid: admin, auditor, member, no_api, viewer)"
			check([]string{`unknown role "auditr" (did you mean "auditor"? ` + roles}, "member", "create", "--workspace", ws, "--email", "x@acme.example", "--role", "auditr")
			check([]string{`unknown role "owner" (` + roles}, "member", "set-role", member, "--role", "owner")
			check([]string{`unknown resource "dealz" (did you mean "deals"? valid: `, "companies, competitors, contacts,"}, "key", "create", "--member", member, "--access", "read", "--resources", "contacts,dealz")
			check([]string{`unknown resource "dealz" (did you mean "deals"? valid: `, `unknown type "txt" (did you mean "text"? valid: boolean, date, datetime, decimal, email, integer, long_text, multi_select, phone, reference, select, text, url)`},
				"field", "create", "--workspace", ws, "--resource", "dealz", "--key", "tier", "--type", "txt")
			check([]string{"automations is read-only"}, "field", "create", "--workspace", ws, "--resource", "automations", "--key", "tier", "--type", "text")
			check([]string{`target: unknown resource "compnies" (did you mean "companies"?`}, "field", "create", "--workspace", ws, "--resource", "deals", "--key", "parent", "--type", "reference", "--target", "compnies")
			fields := filepath.Join(c.dir, "vendors.yaml")
			os.WriteFile(fields, []byte("category: {type: strng}\nparent: {type: reference, target: compnies}\n"), 0o644)
			check([]string{`field "category": unknown type "strng" (did you mean "string"? valid: boolean, date, datetime, decimal, email, integer, phone, reference, string, text, url)`,
				`field "parent": target: unknown resource "compnies" (did you mean "companies"?`}, "model", "create", "--workspace", ws, "--name", "Vendors", "--fields-file", fields)
			lines := filepath.Join(c.dir, "contacts.jsonl")
			os.WriteFile(lines, []byte(`{"first_name":"Ann"}`+"\n"), 0o644)
			for _, args := range [][]string{
				{"seed", "--workspace", ws, "--resource", "contcts", "--count", "1"},
				{"records", "import", "--workspace", ws, "--resource", "contcts", "--file", lines},
				{"audit", "list", "--workspace", ws, "--resource", "contcts"},
				{"field", "list", "--workspace", ws, "--resource", "contcts"},
			} {
				check([]string{`unknown resource "contcts" (did you mean "contacts"? valid: `, "companies, competitors, contacts,"}, args...)
			}
		})
	}
}
