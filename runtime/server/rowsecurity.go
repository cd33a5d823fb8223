package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// warnRowSecurityBypass logs one warning when the PostgreSQL role the server connects as bypasses
// row-level security (a superuser, a BYPASSRLS role, or a member of either): the policies that keep each
// workspace's rows apart even from a statement that forgot its workspace filter do not apply to it.
func warnRowSecurityBypass(ctx context.Context, st store.Store, log *slog.Logger) error {
	if st.Dialect().Kind() != sqlgen.Postgres {
		return nil
	}
	var role string
	var super, bypass bool
	// PostgreSQL checks the attributes of the role a statement runs as; they are not inherited
	// through role membership.
	_, err := store.QueryOne(ctx, st, sqlgen.Stmt{SQL: "SELECT current_user, rolsuper, rolbypassrls FROM pg_catalog.pg_roles WHERE rolname = current_user"}, func(row []any) error {
		role, super, bypass = store.Text(row[0]), store.Bool(row[1]), store.Bool(row[2])
		return nil
	})
	if err != nil {
		return fmt.Errorf("inspect the database role: %w", err)
	}
	if super || bypass {
		log.Warn("the database role bypasses row-level security, so the policies that keep workspaces apart do not apply to this server; connect as a role that owns the database and is neither a superuser nor BYPASSRLS (README, Tenancy)",
			"role", role, "superuser", super, "bypassrls", bypass)
	}
	return nil
}
