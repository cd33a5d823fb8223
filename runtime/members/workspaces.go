package members

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/store"
)

// The workspaces themselves: created on a plan, moved to another, listed with their limit overrides
// (SetLimits). auth reads a workspace's plan and limits when it resolves a key. The listings of
// recordsctl's list commands (here and ListMembers, ListRoles) have every field always present (null when
// unset), so that scripts reading `--json` see the same names on every row.

// CreateWorkspace creates a workspace on plan.
func (s *Service) CreateWorkspace(ctx context.Context, name, plan string) (*auth.Workspace, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, fmt.Errorf("%w: workspace name must be 1 to 200 characters", auth.ErrInvalid)
	}
	if _, ok := s.cat().Plan(plan); !ok {
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalid, suggest.Unknown("plan", plan, s.cat().PlanNames()))
	}
	w := &auth.Workspace{ID: store.NewID(), Name: name, Plan: plan}
	now := s.ts()
	_, err := s.st.Exec(ctx, s.d.Bind("INSERT INTO workspaces (id, name, plan, created_at, updated_at) VALUES (?, ?, ?, ?, ?)", w.ID, w.Name, w.Plan, now, now))
	if err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	return w, nil
}

// SetPlan moves a workspace to plan.
func (s *Service) SetPlan(ctx context.Context, id, plan string) error {
	defer s.dir.Forget()
	if _, ok := s.cat().Plan(plan); !ok {
		return fmt.Errorf("%w: %s", auth.ErrInvalid, suggest.Unknown("plan", plan, s.cat().PlanNames()))
	}
	n, err := s.st.Exec(ctx, s.d.Bind("UPDATE workspaces SET plan = ?, updated_at = ? WHERE id = ?", plan, s.ts(), strings.ToLower(id)))
	if err != nil {
		return fmt.Errorf("set plan: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("workspace %s: %w", id, auth.ErrNotFound)
	}
	return nil
}

// WorkspaceEntry is a workspace as workspace list shows it.
type WorkspaceEntry struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Plan      string      `json:"plan"`
	Limits    auth.Limits `json:"limits"` // the overrides of the plan's limits (set-limits); {} when none
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
}

// ListWorkspaces returns every workspace, oldest first.
func (s *Service) ListWorkspaces(ctx context.Context) ([]WorkspaceEntry, error) {
	out := []WorkspaceEntry{}
	err := s.st.Query(ctx, s.d.Bind("SELECT id, name, plan, limits, created_at, updated_at FROM workspaces ORDER BY created_at, id"), func(row []any) error {
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
