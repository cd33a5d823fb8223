package defset_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/defset"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// The version is of the files: the same files give the same id whatever their order; a change of one
// byte, or of a file's name, gives another.
func TestVersion(t *testing.T) {
	a := map[string][]byte{"roles.yaml": []byte("a"), "resources/x.yaml": []byte("b")}
	b := map[string][]byte{"resources/x.yaml": []byte("b"), "roles.yaml": []byte("a")}
	if defset.Version(a) != defset.Version(b) {
		t.Error("the same files give two versions")
	}
	for name, other := range map[string]map[string][]byte{
		"content": {"roles.yaml": []byte("a"), "resources/x.yaml": []byte("c")},
		"name":    {"roles.yaml": []byte("a"), "resources/y.yaml": []byte("b")},
		"shifted": {"roles.yaml": []byte("ar"), "resources/x.yaml": []byte("")},
	} {
		if defset.Version(other) == defset.Version(a) {
			t.Errorf("%s changed, same version", name)
		}
	}
}

// Apply on both backends: the first set is stored; an additive change is planned and applied whole,
// the version served moves, and Watch hears of it; applying it again changes nothing; a removal is
// refused without AllowDestructive (nothing applied) and applied with it; a set that does not compile is
// refused with every problem placed.
func TestApply(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := store.Open(ctx, servertest.DatabaseURL(t, b))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			d := st.Dialect()
			dir := servertest.CopyDefinitions(t)
			first, err := defset.Dir(dir)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := defset.Apply(ctx, st, first, defset.Options{By: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if plan.From != "" || len(plan.Migration) == 0 || plan.Unchanged {
				t.Fatalf("first apply: %+v", plan)
			}

			var mu sync.Mutex
			var heard []string
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			go defset.Watch(wctx, st, 50*time.Millisecond, func(id string) {
				mu.Lock()
				heard = append(heard, id)
				mu.Unlock()
			}, func(err error) { t.Error(err) })

			servertest.EvolveDefinitions(t, dir)
			second, err := defset.Dir(dir)
			if err != nil {
				t.Fatal(err)
			}
			dry, err := defset.Apply(ctx, st, second, defset.Options{By: "test", DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if cur, _ := defset.Current(ctx, st, d); cur != first.ID {
				t.Fatalf("a dry run changed the version served to %s", cur)
			}
			want := []string{"add resource " + servertest.LiveResource + " (5 fields)", "add field tags." + servertest.LiveField + " (string)", "edit resources/tags.yaml"}
			if !slices.Equal(dry.Changes, want) || len(dry.Destructive) != 0 || !slices.ContainsFunc(dry.Migration, func(l string) bool { return strings.Contains(l, "add column rec_tags."+servertest.LiveField) }) {
				t.Fatalf("plan: %+v", dry)
			}
			applied, err := defset.Apply(ctx, st, second, defset.Options{By: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(applied.Migration, dry.Migration) {
				t.Errorf("applied %v, planned %v", applied.Migration, dry.Migration)
			}
			if cur, _ := defset.Current(ctx, st, d); cur != second.ID {
				t.Fatalf("version served %s, want %s", cur, second.ID)
			}
			deadline := time.Now().Add(2 * time.Second)
			for {
				mu.Lock()
				got := slices.Clone(heard)
				mu.Unlock()
				if slices.Equal(got, []string{first.ID, second.ID}) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("Watch heard %v", got)
				}
				time.Sleep(10 * time.Millisecond)
			}
			again, err := defset.Apply(ctx, st, second, defset.Options{By: "test"})
			if err != nil || !again.Unchanged {
				t.Fatalf("apply again: %+v %v", again, err)
			}

			// Back to the first set: removals.
			_, err = defset.Apply(ctx, st, first, defset.Options{By: "test"})
			if !errors.Is(err, defset.ErrDestructive) {
				t.Fatalf("removal without AllowDestructive: %v", err)
			}
			if cur, _ := defset.Current(ctx, st, d); cur != second.ID {
				t.Fatalf("a refused apply changed the version served to %s", cur)
			}
			back, err := defset.Apply(ctx, st, first, defset.Options{By: "test", AllowDestructive: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(back.Destructive, "remove resource "+servertest.LiveResource+" (its table and records are kept)") ||
				!slices.Contains(back.Migration, "drop column rec_tags."+servertest.LiveField) {
				t.Fatalf("destructive plan: %+v", back)
			}
			stored, found, err := defset.Load(ctx, st, d, second.ID)
			if err != nil || !found || len(stored.Files) != len(second.Files) || stored.AppliedBy != "test" {
				t.Fatalf("stored set: %v %v %+v", found, err, stored)
			}
			history, err := defset.History(ctx, st, d, 10)
			if err != nil || len(history) != 2 || history[0].ID != first.ID {
				t.Fatalf("history: %+v %v", history, err)
			}

			line := servertest.BreakDefinitions(t, dir)
			_, err = defset.Dir(dir)
			var inv *defset.Invalid
			if !errors.As(err, &inv) || len(inv.Lines()) == 0 || !strings.HasPrefix(inv.Lines()[0], filepath.Join(dir, "resources", "tags.yaml")+":"+strconv.Itoa(line)+":") {
				t.Fatalf("broken set: %v", err)
			}
		})
	}
}

// A custom field whose key a new declared field would take blocks the apply.
func TestApplyBlockedByCustomField(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, servertest.DatabaseURL(t, servertest.SQLite))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := servertest.CopyDefinitions(t)
	first, err := defset.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := defset.Apply(ctx, st, first, defset.Options{By: "test"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	if _, err := st.Exec(ctx, st.Dialect().Bind(`INSERT INTO custom_field_defs (workspace_id, id, resource, key, type, label, description, required, archived, created_at, updated_at)
VALUES (?, ?, 'tags', ?, 'string', 'Emoji', '', 0, 0, ?, ?)`, "0192f0e0-0000-7000-8000-000000000001", "0192f0e0-0000-7000-8000-000000000002", servertest.LiveField, now, now)); err != nil {
		t.Fatal(err)
	}
	servertest.EvolveDefinitions(t, dir)
	second, err := defset.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := defset.Apply(ctx, st, second, defset.Options{By: "test", AllowDestructive: true})
	if !errors.Is(err, defset.ErrBlocked) || len(plan.Blocked) != 1 || !strings.HasPrefix(plan.Blocked[0], "tags."+servertest.LiveField+": a workspace has a custom field") {
		t.Fatalf("apply over a custom field: %v %+v", err, plan)
	}
	if cur, _ := defset.Current(ctx, st, st.Dialect()); cur != first.ID {
		t.Fatalf("a blocked apply changed the version served")
	}
}
