package migrate_test

import (
	"context"
	"slices"
	"testing"

	"github.com/workspace-records/records/engine/model"
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

// Unchanged gives Run's result on a current database without running it: nothing applied, and what the
// last Run left pending for the schema. It gives nothing (Run must run) on a database that is not
// current, or whose last Run did not record what it left pending.
func TestUnchanged(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	unchanged := func(cat *model.Catalog) *migrate.Result {
		t.Helper()
		res, err := migrate.Unchanged(ctx, st, cat)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	v1 := widgets(t, "  size: {type: integer}\n  color: {type: string}\n", "name")
	if res := unchanged(v1); res != nil {
		t.Fatalf("an empty database is unchanged: %+v", res)
	}
	run(t, st, v1, migrate.Options{})
	if res := unchanged(v1); res == nil || len(res.Applied) != 0 || len(res.Pending) != 0 || res.Applied == nil {
		t.Fatalf("after Run: %+v, want nothing applied (an empty list) and nothing pending", res)
	}
	v2 := widgets(t, "  size: {type: integer}\n", "name")
	if res := unchanged(v2); res != nil {
		t.Fatalf("other definitions: unchanged before Run: %+v", res)
	}
	ran := run(t, st, v2, migrate.Options{})
	if len(ran.Pending) == 0 {
		t.Fatal("removing a field left nothing pending")
	}
	if res := unchanged(v2); res == nil || len(res.Applied) != 0 || !slices.Equal(res.Pending, ran.Pending) {
		t.Fatalf("after a Run that left %q pending: %+v", ran.Pending, res)
	}
	run(t, st, v2, migrate.Options{AllowDestructive: true})
	if res := unchanged(v2); res == nil || len(res.Pending) != 0 {
		t.Fatalf("after the destructive Run: %+v, want nothing pending", res)
	}
	// A database last migrated by a version that recorded only the fingerprint is migrated again.
	if _, err := st.Exec(ctx, sqlgen.Stmt{SQL: "DELETE FROM settings WHERE name = 'schema_pending'"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := migrate.Current(ctx, st, v2); err != nil || !ok {
		t.Fatalf("not current without the pending record (%v)", err)
	}
	if res := unchanged(v2); res != nil {
		t.Fatalf("unchanged without the pending record: %+v", res)
	}
	run(t, st, v2, migrate.Options{})
	if res := unchanged(v2); res == nil {
		t.Fatal("Run did not record what it left pending")
	}
}
