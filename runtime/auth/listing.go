package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/workspace-records/records/runtime/store"
)

// The listings of recordsctl's list commands. Every field is always present (null when unset), so that
// scripts reading `--json` see the same names on every row.

// WorkspaceEntry is a workspace as workspace list shows it.
type WorkspaceEntry struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Plan      string    `json:"plan"`
	Limits    Limits    `json:"limits"` // the overrides of the plan's limits (set-limits); {} when none
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ListWorkspaces returns every workspace, oldest first.
func (d *Directory) ListWorkspaces(ctx context.Context) ([]WorkspaceEntry, error) {
	out := []WorkspaceEntry{}
	err := d.st.Query(ctx, d.d.Bind("SELECT id, name, plan, limits, created_at, updated_at FROM workspaces ORDER BY created_at, id"), func(row []any) error {
		w := WorkspaceEntry{ID: store.UUIDText(row[0]), Name: store.Text(row[1]), Plan: store.Text(row[2])}
		if row[3] != nil {
			if err := json.Unmarshal(store.JSON(row[3]), &w.Limits); err != nil {
				return fmt.Errorf("limits of workspace %s: %w", w.ID, err)
			}
		}
		if err := store.Times(row[4:], &w.CreatedAt, &w.UpdatedAt); err != nil {
			return err
		}
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	return out, nil
}
