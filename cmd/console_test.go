package cmd_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// TestConsoleLinkCommand: recordsctl console-link prints a one-time link to /console for a member, with
// the token in the fragment; recordsd redeems it once for a session cookie, whose console requests need
// the CSRF token. Wrong members, lifetimes and addresses are refused with a message and exit status 1.
func TestConsoleLinkCommand(t *testing.T) {
	t.Parallel()
	c := migrated(t, servertest.SQLite)
	ws := c.run("workspace", "create", "--name", "Console", "--plan", "free")["id"].(string)
	member := c.run("member", "create", "--workspace", ws, "--email", "first@console.example", "--role", "admin")["id"].(string)
	for _, bad := range [][]string{{"--member", "00000000-0000-0000-0000-000000000000"}, {"--member", member, "--expires-in", "25h"},
		{"--member", member, "--expires-in", "soon"}, {"--member", member, "--url", "ftp://x"}} {
		if msg := c.fail(append([]string{"console-link"}, bad...)...); msg == "" {
			t.Errorf("console-link %v: no message", bad)
		}
	}
	base, _ := startServer(t, c)
	out := c.run("console-link", "--member", member, "--url", base)
	link, _ := out["url"].(string)
	prefix := base + "/console#sign-in="
	if !strings.HasPrefix(link, prefix) || len(link) != len(prefix)+64 {
		t.Fatalf("console-link printed %q, want %s followed by 64 hex characters", link, prefix)
	}
	if exp, err := time.Parse(time.RFC3339, out["expires_at"].(string)); err != nil || time.Until(exp) > 16*time.Minute || time.Until(exp) < 14*time.Minute {
		t.Errorf("expires_at %v: want about 15 minutes from now (%v)", out["expires_at"], err)
	}
	token := strings.TrimPrefix(link, prefix)
	post := func() *http.Response {
		req, _ := http.NewRequest("POST", base+"/console/session", strings.NewReader(`{"token":"`+token+`"}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	res := post()
	if res.StatusCode != 200 || len(res.Cookies()) != 1 || !res.Cookies()[0].HttpOnly {
		t.Fatalf("sign in with the printed link: %d, cookies %v", res.StatusCode, res.Cookies())
	}
	cookie := res.Cookies()[0]
	if again := post(); again.StatusCode != 401 {
		t.Errorf("the link signed in twice: %d", again.StatusCode)
	}
	// The session works on a plan without API access (free): the console is the product's own UI.
	req, _ := http.NewRequest("GET", base+"/v1/me/keys", nil)
	req.AddCookie(cookie)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("GET /v1/me/keys with the cookie and no CSRF token: %d, want 403", res.StatusCode)
	}
}
