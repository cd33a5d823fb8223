package servertest

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DatabaseAs returns a fresh, empty PostgreSQL database like DatabaseURL's, handed over to role (created
// LOGIN with attrs, e.g. "BYPASSRLS", when missing; "" is the superuser the tests create databases
// with), and that role's URL of it. Tests of what the server does under a role other than AppRole use it.
func DatabaseAs(t testing.TB, role, attrs string) string {
	t.Helper()
	db, err := url.Parse(DatabaseURL(t, Postgres))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := url.Parse(adminURL())
	if err != nil {
		t.Fatal(err)
	}
	if role == "" {
		db.User = admin.User
		return db.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := strings.TrimPrefix(db.Path, "/")
	ident := pgx.Identifier{role}.Sanitize()
	for _, s := range []string{
		"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = " + quoteLiteral(role) + ") THEN CREATE ROLE " + ident + " LOGIN " + attrs + "; END IF; END $$",
		"ALTER DATABASE " + pgx.Identifier{name}.Sanitize() + " OWNER TO " + ident,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("hand database %s to %s: %v", name, role, err)
		}
	}
	db.User = url.User(role)
	return db.String()
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// SuperuserURL is the URL of the database of dbURL (a PostgreSQL URL of DatabaseURL or DatabaseAs) as the
// superuser the tests create databases with: row-level security does not apply to it.
func SuperuserURL(t testing.TB, dbURL string) string {
	t.Helper()
	db, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := url.Parse(adminURL())
	if err != nil {
		t.Fatal(err)
	}
	db.User = admin.User
	return db.String()
}
