package events

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/runtime/store"
)

// Stored is one numbered event as stored, unredacted.
type Stored struct {
	Seq                          int64
	ID, Type, Resource, RecordID string
	ModelID                      string
	MemberID, KeyID, RequestID   string
	Data, Previous               map[string]any
	CreatedAt                    time.Time
}

// Filter selects events of one workspace.
type Filter struct {
	After     int64    // events with a sequence above After
	Resources []string // only these resources (nil: every resource; an empty non-nil list: none)
	Types     []string // only these types (nil: every type)
	Limit     int      // at most this many
}

// Read returns the numbered events of workspace that f selects, in sequence order.
func Read(ctx context.Context, st store.Store, workspace string, f Filter) ([]Stored, error) {
	if f.Resources != nil && len(f.Resources) == 0 {
		return nil, nil
	}
	where, args := "n.workspace_id = ? AND n.seq > ?", []any{workspace, f.After}
	where, args = in(where, args, "n.resource", f.Resources)
	where, args = in(where, args, "n.type", f.Types)
	return read(ctx, st, workspace, where+fmt.Sprintf(" ORDER BY n.seq LIMIT %d", max(f.Limit, 1)), args)
}

// ReadOne returns workspace's numbered event id, and false when there is none (never numbered, or past
// the retention).
func ReadOne(ctx context.Context, st store.Store, workspace, id string) (Stored, bool, error) {
	evs, err := read(ctx, st, workspace, "n.workspace_id = ? AND n.event_id = ?", []any{workspace, id})
	if err != nil || len(evs) == 0 {
		return Stored{}, false, err
	}
	return evs[0], true, nil
}

// ReadIDs returns workspace's numbered events of ids by id (those not found are left out).
func ReadIDs(ctx context.Context, st store.Store, workspace string, ids []string) (map[string]Stored, error) {
	out := make(map[string]Stored, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	where, args := in("n.workspace_id = ?", []any{workspace}, "n.event_id", ids)
	evs, err := read(ctx, st, workspace, where, args)
	for _, e := range evs {
		out[e.ID] = e
	}
	return out, err
}

func read(ctx context.Context, st store.Store, workspace, where string, args []any) ([]Stored, error) {
	ctx = store.WithWorkspace(ctx, workspace)
	sql := `SELECT n.seq, e.id, e.type, e.resource, e.record_id, e.model_id, e.member_id, e.key_id, e.request_id, CAST(e.data AS TEXT), CAST(e.previous AS TEXT), e.created_at
FROM event_numbers n JOIN events e ON e.workspace_id = n.workspace_id AND e.id = n.event_id WHERE ` + where
	var out []Stored
	err := st.Query(ctx, st.Dialect().Bind(sql, args...), func(row []any) error {
		e := Stored{Seq: store.Int(row[0]), ID: store.UUIDText(row[1]), Type: store.Text(row[2]), Resource: store.Text(row[3]),
			RecordID: store.UUIDText(row[4]), ModelID: store.UUIDText(row[5]), MemberID: store.UUIDText(row[6]),
			KeyID: store.UUIDText(row[7]), RequestID: store.Text(row[8])}
		var err error
		if e.Data, err = store.JSONObject(row[9]); err != nil {
			return fmt.Errorf("event %s data: %w", e.ID, err)
		}
		if e.Previous, err = store.JSONObject(row[10]); err != nil {
			return fmt.Errorf("event %s previous: %w", e.ID, err)
		}
		if e.CreatedAt, err = store.Time(row[11]); err != nil {
			return fmt.Errorf("event %s: %w", e.ID, err)
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}

// Latest returns the sequence of workspace's last numbered event (0: none yet).
func Latest(ctx context.Context, st store.Store, workspace string) (int64, error) {
	ctx = store.WithWorkspace(ctx, workspace)
	var last int64
	if _, err := store.QueryOne(ctx, st, st.Dialect().Bind("SELECT last FROM event_sequences WHERE workspace_id = ?", workspace), func(row []any) error {
		last = store.Int(row[0])
		return nil
	}); err != nil {
		return 0, fmt.Errorf("read the event counter: %w", err)
	}
	return last, nil
}

func in(where string, args []any, column string, values []string) (string, []any) {
	if len(values) == 0 {
		return where, args
	}
	where += " AND " + column + " IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(values)), ", ") + ")"
	for _, v := range values {
		args = append(args, v)
	}
	return where, args
}
