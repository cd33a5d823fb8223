package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/workspace-records/records/runtime/config"
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
}

// OpenAdmin is Open for an administrative command: it does what opts ask and no more.
func OpenAdmin(ctx context.Context, cfg config.Config, opts AdminOptions) (*Backend, error) {
	return open(ctx, cfg, openOptions{schemas: opts.Schemas, create: opts.Migrate, migrate: opts.Migrate})
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
