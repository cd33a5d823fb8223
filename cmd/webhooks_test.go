package cmd_test

// recordsctl webhook …: the webhook endpoints of a workspace managed from the command line, against a
// receiver in the test process that verifies every signature with the secrets the commands printed.

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/webhooks"
)

// runEnv runs recordsctl with env added to the environment and returns what it printed and its exit
// status; json adds --json.
func (c ctl) runEnv(env []string, json bool, args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	full := []string{"--db", c.db, "--definitions", servertest.DefinitionsDir()}
	if json {
		full = append(full, "--json")
	}
	cmd := exec.Command(filepath.Join(binDir, "recordsctl"), append(full, args...)...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		c.t.Fatalf("recordsctl %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// failWith runs recordsctl expecting exit status code, nothing on stdout and every one of want on stderr.
func (c ctl) failWith(code int, want []string, args ...string) {
	c.t.Helper()
	stdout, stderr, got := c.runEnv(nil, true, args...)
	if got != code || stdout != "" {
		c.t.Errorf("recordsctl %v: status %d (want %d), stdout %q, stderr %q", args, got, code, stdout, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			c.t.Errorf("recordsctl %v: stderr %q lacks %q", args, stderr, w)
		}
	}
}

// hookReceiver records the POSTs it gets, by path, after verifying each one's signature with the
// secrets of its path.
type hookReceiver struct {
	t       *testing.T
	mu      sync.Mutex
	secrets map[string][]string
	got     map[string][]string // path → webhook-id of each POST, in arrival order
	bad     []string
}

func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := webhooks.Verify(r.secrets[req.URL.Path], req.Header, body, time.Now(), 0); err != nil {
		r.bad = append(r.bad, req.URL.Path+": "+err.Error())
	}
	r.got[req.URL.Path] = append(r.got[req.URL.Path], req.Header.Get("webhook-id"))
	w.WriteHeader(http.StatusNoContent)
}

func (r *hookReceiver) count(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got[path])
}

// TestWebhookCommands runs every webhook command as an operator would, on both backends: create refuses a
// loopback URL unless webhook_allow_private_addresses is on (as a flag or in the environment) and
// prints the secret once; list never shows a secret; update changes, refuses an unknown event type
// naming the flag, and refuses contradictory flags as a usage error; rotate-secret prints a new secret
// that then signs the deliveries; deliveries lists none before any event, then each delivery with its
// attempt once recordsd delivered the imported records' events; replay --after 0 queues the events the
// endpoint takes and --event one of them; delete removes the endpoint; an unknown endpoint exits 1.
func TestWebhookCommands(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := migrated(t, b)
			ws := c.run("workspace", "create", "--name", "Hooked", "--plan", "growth")["id"].(string)
			member := c.run("member", "create", "--workspace", ws, "--email", "ops@hooked.example", "--role", "admin")["id"].(string)
			recv := &hookReceiver{t: t, secrets: map[string][]string{}, got: map[string][]string{}}
			srv := httptest.NewServer(recv)
			t.Cleanup(srv.Close)
			secretRE := regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`)

			// create: a loopback URL only with the setting.
			createA := []string{"webhook", "create", "--workspace", ws, "--member", member, "--url", srv.URL + "/a",
				"--event-type", "companies.created", "--event-type", "companies.updated,companies.archived", "--resource", "companies", "--description", "CRM sync"}
			c.failWith(1, []string{"--url: refused address 127.0.0.1: loopback", "--webhook-allow-private-addresses"}, createA...)
			a := c.run(append(createA, "--webhook-allow-private-addresses")...)
			aID, aSecret := a["id"].(string), a["secret"].(string)
			if !secretRE.MatchString(aSecret) || mustString(a["event_types"]) != `["companies.created","companies.updated","companies.archived"]` ||
				mustString(a["resources"]) != `["companies"]` || a["enabled"] != true || a["description"] != "CRM sync" || a["member_id"] != member || a["workspace_id"] != ws {
				t.Fatalf("webhook create printed %v", a)
			}
			stdout, stderr, code := c.runEnv([]string{"RECORDS_WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true"}, false,
				"webhook", "create", "--workspace", ws, "--member", member, "--url", srv.URL+"/b", "--disabled")
			bSecret := secretRE.FindString(stdout)
			bID := regexp.MustCompile(`webhook endpoint (\S+)`).FindStringSubmatch(stdout)
			if code != 0 || bSecret == "" || bID == nil || !strings.Contains(stdout, "shown once") || !strings.Contains(stdout, "state: disabled") {
				t.Fatalf("webhook create with RECORDS_WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true: status %d\n%s%s", code, stdout, stderr)
			}

			// list: both endpoints, never a secret.
			list := c.run("webhook", "list", "--workspace", ws)
			if rows := list["data"].([]any); len(rows) != 2 || rows[0].(map[string]any)["id"] != aID || rows[1].(map[string]any)["id"] != bID[1] {
				t.Errorf("webhook list: %v", list)
			}
			if s := mustString(list); strings.Contains(s, "whsec_") || strings.Contains(s, aSecret[6:]) || strings.Contains(s, bSecret[6:]) || strings.Contains(s, "secret") {
				t.Errorf("webhook list shows a secret: %s", s)
			}

			// update.
			if got := c.run("webhook", "update", "--workspace", ws, "--endpoint", bID[1], "--enable", "--description", "everything"); got["enabled"] != true ||
				got["description"] != "everything" || got["event_types"] != nil || got["secret"] != nil {
				t.Errorf("webhook update --enable: %v", got)
			}
			c.failWith(1, []string{`--event-type: "companies.exploded" is not an event type`}, "webhook", "update", "--workspace", ws, "--endpoint", aID, "--event-type", "companies.created,companies.exploded")
			c.failWith(2, []string{"--enable and --disable exclude each other"}, "webhook", "update", "--workspace", ws, "--endpoint", aID, "--enable", "--disable")

			// rotate-secret: a new secret, the old one retired at once; the deliveries below verify with it.
			rotated := c.run("webhook", "rotate-secret", "--workspace", ws, "--endpoint", aID, "--overlap", "0")
			newSecret, _ := rotated["secret"].(string)
			if !secretRE.MatchString(newSecret) || newSecret == aSecret || rotated["previous_secret_until"] != nil {
				t.Fatalf("webhook rotate-secret: %v (the old secret %s)", rotated, aSecret)
			}
			recv.mu.Lock()
			recv.secrets["/a"], recv.secrets["/b"] = []string{newSecret}, []string{bSecret}
			recv.mu.Unlock()

			// deliveries: none yet; an unknown endpoint is not found.
			if got := c.run("webhook", "deliveries", "--workspace", ws, "--endpoint", aID)["data"].([]any); len(got) != 0 {
				t.Errorf("deliveries before any event: %v", got)
			}
			c.failWith(1, []string{"not found"}, "webhook", "deliveries", "--workspace", ws, "--endpoint", uuid.NewString())

			// Events: 3 companies and a contact imported; a running server numbers them and delivers.
			file := filepath.Join(c.dir, "records.jsonl")
			os.WriteFile(file, []byte(`{"name":"Initech"}`+"\n"+`{"name":"Globex"}`+"\n"+`{"name":"Umbrella"}`+"\n"), 0o644)
			c.run("records", "import", "--workspace", ws, "--resource", "companies", "--file", file)
			os.WriteFile(file, []byte(`{"first_name":"Ann","last_name":"Lee"}`+"\n"), 0o644)
			c.run("records", "import", "--workspace", ws, "--resource", "contacts", "--file", file)
			serve(t, c, nil, "--webhook-allow-private-addresses")
			if _, ok := servertest.WaitFor(20*time.Second, func() bool { return recv.count("/a") >= 3 && recv.count("/b") >= 4 }); !ok {
				t.Fatalf("deliveries within 20 s: %d to a (want 3), %d to b (want 4)", recv.count("/a"), recv.count("/b"))
			}
			deliveries := c.run("webhook", "deliveries", "--workspace", ws, "--endpoint", aID, "--state", "delivered")["data"].([]any)
			if len(deliveries) != 3 {
				t.Fatalf("webhook deliveries: %v", deliveries)
			}
			for _, item := range deliveries {
				d := item.(map[string]any)
				attempts, _ := d["attempts"].([]any)
				if len(attempts) != 1 {
					t.Fatalf("delivery %v: attempts %v", d["id"], attempts)
				}
				at := attempts[0].(map[string]any)
				_, hasError := at["error"] // null, not left out
				if at["n"] != float64(1) || at["status"] != float64(204) || at["outcome"] != "delivered" || at["at"] == nil || at["latency_ms"] == nil || !hasError || at["error"] != nil {
					t.Errorf("delivery %v: attempt %v", d["id"], at)
				}
			}

			// replay: every event the endpoint takes after sequence 0, or one event.
			if got := c.run("webhook", "replay", "--workspace", ws, "--endpoint", aID, "--after", "0"); got["queued"] != float64(3) {
				t.Errorf("replay a --after 0: %v, want 3 (the workspace's company events)", got)
			}
			if got := c.run("webhook", "replay", "--workspace", ws, "--endpoint", bID[1], "--after", "0"); got["queued"] != float64(4) {
				t.Errorf("replay b --after 0: %v, want 4 (every event of the workspace)", got)
			}
			event := deliveries[0].(map[string]any)["event_id"].(string)
			if got := c.run("webhook", "replay", "--workspace", ws, "--endpoint", aID, "--event", event); got["queued"] != float64(1) {
				t.Errorf("replay --event: %v", got)
			}
			c.failWith(2, []string{"give one of --event and --after"}, "webhook", "replay", "--workspace", ws, "--endpoint", aID, "--event", event, "--after", "0")
			if _, ok := servertest.WaitFor(20*time.Second, func() bool { return recv.count("/a") >= 7 && recv.count("/b") >= 8 }); !ok {
				t.Errorf("replays within 20 s: %d to a (want 7), %d to b (want 8)", recv.count("/a"), recv.count("/b"))
			}
			recv.mu.Lock()
			first := map[string]bool{}
			for _, id := range recv.got["/a"][:3] {
				first[id] = true
			}
			for _, id := range recv.got["/a"][3:] {
				if !first[id] {
					t.Errorf("a replay carries webhook-id %s, not one of the first deliveries' %v", id, recv.got["/a"][:3])
				}
			}
			if len(recv.bad) > 0 {
				t.Errorf("deliveries that do not verify with the printed secrets: %v", recv.bad)
			}
			recv.mu.Unlock()

			// delete.
			if got := c.run("webhook", "delete", "--workspace", ws, "--endpoint", aID); got["id"] != aID {
				t.Errorf("webhook delete: %v", got)
			}
			if rows := c.run("webhook", "list", "--workspace", ws)["data"].([]any); len(rows) != 1 {
				t.Errorf("webhook list after delete: %v", rows)
			}
			c.failWith(1, []string{"endpoint " + aID + ": webhook endpoint not found"}, "webhook", "delete", "--workspace", ws, "--endpoint", aID)
		})
	}
}
