// Package defset keeps the definitions sets a database serves (docs/issue-25.md): a set is the YAML files
// of a definitions directory, named by the SHA-256 of their contents (its version); `recordsctl
// definitions apply` validates a set whole, migrates the database to it and stores it as the version
// served, in one transaction; every server watches for a new version (LISTEN/NOTIFY on PostgreSQL and a
// one-second poll everywhere) and switches to it.
package defset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing/fstest"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/spec"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// Set is one definitions set, compiled.
type Set struct {
	// ID is the version: the hex SHA-256 of the files (Version).
	ID string
	// Files are the set's YAML files by path within the directory (resources/deals.yaml, roles.yaml).
	Files   map[string][]byte
	Catalog *model.Catalog
}

// Short is the version as logs and tables print it: its first 12 hex digits.
func (s *Set) Short() string { return Short(s.ID) }

// Short shortens a version id for people.
func Short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Read reads the files of the definitions directory fsys that make a set: resources/*.yaml, roles.yaml
// and plans.yaml (what engine/spec.Load reads).
func Read(fsys fs.FS) (map[string][]byte, error) {
	names, err := fs.Glob(fsys, "resources/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("read definitions: %w", err)
	}
	names = append(names, "roles.yaml", "plans.yaml")
	files := make(map[string][]byte, len(names))
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if errors.Is(err, fs.ErrNotExist) && !strings.HasPrefix(name, "resources/") {
			continue // engine/spec reports the missing file with the other problems
		}
		if err != nil {
			return nil, fmt.Errorf("read definitions: %w", err)
		}
		files[name] = data
	}
	return files, nil
}

// Version is the id of the set of files: the SHA-256 of every path and content, in path order.
func Version(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(files[name]))
		h.Write(files[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Compile validates files whole and compiles them; the error (*Invalid) lists every problem found.
func Compile(files map[string][]byte) (*Set, error) {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	set, errs := spec.Load(fsys)
	var cat *model.Catalog
	if !set.Partial {
		// Also when the meta-schema refused parts of files: the cross-references and formulas of the
		// rest are checked in the same pass (Compile leaves out what the meta-schema refused).
		var cerrs field.ErrorList
		cat, cerrs = model.Compile(set)
		errs = append(errs, cerrs...)
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool {
			a, b := errs[i], errs[j]
			if a.File != b.File {
				return a.File < b.File
			}
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Column < b.Column
		})
		return nil, &Invalid{Problems: errs}
	}
	return &Set{ID: Version(files), Files: files, Catalog: cat}, nil
}

// Dir reads and compiles the definitions directory dir; a refusal names the files under dir as it is
// written.
func Dir(dir string) (*Set, error) {
	files, err := Read(os.DirFS(dir))
	if err != nil {
		return nil, err
	}
	s, err := Compile(files)
	var inv *Invalid
	if errors.As(err, &inv) {
		inv.Dir = dir
	}
	return s, err
}

// Invalid refuses a definitions set: every problem found, of every file, each placed at its file, line
// and column (syntax, meta-schema, cross-references and formulas alike).
type Invalid struct {
	// Dir is the definitions directory as the user gave it (flag or configuration); "" names the files
	// relative to it (a stored set).
	Dir      string
	Problems field.ErrorList // ordered by file, line and column
}

// Lines renders each problem as `file:line:col: path: message` (field.Error.Located), the file under
// Dir: the format compilers, go vet and eslint's unix formatter print, which editors and CI annotate.
func (e *Invalid) Lines() []string { return e.Problems.Located(e.Prefix()) }

// Prefix is what comes before a problem's File to name the file as the user would: Dir and a
// separator, kept as written ("./defs" stays "./defs/"), or "".
func (e *Invalid) Prefix() string {
	prefix := e.Dir
	if prefix != "" && !strings.HasSuffix(prefix, "/") && !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return prefix
}

func (e *Invalid) Error() string { return "definitions:\n" + strings.Join(e.Lines(), "\n") }

// Channel is the PostgreSQL notification channel of a new version.
const Channel = "records_definitions"

// setting is the settings row naming the version served.
const setting = "definitions_version"

// Current returns the version the database serves, "" before any set was stored.
func Current(ctx context.Context, q store.Querier, d sqlgen.Dialect) (string, error) {
	var id string
	_, err := store.QueryOne(ctx, q, d.Bind("SELECT value FROM settings WHERE name = ?", setting), func(row []any) error {
		id, _ = row[0].(string)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read the definitions version: %w", err)
	}
	return id, nil
}

// Stored is a set as the database keeps it.
type Stored struct {
	ID        string
	Files     map[string][]byte
	AppliedAt time.Time
	AppliedBy string
	Changes   []string
}

// Load reads the stored set id; found is false when the database has none by that id.
func Load(ctx context.Context, q store.Querier, d sqlgen.Dialect, id string) (*Stored, bool, error) {
	var s *Stored
	var decodeErr error
	found, err := store.QueryOne(ctx, q, d.Bind("SELECT id, files, applied_at, applied_by, changes FROM definitions_versions WHERE id = ?", id), func(row []any) error {
		s = &Stored{ID: store.Text(row[0]), AppliedBy: store.Text(row[3])}
		if s.AppliedAt, decodeErr = store.Time(row[2]); decodeErr != nil {
			return nil
		}
		var files map[string]string
		if decodeErr = json.Unmarshal([]byte(store.Text(row[1])), &files); decodeErr != nil {
			return nil
		}
		s.Files = make(map[string][]byte, len(files))
		for name, text := range files {
			s.Files[name] = []byte(text)
		}
		decodeErr = json.Unmarshal([]byte(store.Text(row[4])), &s.Changes)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("read definitions version %s: %w", Short(id), err)
	}
	if decodeErr != nil {
		return nil, false, fmt.Errorf("read definitions version %s: %w", Short(id), decodeErr)
	}
	return s, found, nil
}

// Known reports whether the database has ever stored set id.
func Known(ctx context.Context, q store.Querier, d sqlgen.Dialect, id string) (bool, error) {
	found, err := store.QueryOne(ctx, q, d.Bind("SELECT 1 FROM definitions_versions WHERE id = ?", id), func([]any) error { return nil })
	if err != nil {
		return false, fmt.Errorf("read definitions versions: %w", err)
	}
	return found, nil
}

// ByStart is Stored.AppliedBy of a set a server's start stored: its definitions directory, served
// because no version applied since superseded it (see server.chooseSet).
const ByStart = "recordsd start"

// save stores s and makes it the version served; a set stored before is made current again, with the
// time, actor and changes of this application.
func save(ctx context.Context, q store.Querier, d sqlgen.Dialect, s *Set, by string, changes []string, now time.Time) error {
	files := make(map[string]string, len(s.Files))
	for name, data := range s.Files {
		files[name] = string(data)
	}
	fj, err := json.Marshal(files)
	if err != nil {
		return fmt.Errorf("store definitions: %w", err)
	}
	if changes == nil {
		changes = []string{}
	}
	cj, _ := json.Marshal(changes)
	if _, err := q.Exec(ctx, d.Bind("INSERT INTO definitions_versions (id, files, applied_at, applied_by, changes) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET applied_at = excluded.applied_at, applied_by = excluded.applied_by, changes = excluded.changes",
		s.ID, string(fj), now.UTC().Truncate(time.Microsecond), by, string(cj))); err != nil {
		return fmt.Errorf("store definitions version: %w", err)
	}
	if _, err := q.Exec(ctx, d.Bind("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value", setting, s.ID)); err != nil {
		return fmt.Errorf("store definitions version: %w", err)
	}
	if d.Kind() == sqlgen.Postgres {
		// Delivered at commit, to every server listening (Watch).
		if _, err := q.Exec(ctx, d.Bind("SELECT pg_notify(?, ?)", Channel, s.ID)); err != nil {
			return fmt.Errorf("notify the definitions version: %w", err)
		}
	}
	return nil
}

// History lists the stored versions, newest first, without their files.
func History(ctx context.Context, q store.Querier, d sqlgen.Dialect, limit int) ([]Stored, error) {
	var out []Stored
	err := q.Query(ctx, d.Bind("SELECT id, applied_at, applied_by, changes FROM definitions_versions ORDER BY applied_at DESC, id LIMIT ?", limit), func(row []any) error {
		s := Stored{ID: store.Text(row[0]), AppliedBy: store.Text(row[2])}
		var err error
		if s.AppliedAt, err = store.Time(row[1]); err != nil {
			return err
		}
		_ = json.Unmarshal([]byte(store.Text(row[3])), &s.Changes)
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read definitions versions: %w", err)
	}
	return out, nil
}

// FromStored compiles a stored set.
func FromStored(s *Stored) (*Set, error) {
	set, err := Compile(s.Files)
	if err != nil {
		return nil, fmt.Errorf("stored definitions version %s: %w", Short(s.ID), err)
	}
	return set, nil
}
