package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// pendingSetting names the settings row that holds, as a JSON array, the changes the last successful
// Run left pending for the schema: its Result.Pending but the leakproof check's line, which is about the
// database and is checked anew (Unchanged).
const pendingSetting = "schema_pending"

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
		write(h, "addition", a.table, a.column, a.typ, a.index, a.ddl, a.storage)
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
	rec, err := recorded(ctx, st)
	if err != nil {
		return false, err
	}
	have, found := rec[fingerprintSetting]
	return found && have == Fingerprint(st.Dialect(), cat), nil
}

// Unchanged returns what Run would return on st for cat, without running it, when st is current
// (Current): nothing applied; pending, the changes the last Run left pending for this schema (recorded
// with its fingerprint) and, on PostgreSQL, the numeric comparisons not leakproof now. It returns nil
// when Run has to run: st is not current, or its last Run was by a version that did not record what it
// left pending. A process that runs Run at every start (recordsd) calls it first, and skips Run and its
// database-wide lock when it returns a result; with Options.AllowDestructive it must run Run, which
// would apply the destructive changes pending. Like Current, it does not notice tables changed by hand
// since the last Run: recordsctl migrate, which always runs Run, repairs them.
//
// The fingerprint and the pending changes are written by one transaction (Run's) and read by one
// statement here, so a process starting while another migrates sees both of the same Run, or neither.
func Unchanged(ctx context.Context, st store.Store, cat *model.Catalog) (*Result, error) {
	rec, err := recorded(ctx, st)
	if err != nil {
		return nil, err
	}
	d := st.Dialect()
	have, found := rec[fingerprintSetting]
	text, known := rec[pendingSetting]
	if !found || !known || have != Fingerprint(d, cat) {
		return nil, nil
	}
	res := &Result{Applied: []string{}}
	if err := json.Unmarshal([]byte(text), &res.Pending); err != nil {
		return nil, nil // not as this version writes it: Run, which writes it again
	}
	if err := checkLeakproof(ctx, st, d, res); err != nil {
		return nil, err
	}
	return res, nil
}

// recorded reads what the last successful Run recorded in settings: the fingerprint and the pending
// changes, by name (none when the settings table does not exist yet).
func recorded(ctx context.Context, st store.Store) (map[string]string, error) {
	d := st.Dialect()
	out := map[string]string{}
	exists, err := tableExists(ctx, st, d, "settings")
	if err != nil || !exists {
		return out, err
	}
	err = st.Query(ctx, d.Bind("SELECT name, value FROM settings WHERE name IN (?, ?)", fingerprintSetting, pendingSetting), func(row []any) error {
		out[store.Text(row[0])] = store.Text(row[1])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read schema fingerprint: %w", err)
	}
	return out, nil
}

// recordFingerprint stores cat's fingerprint and what the schema left pending, at the end of a
// successful Run.
func recordFingerprint(ctx context.Context, q store.Querier, d sqlgen.Dialect, cat *model.Catalog, pending []string) error {
	if pending == nil {
		pending = []string{}
	}
	text, err := json.Marshal(pending)
	if err != nil {
		return fmt.Errorf("record pending changes: %w", err)
	}
	upsert := "INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
	if _, err := q.Exec(ctx, d.Bind(upsert, fingerprintSetting, Fingerprint(d, cat))); err != nil {
		return fmt.Errorf("record schema fingerprint: %w", err)
	}
	if _, err := q.Exec(ctx, d.Bind(upsert, pendingSetting, string(text))); err != nil {
		return fmt.Errorf("record pending changes: %w", err)
	}
	return nil
}
