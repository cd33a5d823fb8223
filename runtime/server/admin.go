package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/defset"
	"github.com/workspace-records/records/runtime/jobs"
	"github.com/workspace-records/records/runtime/migrate"
	"github.com/workspace-records/records/runtime/store"
)

// AdminOptions say what an administrative command (recordsctl) needs of the backend, so that a command
// that needs less starts sooner.
type AdminOptions struct {
	// Migrate runs the whole migration (recordsctl migrate), and creates a missing SQLite file. Without
	// it a missing SQLite file is an error naming its absolute path, and the migration runs only when the
	// database is not current (migrate.Current): other definitions or another version migrated it last,
	// or nothing did.
	Migrate bool
	// Schemas compiles the resources' JSON Schemas, which validating record bodies needs (records
	// import, seed).
	Schemas bool
	// Jobs gives the backend its jobs service (recordsctl jobs), without a runner: the servers run the
	// jobs.
	Jobs bool
}

// OpenAdmin is Open for an administrative command: it does what opts ask and no more.
func OpenAdmin(ctx context.Context, cfg config.Config, opts AdminOptions) (*Backend, error) {
	b, err := open(ctx, cfg, openOptions{schemas: opts.Schemas || opts.Jobs, create: opts.Migrate, migrate: opts.Migrate, record: opts.Migrate})
	if err != nil {
		return nil, err
	}
	if opts.Jobs {
		b.Jobs = jobs.New(b.Store, b.heldRecords, b.jobActor, slog.New(slog.DiscardHandler))
	}
	return b, nil
}

// ApplyDefinitions validates the definitions directory dir whole and applies it to cfg's database
// (defset.Apply, or only plans it with opts.DryRun): every server on the database switches to it within
// seconds (docs/issue-25.md).
func ApplyDefinitions(ctx context.Context, cfg config.Config, dir string, opts defset.Options) (*defset.Set, *defset.Plan, error) {
	set, err := defset.Dir(dir)
	if err != nil {
		return nil, nil, err
	}
	if err := sqliteExists(cfg.DB); err != nil {
		return set, nil, err
	}
	st, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return set, nil, err
	}
	defer st.Close()
	plan, err := defset.Apply(ctx, st, set, opts)
	return set, plan, err
}

// DefinitionsHistory lists the definitions versions cfg's database stored, newest first, and the one
// it serves.
func DefinitionsHistory(ctx context.Context, cfg config.Config, limit int) (current string, versions []defset.Stored, err error) {
	if err := sqliteExists(cfg.DB); err != nil {
		return "", nil, err
	}
	st, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return "", nil, err
	}
	defer st.Close()
	exists, err := migrate.TableExists(ctx, st, "definitions_versions")
	if err != nil || !exists {
		return "", []defset.Stored{}, err
	}
	if current, err = defset.Current(ctx, st, st.Dialect()); err != nil {
		return "", nil, err
	}
	versions, err = defset.History(ctx, st, st.Dialect(), limit)
	return current, versions, err
}

// sqlitePath returns the absolute path of the SQLite file db names, "" when db is not sqlite:PATH.
func sqlitePath(db string) string {
	path, ok := strings.CutPrefix(db, "sqlite:")
	if !ok {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// sqliteExists checks that the SQLite file db names exists (nil for any other database). Run from
// another directory, a relative path names a file that is not there: opening it would create a new,
// empty database, so the error says where it looked and how to create one on purpose.
func sqliteExists(db string) error {
	path := sqlitePath(db)
	if path == "" {
		return nil
	}
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("database %s: %w", path, err)
	}
	where := ""
	if raw := strings.TrimPrefix(db, "sqlite:"); !filepath.IsAbs(raw) {
		wd, _ := os.Getwd()
		where = fmt.Sprintf(" (%s, relative to the working directory %s)", db, wd)
	}
	return fmt.Errorf("no database at %s%s: create it with `recordsctl --db sqlite:%s migrate`, or point --db (or RECORDS_DB) at an existing database",
		path, where, path)
}
