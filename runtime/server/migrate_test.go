package server_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// definitionsWith copies the shipped definitions to a temporary directory and adds extra resource files.
func definitionsWith(t testing.TB, extra map[string]string) string {
	t.Helper()
	dst := servertest.CopyDefinitions(t)
	for name, text := range extra {
		if err := os.WriteFile(filepath.Join(dst, "resources", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func widgetsYAML(t *testing.T) string {
	data, err := os.ReadFile("testdata/widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A resource that exists only as a YAML file is served with all its operations, with no Go change.
func TestYAMLOnlyResource(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			dir := definitionsWith(t, map[string]string{"widgets.yaml": widgetsYAML(t)})
			e := servertest.Start(t, b, servertest.Options{DefinitionsDir: dir})
			if !contains(e.Server.Backend().Migration.Applied, "create table rec_widgets") {
				t.Errorf("migration did not create rec_widgets: %v", e.Server.Backend().Migration.Applied)
			}
			runLifecycle(t, e, map[string]bool{"widgets": true, "companies": true})
			e.Expect(e.Do("GET", "/v1/resources/widgets", nil), 200, "")
			e.Expect(e.Do("GET", "/v1/widgets?search=widget&sort=weight_kg", nil), 200, "")
			if l := e.Do("GET", "/v1/resources", nil).List(); len(l) != 45 {
				t.Errorf("resources: %d, want 45", len(l))
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func openBackend(t *testing.T, db, dir string, destructive bool) *server.Backend {
	t.Helper()
	cfg := config.Default(func(string) string { return "" })
	cfg.DB, cfg.DefinitionsDir, cfg.AllowDestructive = db, dir, destructive
	b, err := server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A field added to a definition becomes a column at the next start; a removed one stays until asked.
func TestAdditiveMigration(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			db := servertest.DatabaseURL(t, b)
			v1 := definitionsWith(t, map[string]string{"widgets.yaml": widgetsYAML(t)})
			openBackend(t, db, v1, false).Close()

			v2 := definitionsWith(t, map[string]string{"widgets.yaml": strings.Replace(strings.Replace(widgetsYAML(t),
				"  notes: {type: text, max_length: 5000}\n",
				"  colour: {type: string, max_length: 20, sortable: true}\n", 1), "search: [name, notes]", "search: [name]", 1)})
			be := openBackend(t, db, v2, false)
			applied := strings.Join(be.Migration.Applied, "\n")
			if !strings.Contains(applied, "add column rec_widgets.colour") || !strings.Contains(applied, "create index rec_widgets_colour_idx") {
				t.Errorf("applied:\n%s", applied)
			}
			if !strings.Contains(applied, "create search on rec_widgets (name)") {
				t.Errorf("search not rebuilt for the new search fields:\n%s", applied)
			}
			if p := strings.Join(be.Migration.Pending, "\n"); !strings.Contains(p, "drop column rec_widgets.notes") {
				t.Errorf("pending: %s", p)
			}
			be.Close()
			again := openBackend(t, db, v2, false)
			if len(again.Migration.Applied) != 0 {
				t.Errorf("second start applied %v", again.Migration.Applied)
			}
			again.Close()
			d := openBackend(t, db, v2, true)
			if !contains(d.Migration.Applied, "drop column rec_widgets.notes") {
				t.Errorf("destructive run applied %v", d.Migration.Applied)
			}
			d.Close()
		})
	}
}

// Servers starting together against one PostgreSQL database migrate one after another without error.
func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	db := servertest.DatabaseURL(t, servertest.Postgres)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := config.Default(func(string) string { return "" })
			cfg.DB, cfg.DefinitionsDir, cfg.PluginsDir = db, servertest.DefinitionsDir(), servertest.ShippedPlugins(t)
			s, err := server.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A start on a database already current skips the migration and its database-wide lock: on PostgreSQL
// it does not wait for a migration holding the lock. What the last migration left pending is still its result, and
// logged as a start that migrates logs it.
func TestStartSkipsCurrentMigration(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			db := servertest.DatabaseURL(t, b)
			v1 := definitionsWith(t, map[string]string{"widgets.yaml": widgetsYAML(t)})
			openBackend(t, db, v1, false).Close()
			v2 := definitionsWith(t, map[string]string{"widgets.yaml": strings.Replace(strings.Replace(widgetsYAML(t),
				"  notes: {type: text, max_length: 5000}\n", "", 1), "search: [name, notes]", "search: [name]", 1)})
			holder := openBackend(t, db, v2, false) // migrates: rec_widgets.notes left pending
			defer holder.Close()
			if !strings.Contains(strings.Join(holder.Migration.Pending, "\n"), "drop column rec_widgets.notes") {
				t.Fatalf("pending: %v", holder.Migration.Pending)
			}
			// The lock is PostgreSQL's advisory lock; SQLite's is its write transaction, which the
			// start's own first write waits for.
			held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			if b == servertest.Postgres {
				go func() {
					done <- holder.Store.Lock(context.Background(), func(store.Querier) error {
						close(held)
						<-release
						return nil
					})
				}()
				<-held
			} else {
				done <- nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cfg := config.Default(func(string) string { return "" })
			cfg.DB, cfg.DefinitionsDir, cfg.PluginsDir = db, v2, servertest.ShippedPlugins(t)
			log := &proc.Buffer{}
			began := time.Now()
			s, err := server.New(ctx, cfg, slog.New(slog.NewJSONHandler(log, nil)))
			took := time.Since(began)
			close(release)
			if err := <-done; err != nil {
				t.Fatalf("the lock holder: %v", err)
			}
			if err != nil {
				t.Fatalf("start while a migration holds the lock (after %v): %v", took, err)
			}
			defer s.Close()
			m := s.Backend().Migration
			if len(m.Applied) != 0 || !strings.Contains(strings.Join(m.Pending, "\n"), "drop column rec_widgets.notes") {
				t.Errorf("the start's migration result: applied %v, pending %v", m.Applied, m.Pending)
			}
			if n := log.Count(`"msg":"migration pending","change":"drop column rec_widgets.notes`); n != 1 {
				t.Errorf("%d warnings of the pending drop, want 1; log:\n%s", n, log.Tail())
			}
		})
	}
}
