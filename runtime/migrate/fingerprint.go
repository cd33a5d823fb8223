package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// fingerprintSetting names the settings row that holds the fingerprint of the last successful Run.
const fingerprintSetting = "schema_fingerprint"

// Fingerprint identifies the schema Run brings a database to for cat: a hash of every statement Run
// may issue for it — the system tables and their additions, each resource's table, indexes, full-text
// search and row-level security — and of the search columns and formula expressions it records. Two
// builds or two sets of definitions with the same fingerprint migrate a database identically.
//
// A new migration step must feed what it depends on into the hash here, or a database migrated before
// it would count as current (Current) without it.
func Fingerprint(d sqlgen.Dialect, cat *model.Catalog) string {
	h := sha256.New()
	write(h, "dialect", strconv.Itoa(int(d.Kind())))
	for _, sys := range systemTables(d) {
		write(h, "system", sys.name)
		write(h, sys.ddl...)
	}
	for _, a := range systemAdditions(d) {
		write(h, "addition", a.table, a.column, a.typ, a.index, a.ddl)
	}
	for _, table := range tenantSystemTables {
		write(h, "row security", table)
		write(h, d.RowSecurity(table)...)
	}
	for _, r := range cat.Resources {
		t := d.TableOf(r)
		write(h, "resource", r.Name, d.CreateTable(t, r))
		for _, ix := range d.Indexes(r) {
			write(h, "index", ix.Name, ix.SQL)
		}
		addColumn, create, drop := d.SearchDDL(t.Name)
		write(h, "search", strings.Join(t.Search, ","), addColumn)
		write(h, create...)
		write(h, drop...)
		for _, f := range r.Computed {
			write(h, "formula", f.Key, f.Formula.Expr)
		}
		write(h, d.RowSecurity(t.Name)...)
	}
	write(h, "leakproof", LeakproofSQL())
	return hex.EncodeToString(h.Sum(nil))
}

// write hashes each part followed by a NUL, so that ("ab", "c") and ("a", "bc") differ.
func write(h hash.Hash, parts ...string) {
	for _, p := range parts {
		io.WriteString(h, p)
		h.Write([]byte{0})
	}
}

// Current reports whether the last successful Run on st was for the schema cat describes: Run would
// then find nothing to do (unless the tables were changed by hand), and a process that only needs the
// database to be current may skip it and its database-wide lock. A database Run never completed on is
// not current.
func Current(ctx context.Context, st store.Store, cat *model.Catalog) (bool, error) {
	d := st.Dialect()
	exists, err := tableExists(ctx, st, d, "settings")
	if err != nil || !exists {
		return false, err
	}
	var have string
	found, err := store.QueryOne(ctx, st, d.Bind("SELECT value FROM settings WHERE name = ?", fingerprintSetting), func(row []any) error {
		have = store.Text(row[0])
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("read schema fingerprint: %w", err)
	}
	return found && have == Fingerprint(d, cat), nil
}

// recordFingerprint stores cat's fingerprint, at the end of a successful Run.
func recordFingerprint(ctx context.Context, q store.Querier, d sqlgen.Dialect, cat *model.Catalog) error {
	upsert := "INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
	if _, err := q.Exec(ctx, d.Bind(upsert, fingerprintSetting, Fingerprint(d, cat))); err != nil {
		return fmt.Errorf("record schema fingerprint: %w", err)
	}
	return nil
}
