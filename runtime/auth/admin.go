package auth

import (
	"context"
	"fmt"
	"strings"

	"github.com/workspace-records/records/runtime/store"
)

// Limits overrides a workspace's plan limits; nil keeps the plan's number.
type Limits struct {
	KeyPerMinute       *int64 `json:"key_per_minute,omitempty"`
	KeyPerHour         *int64 `json:"key_per_hour,omitempty"`
	WorkspacePerMinute *int64 `json:"workspace_per_minute,omitempty"`
	MonthlyQuota       *int64 `json:"monthly_quota,omitempty"`
}

// Workspace returns the workspace id.
func (d *Directory) Workspace(ctx context.Context, id string) (*Workspace, error) {
	w := &Workspace{ID: strings.ToLower(id)}
	found, err := store.QueryOne(ctx, d.st, d.d.Bind("SELECT name, plan FROM workspaces WHERE id = ?", w.ID), func(row []any) error {
		w.Name, w.Plan = store.Text(row[0]), store.Text(row[1])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("workspace %s: %w", id, ErrNotFound)
	}
	return w, nil
}
