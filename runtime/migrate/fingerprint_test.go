package migrate_test

import (
	"context"
	"testing"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/migrate"
)

// A database is current for the definitions Run last completed for, and for no others: a new field, a
// new search column or a changed formula each make it stale until Run again.
func TestCurrent(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	base := widgets(t, "  size: {type: integer}\n", "name")
	current := func() bool {
		t.Helper()
		ok, err := migrate.Current(ctx, st, base)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if current() {
		t.Fatal("an empty database is current")
	}
	run(t, st, base, migrate.Options{})
	if !current() {
		t.Fatal("not current after Run")
	}
	d := sqlgen.New(sqlgen.SQLite)
	for i := 0; i < 5; i++ {
		if migrate.Fingerprint(d, base) != migrate.Fingerprint(d, widgets(t, "  size: {type: integer}\n", "name")) {
			t.Fatal("the fingerprint of the same definitions differs between calls")
		}
	}
	if migrate.Fingerprint(d, base) == migrate.Fingerprint(sqlgen.New(sqlgen.Postgres), base) {
		t.Error("the fingerprint does not depend on the dialect")
	}
	for name, other := range map[string]string{
		"new field":       "  size: {type: integer}\n  color: {type: string}\n",
		"other type":      "  size: {type: decimal}\n",
		"sortable":        "  size: {type: integer, sortable: true}\n",
		"formula":         "  size: {type: integer}\n  double: {type: integer, formula: \"size * 2\"}\n",
		"another formula": "  size: {type: integer}\n  double: {type: integer, formula: \"size * 3\"}\n",
	} {
		cat := widgets(t, other, "name")
		if ok, err := migrate.Current(ctx, st, cat); err != nil || ok {
			t.Errorf("%s: current before Run (%v)", name, err)
		}
	}
	if ok, _ := migrate.Current(ctx, st, widgets(t, "  size: {type: integer}\n", "")); ok {
		t.Error("other search columns: current before Run")
	}
	changed := widgets(t, "  size: {type: integer}\n  color: {type: string}\n", "name")
	run(t, st, changed, migrate.Options{})
	if ok, err := migrate.Current(ctx, st, changed); err != nil || !ok {
		t.Errorf("not current after Run of the new definitions (%v)", err)
	}
	if current() {
		t.Error("still current for the old definitions")
	}
}
