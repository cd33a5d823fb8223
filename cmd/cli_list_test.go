package cmd_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// text runs recordsctl without --json and returns what it printed.
func (c ctl) text(args ...string) string {
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

// rows returns the data of a list command's --json output, checking that every row has exactly the
// field names want.
func (c ctl) rows(want []string, args ...string) []map[string]any {
	c.t.Helper()
	data, ok := c.run(args...)["data"].([]any)
	if !ok {
		c.t.Fatalf("recordsctl %v: no data list", args)
	}
	sort.Strings(want)
	out := make([]map[string]any, len(data))
	for i, d := range data {
		row := d.(map[string]any)
		var keys []string
		for k := range row {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !slices.Equal(keys, want) {
			c.t.Errorf("recordsctl %v: row %d has fields %v, want %v", args, i, keys, want)
		}
		out[i] = row
	}
	return out
}

// checkTable checks that out is a table: a header of the given columns, then rows lines, every column
// starting at the header's column (in characters), after at least two spaces.
func checkTable(t *testing.T, name, out string, header []string, rows int) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if got := strings.Fields(lines[0]); !slices.Equal(got, header) {
		t.Fatalf("%s: header %q, want %q\n%s", name, lines[0], header, out)
	}
	if len(lines)-1 != rows {
		t.Errorf("%s: %d rows, want %d\n%s", name, len(lines)-1, rows, out)
	}
	head := []rune(lines[0])
	var starts []int
	for i := range head {
		if head[i] != ' ' && (i == 0 || head[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	for _, line := range lines[1:] {
		r := []rune(line)
		for _, p := range starts {
			if p >= len(r) || r[p] == ' ' || p > 0 && (r[p-1] != ' ' || r[p-2] != ' ') {
				t.Errorf("%s: row not aligned with the header at column %d:\n%s\n%s", name, p, lines[0], line)
				break
			}
		}
	}
	return lines[1:]
}

// Everything recordsctl creates it also lists: workspaces, members, roles, custom fields, data models and
// keys, as {"data": [...]} with --json (the same field names on every row) and as an aligned table.
func TestListCommands(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := migrated(t, b)
			ws := c.run("workspace", "create", "--name", "Acme Corp", "--plan", "growth")["id"].(string)
			c.run("workspace", "set-limits", ws, "--key-per-minute", "100")
			other := c.run("workspace", "create", "--name", "Empty", "--plan", "pro")["id"].(string)
			admin := c.run("member", "create", "--workspace", ws, "--email", "ada@acme.example", "--role", "admin")["id"].(string)
			rolesFile := filepath.Join(c.dir, "roles.yaml")
			os.WriteFile(rolesFile, []byte("version: 1\nroles:\n  auditor:\n    label: Auditor\n    permissions: [api.access]\n    resources: {deals: read}\n"), 0o644)
			c.run("role", "create", "--workspace", ws, "--file", rolesFile)
			c.run("member", "create", "--workspace", ws, "--email", "zed@acme.example", "--role", "auditor")
			key := c.run("key", "create", "--member", admin, "--access", "read")["id"].(string)
			tier := c.run("field", "create", "--workspace", ws, "--resource", "deals", "--key", "tier", "--type", "select", "--options", "gold,silver")["id"].(string)
			parent := c.run("field", "create", "--workspace", ws, "--resource", "companies", "--key", "parent", "--type", "reference", "--target", "companies")["id"].(string)
			c.run("field", "archive", parent)
			fields := filepath.Join(c.dir, "vendors.yaml")
			os.WriteFile(fields, []byte("category: {type: string}\nwebsite: {type: url}\n"), 0o644)
			model := c.run("model", "create", "--workspace", ws, "--name", "Vendors", "--fields-file", fields)["id"].(string)

			wsRows := c.rows([]string{"id", "name", "plan", "limits", "created_at", "updated_at"}, "workspace", "list")
			if len(wsRows) != 2 || wsRows[0]["id"] != ws || wsRows[0]["name"] != "Acme Corp" || mustString(wsRows[0]["limits"]) != `{"key_per_minute":100}` || wsRows[1]["id"] != other || mustString(wsRows[1]["limits"]) != `{}` {
				t.Errorf("workspace list: %v", wsRows)
			}
			lines := checkTable(t, "workspace list", c.text("workspace", "list"), []string{"ID", "NAME", "PLAN", "LIMITS", "CREATED_AT"}, 2)
			if !strings.Contains(lines[0], "Acme Corp  growth  key-per-minute=100") {
				t.Errorf("workspace list: %q", lines[0])
			}

			members := c.rows([]string{"id", "workspace_id", "email", "role", "department_id", "active", "mfa_verified_at", "created_at", "updated_at"}, "member", "list", "--workspace", ws)
			if len(members) != 2 || members[0]["id"] != admin || members[0]["role"] != "admin" || members[1]["email"] != "zed@acme.example" || members[1]["department_id"] != nil || members[1]["active"] != true {
				t.Errorf("member list: %v", members)
			}
			checkTable(t, "member list", c.text("member", "list", "--workspace", ws), []string{"ID", "EMAIL", "ROLE", "STATE", "DEPARTMENT", "CREATED_AT"}, 2)
			if got := c.rows(nil, "member", "list", "--workspace", other); len(got) != 0 {
				t.Errorf("member list of an empty workspace: %v", got)
			}
			if got := c.text("member", "list", "--workspace", other); got != "no members\n" {
				t.Errorf("member list of an empty workspace printed %q", got)
			}

			roles := c.rows([]string{"name", "label", "description", "builtin", "permissions", "resources", "record_rules", "field_rules"}, "role", "list", "--workspace", ws)
			var names []string
			for _, r := range roles {
				names = append(names, r["name"].(string))
			}
			if !slices.Equal(names, []string{"admin", "member", "viewer", "no_api", "auditor"}) || roles[0]["builtin"] != true || roles[4]["builtin"] != false || mustString(roles[4]["resources"]) != `{"deals":"read"}` {
				t.Errorf("role list: %v", roles)
			}
			lines = checkTable(t, "role list", c.text("role", "list", "--workspace", ws), []string{"NAME", "SOURCE", "LABEL", "PERMISSIONS", "RESOURCES"}, 5)
			if !strings.Contains(lines[4], "auditor  workspace  Auditor") || !strings.HasSuffix(lines[4], "none, except 1 read") {
				t.Errorf("role list: %q", lines[4])
			}

			fieldKeys := []string{"id", "resource", "key", "write_key", "filter_key", "type", "label", "description", "required", "unique", "options", "target", "archived"}
			all := c.rows(fieldKeys, "field", "list", "--workspace", ws)
			if len(all) != 2 || all[0]["id"] != parent || all[0]["archived"] != true || all[0]["target"] != "companies" || all[1]["id"] != tier ||
				all[1]["filter_key"] != "cfv:"+tier || all[1]["write_key"] != "cf__tier" || mustString(all[1]["options"]) != `["gold","silver"]` || all[1]["target"] != nil {
				t.Errorf("field list: %v", all)
			}
			if deals := c.rows(fieldKeys, "field", "list", "--workspace", ws, "--resource", "deals"); len(deals) != 1 || deals[0]["id"] != tier {
				t.Errorf("field list --resource deals: %v", deals)
			}
			checkTable(t, "field list", c.text("field", "list", "--workspace", ws), []string{"ID", "RESOURCE", "KEY", "TYPE", "REQUIRED", "STATE", "FILTER_KEY"}, 2)

			models := c.rows([]string{"id", "workspace_id", "name", "fields", "created_at", "updated_at"}, "model", "list", "--workspace", ws)
			if len(models) != 1 || models[0]["id"] != model || mustString(models[0]["fields"]) != `{"category":{"type":"string"},"website":{"type":"url"}}` {
				t.Errorf("model list: %v", models)
			}
			lines = checkTable(t, "model list", c.text("model", "list", "--workspace", ws), []string{"ID", "NAME", "FIELDS", "CREATED_AT"}, 1)
			if !strings.Contains(lines[0], "Vendors  category,website") {
				t.Errorf("model list: %q", lines[0])
			}

			keys := c.rows([]string{"id", "workspace_id", "member_id", "hint", "access", "resources", "allow_ips", "created_at", "expires_at", "revoked_at", "last_used_at", "last_used_ip"}, "key", "list", "--workspace", ws)
			if len(keys) != 1 || keys[0]["id"] != key {
				t.Errorf("key list: %v", keys)
			}
			checkTable(t, "key list", c.text("key", "list", "--workspace", ws), []string{"ID", "HINT", "ACCESS", "STATE", "MEMBER", "EXPIRES_AT", "LAST_USED"}, 1)

			const nowhere = "01a20f67-0000-7000-8000-000000000000"
			for _, cmd := range []string{"member", "role", "field", "model", "key"} {
				if msg := c.fail(cmd, "list", "--workspace", nowhere); !strings.Contains(msg, nowhere) || !strings.Contains(msg, "not found") {
					t.Errorf("%s list of a missing workspace: %s", cmd, msg)
				}
			}
		})
	}
}
