package server_test

import (
	"strings"
	"testing"

	"github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// TestRowSecurityBypassWarning: a server whose PostgreSQL role bypasses row-level security (a superuser,
// or a role with BYPASSRLS) says so once at start, as a warning naming the role; one connected as a
// plain owner of its database (the tests' AppRole) says nothing.
func TestRowSecurityBypassWarning(t *testing.T) {
	t.Parallel()
	const warning = "bypasses row-level security"
	for _, c := range []struct {
		name, role, attrs string
		want              int
		attr              string
	}{
		{"owner", servertest.AppRole, "", 0, ""},
		{"superuser", "", "", 1, `"superuser":true`},
		{"bypassrls", "records_test_bypassrls", "BYPASSRLS", 1, `"bypassrls":true`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := servertest.DatabaseAs(t, c.role, c.attrs)
			if c.role == servertest.AppRole {
				db = servertest.DatabaseURL(t, servertest.Postgres)
			}
			log := &proc.Buffer{}
			e := servertest.Start(t, servertest.Postgres, servertest.Options{DB: db, Log: log})
			e.Expect(e.Do("GET", "/v1/me", nil), 200, "")
			if n := log.Count(warning); n != c.want {
				t.Fatalf("%d warnings that the role %s, want %d; log:\n%s", n, warning, c.want, log.Tail())
			}
			if c.want == 0 {
				return
			}
			for _, line := range strings.Split(log.String(), "\n") {
				if strings.Contains(line, warning) && (!strings.Contains(line, `"level":"WARN"`) || !strings.Contains(line, c.attr)) {
					t.Errorf("the warning is not a WARN line naming %s: %s", c.attr, line)
				}
			}
		})
	}
}
