package cmd_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// Run where its SQLite file is not, recordsctl does not create a new, empty database and report
// success: every command but migrate refuses, naming the absolute path and how to create it, and leaves
// no file or directory behind. migrate creates it. recordsd serve creates it too (a start migrates a
// database that is not current, and --dev relies on it) but logs a warning naming the file.
func TestMissingSQLiteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	abs := filepath.Join(dir, "data", "records.db")
	defs := servertest.DefinitionsDir()
	for _, args := range [][]string{
		{"workspace", "list"},
		{"workspace", "create", "--name", "Acme", "--plan", "growth"},
		{"--db", "sqlite:./data/records.db", "key", "list", "--workspace", "01a20f67-0000-7000-8000-000000000000"},
		{"seed", "--workspace", "01a20f67-0000-7000-8000-000000000000", "--resource", "contacts", "--count", "1"},
	} {
		stdout, stderr, code := exe(t, "recordsctl", dir, append([]string{"--definitions", defs}, args...)...)
		want := "no database at " + abs + " (sqlite:./data/records.db, relative to the working directory " + dir + "): create it with `recordsctl --db sqlite:" + abs + " migrate`"
		if code != 1 || stdout != "" || !strings.Contains(stderr, want) {
			t.Errorf("recordsctl %v: status %d, stdout %q, stderr %q; want status 1 and %q", args, code, stdout, stderr, want)
		}
	}
	other := filepath.Join(t.TempDir(), "elsewhere.db")
	if _, stderr, code := exe(t, "recordsctl", dir, "--definitions", defs, "--db", "sqlite:"+other, "workspace", "list"); code != 1 || !strings.Contains(stderr, "no database at "+other+": create it with") {
		t.Errorf("absolute path: status %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Fatalf("a refused command left %s/data behind (%v)", dir, err)
	}

	c := ctl{t: t, db: "sqlite:./data/records.db", dir: dir}
	if applied := c.run("migrate")["applied"].([]any); len(applied) == 0 {
		t.Fatal("migrate applied nothing")
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("migrate did not create %s: %v", abs, err)
	}
	c.run("workspace", "create", "--name", "Acme", "--plan", "growth")
	if got := c.run("workspace", "list")["data"].([]any); len(got) != 1 {
		t.Errorf("workspace list after migrate: %v", got)
	}

	fresh := t.TempDir()
	p := serve(t, ctl{t: t, db: "sqlite:./records.db", dir: fresh}, nil)
	// Logged before recordsd prints that it serves, but by a goroutine of its own (logwriter.go): it may
	// reach stderr a moment after stdout's line.
	warning := `"level":"WARN","msg":"created a new, empty SQLite database: the file did not exist","path":"` + filepath.Join(fresh, "records.db") + `"`
	if _, ok := servertest.WaitFor(10*time.Second, func() bool { return strings.Contains(p.logs(), warning) }); !ok {
		t.Errorf("recordsd serve on a missing file did not warn:\n%s", p.logs())
	}
}

// A command on a database migrated for the same definitions skips the migration and its database-wide
// lock: it answers while a migration holds the lock. On a database migrated for other definitions it
// still migrates first.
func TestAdminCommandsSkipCurrentMigration(t *testing.T) {
	t.Parallel()
	c := migrated(t, servertest.Postgres)
	ws := c.run("workspace", "create", "--name", "Locked", "--plan", "growth")["id"].(string)

	ctx := context.Background()
	st, err := store.Open(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- st.Lock(ctx, func(store.Querier) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	for _, args := range [][]string{{"key", "list", "--workspace", ws}, {"workspace", "set-plan", ws, "--plan", "pro"}, {"member", "list", "--workspace", ws}} {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		cmd := exec.CommandContext(cctx, filepath.Join(binDir, "recordsctl"), append([]string{"--db", c.db, "--definitions", servertest.DefinitionsDir(), "--json"}, args...)...)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("recordsctl %v while the migration lock is held: %v (waited for the lock?)\n%s", args, err, out)
		}
	}

	// Other definitions: the command waits for the lock, then migrates.
	defs := filepath.Join(t.TempDir(), "definitions")
	if err := os.CopyFS(defs, os.DirFS(servertest.DefinitionsDir())); err != nil {
		t.Fatal(err)
	}
	tags := filepath.Join(defs, "resources", "tags.yaml")
	data, _ := os.ReadFile(tags)
	os.WriteFile(tags, []byte(strings.Replace(string(data), "hooks: []", "  cli_probe:\n    type: string\n    label: Probe\nhooks: []", 1)), 0o644)
	stale := exec.Command(filepath.Join(binDir, "recordsctl"), "--db", c.db, "--definitions", defs, "--json", "workspace", "list")
	if err := stale.Start(); err != nil {
		t.Fatal(err)
	}
	// Released once the command waits for the lock (PostgreSQL lists its advisory lock not granted).
	waiting := func() bool {
		var n int64
		_, err := store.QueryOne(ctx, st, st.Dialect().Bind("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"),
			func(row []any) error { n = store.Int(row[0]); return nil })
		return err == nil && n > 0
	}
	if _, ok := servertest.WaitFor(30*time.Second, waiting); !ok {
		t.Error("workspace list with new definitions did not wait for the migration lock within 30 s")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := stale.Wait(); err != nil {
		t.Fatalf("workspace list with new definitions: %v", err)
	}
	out, err := exec.Command(filepath.Join(binDir, "recordsctl"), "--db", c.db, "--definitions", defs, "--json", "migrate").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"applied":[]`) {
		t.Errorf("workspace list did not migrate to the new definitions: migrate then applied %s", out)
	}
}
