package defset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/migrate"
	"github.com/workspace-records/records/runtime/store"
)

// Plan is what applying a set does: the definitions' changes and the migration's statements.
type Plan struct {
	From string `json:"from"` // the version served before, "" when none was stored
	To   string `json:"to"`
	// Unchanged: the set is the version served already; applying it changes nothing.
	Unchanged bool `json:"unchanged"`
	// Changes says what the definitions change, one line each (resources, fields, roles, plans).
	Changes []string `json:"changes"`
	// Migration lists what the database migration does, one line per statement kind and object.
	Migration []string `json:"migration"`
	// Destructive lists the changes that lose data or break what clients use (a resource, field or
	// role removed, a column dropped): applied only with AllowDestructive.
	Destructive []string `json:"destructive"`
	// Blocked lists the changes no apply can make (a field's type changed over stored data, a required
	// column without a default): the set is refused until they are undone or migrated by hand.
	Blocked []string `json:"blocked"`
}

// Options control Apply.
type Options struct {
	AllowDestructive bool
	// By names who applied the set (the operating-system user of recordsctl, "recordsd (SIGHUP)").
	By string
	// DryRun computes the plan and applies nothing (recordsctl definitions diff).
	DryRun bool
	Now    func() time.Time
	// Served is the set the caller knows the database serves (a server's own generation), to diff
	// against without compiling the stored files again; ignored unless it is the version stored.
	Served *Set
}

// ErrDestructive refuses a plan with destructive changes without Options.AllowDestructive.
var ErrDestructive = errors.New("the definitions make destructive changes; review them with `recordsctl definitions diff` and apply with --allow-destructive")

// ErrBlocked refuses a plan with changes no migration can make.
var ErrBlocked = errors.New("the definitions make changes the migration cannot apply")

