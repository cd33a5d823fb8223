package server_test

// A declarative rule that reads a field its writer cannot read (issue 34, L3) is no yes/no oracle on
// that field: a role that writes a resource and masks or hides a field one of its rules reads is refused
// (definitions lint and apply, the admin API's roles); a role stored before such a rule appeared gets the
// same refusal for every update the rule would check, whatever the stored values.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// oracleRule is the attack run's rule: it passes for any last name but "probe", and for "probe" only
// when the contact's email starts with "alice0".
const oracleRule = `self.last_name != 'probe' || self.email.startsWith('alice0')`

func TestRuleOracleOnMaskedField(t *testing.T) {
	t.Parallel()
	dir := servertest.CopyDefinitions(t)
	contacts := filepath.Join(dir, "resources", "contacts.yaml")
	data, err := os.ReadFile(contacts)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "\nhooks: []", "\nrules:\n  - rule: \""+oracleRule+"\"\n    message: probed\n    field: last_name\nhooks: []", 1)
	if text == string(data) {
		t.Fatal("contacts.yaml: no hooks key to add a rule before")
	}
	if err := os.WriteFile(contacts, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{DefinitionsDir: dir})
			e.Contract()
			masked := map[string]any{"name": "masked_writer", "label": "Masked writer", "permissions": []string{"api.access"},
				"resources": map[string]string{"*": "write"}, "field_rules": map[string]any{"contacts": map[string]string{"email": "masked"}}}
			ak := e.NewKey(e.Member, auth.KeyOptions{Access: "admin"})
			// The admin API refuses the role: it writes contacts and masks a field a rule of contacts reads.
			r := e.DoKey(ak, "POST", "/v1/admin/roles", masked)
			if r.Status != 422 || !strings.Contains(string(r.Raw), "field_rules") || !strings.Contains(string(r.Raw), "email") {
				t.Errorf("role masking a rule's input: want 422 pointing at the field rule, got %d %s", r.Status, r.Raw)
			}
			// Read-only on contacts, the same mask is fine: the role never runs the rule.
			readOnly := map[string]any{"name": "masked_reader", "label": "Masked reader", "permissions": []string{"api.access"},
				"resources": map[string]string{"*": "write", "contacts": "read"}, "field_rules": map[string]any{"contacts": map[string]string{"email": "masked"}}}
			e.Expect(e.DoKey(ak, "POST", "/v1/admin/roles", readOnly), 201, "")

			// A role stored before the rule was added (an earlier definitions version): written as the
			// roles table holds it.
			def, _ := json.Marshal(map[string]any{"Name": "masked_writer_v1", "Label": "Masked writer", "Permissions": []string{"api.access"},
				"Resources": map[string]string{"*": "write"}, "RecordRules": map[string]string{"*": "all"},
				"FieldRules": map[string]map[string]string{"contacts": {"email": "masked"}}})
			st := e.Server.Backend().Store
			now := time.Now().UTC().Truncate(time.Microsecond)
			if _, err := st.Exec(store.WithWorkspace(context.Background(), e.Workspace), st.Dialect().Bind(
				"INSERT INTO workspace_roles (workspace_id, name, definition, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
				e.Workspace, "masked_writer_v1", string(def), now, now)); err != nil {
				t.Fatalf("store the role: %v", err)
			}
			writer := e.NewKey(e.NewMember("writer@x.example", "masked_writer_v1", ""), auth.KeyOptions{Access: "write"})

			alice := e.Do("POST", "/v1/contacts", map[string]any{"first_name": "Alice", "last_name": "A", "email": "alice0@x.example"})
			e.Expect(alice, 201, "")
			bob := e.Do("POST", "/v1/contacts", map[string]any{"first_name": "Bob", "last_name": "B", "email": "bob@x.example"})
			e.Expect(bob, 201, "")
			if got := e.DoKey(writer, "GET", "/v1/contacts/"+alice.Data()["id"].(string), nil).Data()["email"]; got == "alice0@x.example" {
				t.Fatalf("the writer reads the email it should not: %v", got)
			}
			// The probe: the same change to both contacts. Before the fix: 200 for Alice, 422 for Bob.
			answer := func(id string, body map[string]any) string {
				res := e.DoKey(writer, "PATCH", "/v1/contacts/"+id, body)
				var env struct {
					Error struct {
						Code    string `json:"code"`
						Message string `json:"message"`
						Details any    `json:"details"`
					} `json:"error"`
				}
				_ = json.Unmarshal(res.Raw, &env)
				out, _ := json.Marshal(env.Error)
				return string(rune('0'+res.Status/100)) + string(out)
			}
			for _, body := range []map[string]any{
				{"last_name": "probe"},
				{"last_name": "probe", "first_name": "x"},
				{"last_name": strings.Repeat("p", 300)}, // refused by the schema: no rule judged on the stored email either
			} {
				a, b := answer(alice.Data()["id"].(string), body), answer(bob.Data()["id"].(string), body)
				if a != b {
					t.Errorf("PATCH %v: the answer tells the masked email apart: alice0… %s, bob… %s", body, a, b)
				}
			}
			res := e.DoKey(writer, "PATCH", "/v1/contacts/"+bob.Data()["id"].(string), map[string]any{"last_name": "probe"})
			e.Expect(res, 403, "forbidden")
			if strings.Contains(string(res.Raw), "bob@") || strings.Contains(string(res.Raw), "alice0") {
				t.Errorf("the refusal names a value: %s", res.Raw)
			}
			// A change the rule does not read is not refused; a writer who can read the email is judged
			// by the rule as always.
			e.Expect(e.DoKey(writer, "PATCH", "/v1/contacts/"+bob.Data()["id"].(string), map[string]any{"first_name": "Robert"}), 200, "")
			e.Expect(e.Do("PATCH", "/v1/contacts/"+bob.Data()["id"].(string), map[string]any{"last_name": "probe"}), 422, "validation_failed")
			e.Expect(e.Do("PATCH", "/v1/contacts/"+alice.Data()["id"].(string), map[string]any{"last_name": "probe"}), 200, "")
		})
	}
}
