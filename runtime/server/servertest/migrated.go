package servertest

import "testing"

// MigratedDatabase returns a new database of kind b holding the repository's definitions migrated: a
// copy of this process's template (templates.go), dropped (or removed) when the test ends. It holds
// what migrate.Run makes of an empty database, schema fingerprint included, so recordsctl and recordsd
// find it current; unlike after `recordsctl migrate`, no definitions version is recorded yet (the first
// server start records one) and no cursor secret (the first command or start makes it). A copy takes a
// fraction of a migration's time on PostgreSQL: for tests whose point is not the migration itself. A
// process that calls it without Main calls DropTemplates when its tests end.
func MigratedDatabase(t testing.TB, b Backend) string {
	t.Helper()
	return migratedDatabase(t, b)
}

// DropTemplates drops the templates this process made (waiting for any still being built), for a
// TestMain that does not run Main.
func DropTemplates() { dropTemplates() }
