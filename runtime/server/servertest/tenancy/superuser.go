package tenancy

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// Superuser connects to e's PostgreSQL database as the administrator of RECORDS_TEST_POSTGRES, who
// bypasses row-level security.
func Superuser(t *testing.T, e *servertest.Env) *pgx.Conn {
	t.Helper()
	admin := os.Getenv("RECORDS_TEST_POSTGRES")
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(e.Config.DB)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database = strings.TrimPrefix(u.Path, "/")
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