// Apply migrates st to s and stores s as the version served, in one transaction that also tells every
// server (NOTIFY on PostgreSQL; the others poll): all or nothing. It first plans the migration in a
// transaction it rolls back, and refuses (ErrDestructive, ErrBlocked) what the options do not allow;
// the Plan is returned either way. With opts.DryRun it stops after the plan.
func Apply(ctx context.Context, st store.Store, s *Set, opts Options) (*Plan, error) {
	d := st.Dialect()
	migrated, err := migrate.TableExists(ctx, st, "definitions_versions")
	if err != nil {
		return nil, err
	}
	cur := ""
	if migrated {
		if cur, err = Current(ctx, st, d); err != nil {
			return nil, err
		}
	}
	p := &Plan{From: cur, To: s.ID, Changes: []string{}, Migration: []string{}, Destructive: []string{}, Blocked: []string{}}
	var from *model.Catalog
	var fromFiles map[string][]byte
	if opts.Served != nil && opts.Served.ID == cur {
		from, fromFiles = opts.Served.Catalog, opts.Served.Files
	} else if cur != "" {
		stored, found, err := Load(ctx, st, d, cur)
		if err != nil {
			return nil, err
		}
		if found {
			old, err := FromStored(stored)
			if err != nil {
				return nil, err
			}
			from, fromFiles = old.Catalog, old.Files
		}
	}
	if from != nil {
		p.Changes, p.Destructive = Diff(from, fromFiles, s.Catalog, s.Files)
	} else {
		p.Changes = append(p.Changes, "the first definitions version stored in this database")
	}
	if migrated {
		clashes, err := customClashes(ctx, st, s.Catalog)
		if err != nil {
			return nil, err
		}
		p.Blocked = append(p.Blocked, clashes...)
	}
	dry, err := migrate.Run(ctx, st, s.Catalog, migrate.Options{AllowDestructive: true, DryRun: true})
	if err != nil {
		return nil, fmt.Errorf("plan the migration: %w", err)
	}
	p.Migration = append(p.Migration, dry.Applied...)
	for _, line := range dry.Applied {
		if strings.HasPrefix(line, "drop ") {
			p.Destructive = append(p.Destructive, line)
		}
	}
	p.Blocked = append(p.Blocked, dry.Pending...)
	p.Unchanged = cur == s.ID && len(p.Migration) == 0
	switch {
	case len(p.Blocked) > 0:
		return p, fmt.Errorf("%w:\n  %s", ErrBlocked, strings.Join(p.Blocked, "\n  "))
	case len(p.Destructive) > 0 && !opts.AllowDestructive:
		return p, fmt.Errorf("%w:\n  %s", ErrDestructive, strings.Join(p.Destructive, "\n  "))
	case opts.DryRun || p.Unchanged:
		return p, nil
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	summary := append(append([]string{}, p.Changes...), p.Migration...)
	_, err = migrate.Run(ctx, st, s.Catalog, migrate.Options{AllowDestructive: opts.AllowDestructive, Then: func(q store.Querier) error {
		return save(ctx, q, d, s, opts.By, summary, now())
	}})
	if err != nil {
		return p, fmt.Errorf("apply definitions version %s: %w", s.Short(), err)
	}
	return p, nil
}

// Record stores s as the version served without migrating (the caller has: a server's start, which
// migrates as it always has).
func Record(ctx context.Context, st store.Store, s *Set, by string, changes []string) error {
	return st.Tx(ctx, func(q store.Querier) error { return save(ctx, q, st.Dialect(), s, by, changes, time.Now()) })
}

// customClashes lists the custom fields of any workspace whose key a resource of cat now declares: a
// declared field would hide them.
func customClashes(ctx context.Context, st store.Store, cat *model.Catalog) ([]string, error) {
	var out []string
	err := st.Query(ctx, st.Dialect().Bind("SELECT DISTINCT resource, key FROM custom_field_defs ORDER BY resource, key"), func(row []any) error {
		resource, key := store.Text(row[0]), store.Text(row[1])
		if r, ok := cat.Resource(resource); ok {
			if _, declared := r.Field(key); declared {
				out = append(out, fmt.Sprintf("%s.%s: a workspace has a custom field with this key; rename the declared field or delete the custom field first", resource, key))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read custom fields: %w", err)
	}
	return out, nil
}

// Diff lists what changes from one catalog to the other, and which of those changes are destructive
// (a resource, field, association or role removed, a field's type changed), one line each.
func Diff(from *model.Catalog, fromFiles map[string][]byte, to *model.Catalog, toFiles map[string][]byte) (changes, destructive []string) {
	changes, destructive = []string{}, []string{}
	add := func(destroys bool, format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		changes = append(changes, line)
		if destroys {
			destructive = append(destructive, line)
		}
	}
	for _, r := range to.Resources {
		old, ok := from.Resource(r.Name)
		if !ok {
			add(false, "add resource %s (%d fields)", r.Name, len(declared(r)))
			continue
		}
		for _, f := range declared(r) {
			of, ok := old.Field(f.Key)
			switch {
			case !ok:
				add(false, "add field %s.%s (%s)", r.Name, f.Key, f.Type)
			case of.Type != f.Type:
				add(true, "change field %s.%s from %s to %s", r.Name, f.Key, of.Type, f.Type)
			case of.Required != f.Required && f.Required:
				add(false, "field %s.%s becomes required (records stored without it keep no value)", r.Name, f.Key)
			}
		}
		for _, f := range declared(old) {
			if _, ok := r.Field(f.Key); !ok {
				add(true, "remove field %s.%s", r.Name, f.Key)
			}
		}
		for _, a := range old.Associations {
			if _, ok := r.Association(a.Name); !ok {
				add(true, "remove association %s.%s", r.Name, a.Name)
			}
		}
		for _, a := range r.Associations {
			if _, ok := old.Association(a.Name); !ok {
				add(false, "add association %s.%s", r.Name, a.Name)
			}
		}
	}
	for _, r := range from.Resources {
		if _, ok := to.Resource(r.Name); !ok {
			add(true, "remove resource %s (its table and records are kept)", r.Name)
		}
	}
	for _, r := range from.Roles {
		if _, ok := to.Role(r.Name); !ok {
			add(true, "remove role %s (members holding it lose their access)", r.Name)
		}
	}
	for _, r := range to.Roles {
		if _, ok := from.Role(r.Name); !ok {
			add(false, "add role %s", r.Name)
		}
	}
	for _, p := range from.Plans {
		if _, ok := to.Plan(p.Name); !ok {
			add(true, "remove plan %s (workspaces on it are refused)", p.Name)
		}
	}
	for _, p := range to.Plans {
		if _, ok := from.Plan(p.Name); !ok {
			add(false, "add plan %s", p.Name)
		}
	}
	// Whatever else changed in a file kept (labels, descriptions, options, rules, permissions, limits).
	names := make([]string, 0, len(toFiles))
	for name := range toFiles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if old, ok := fromFiles[name]; ok && !bytes.Equal(old, toFiles[name]) {
			add(false, "edit %s", name)
		}
	}
	return changes, destructive
}

// declared returns r's declared (not engine-managed) fields.
func declared(r *model.Resource) []*model.Field {
	var out []*model.Field
	for _, f := range r.Fields {
		if !f.Managed {
			out = append(out, f)
		}
	}
	return out
}
