package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// TestIdempotencyDeadOwner: a running claim names the server instance holding it. A retry with its
// Idempotency-Key is told 409 idempotency_key_in_use only while that instance is alive: once its
// heartbeat is idempotency.DeadAfter old (a server killed with SIGKILL stops beating) the retry takes
// the claim over and runs, long before the claim's 60 s lease; a claim whose instance left no row at all
// is taken over at once; a claim of a live instance (here the serving server's own) still answers 409.
func TestIdempotencyDeadOwner(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			// A server of its own: it changes the database by hand.
			e := servertest.Start(t, b, servertest.Options{Private: true})
			ctx := context.Background()
			st := e.Server.Backend().Store
			d := st.Dialect()
			kid := keyID(t, e)
			var own string
			if err := st.Query(ctx, d.Bind("SELECT id FROM server_instances"), func(row []any) error { own = row[0].(string); return nil }); err != nil || own == "" {
				t.Fatalf("the server registered no instance (%v)", err)
			}
			plant := func(key, name, owner string) {
				t.Helper()
				if _, err := st.Exec(ctx, d.Bind(`INSERT INTO idempotency_keys (api_key_id, idem_key, workspace_id, fingerprint, status, token, locked_until, created_at, owner)
VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)`, kid, key, e.Workspace, idempotency.Fingerprint("POST", "/v1/companies", "", map[string]any{"name": name}),
					"token-"+key, time.Now().UTC().Add(idempotency.Lease), time.Now().UTC(), owner)); err != nil {
					t.Fatal(err)
				}
			}
			post := func(key, name string) int {
				return e.Do("POST", "/v1/companies", map[string]any{"name": name}, "Idempotency-Key", key).Status
			}

			// A server that beat once, just now, and was then killed.
			killed := time.Now()
			if _, err := st.Exec(ctx, d.Bind("INSERT INTO server_instances (id, host, pid, started_at, heartbeat_at) VALUES (?, 'gone', 1, ?, ?)", "killed-instance", killed.UTC(), killed.UTC())); err != nil {
				t.Fatal(err)
			}
			plant("killed-claim", "Killed mid-request", "killed-instance")
			plant("vanished-claim", "Owner row gone", "vanished-instance")
			plant("live-claim", "Still running", own)

			if s := post("vanished-claim", "Owner row gone"); s != 201 {
				t.Errorf("a claim whose instance has no row: %d, want 201 at once", s)
			}
			if s := post("killed-claim", "Killed mid-request"); s != 409 {
				t.Fatalf("a claim whose instance beat just now: %d, want 409", s)
			}
			took, ok := servertest.WaitFor(idempotency.DeadAfter+5*time.Second, func() bool {
				s := post("killed-claim", "Killed mid-request")
				if s != 201 && s != 409 {
					t.Fatalf("retry: %d", s)
				}
				return s == 201
			})
			since := time.Since(killed)
			if !ok {
				t.Fatalf("the claim of a server dead for %v is still in use (lease %v)", since.Round(time.Millisecond), idempotency.Lease)
			}
			if since < idempotency.DeadAfter-500*time.Millisecond {
				t.Errorf("the claim was taken over %v after the last heartbeat, before the server counted as dead (%v)", since, idempotency.DeadAfter)
			}
			if since > idempotency.DeadAfter+3*time.Second {
				t.Errorf("the claim was taken over %v after the last heartbeat, want within %v", since, idempotency.DeadAfter+3*time.Second)
			}
			if s := post("killed-claim", "Killed mid-request"); s != 201 {
				t.Errorf("after the takeover: %d, want the replay of 201", s)
			}
			// The serving server beats: its claim blocks retries past DeadAfter.
			if s := post("live-claim", "Still running"); s != 409 {
				t.Errorf("a live server's claim %v old: %d, want 409", time.Since(killed).Round(time.Millisecond), s)
			}
			t.Logf("%s: a dead server's claim taken over %v after its last heartbeat (retries for %v)", b, since.Round(time.Millisecond), took.Round(time.Millisecond))
		})
	}
}
