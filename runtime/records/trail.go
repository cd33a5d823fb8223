package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/store"
)

// AuditLog returns one page of a's workspace's audit trail as a sees it (runtime/audit): a.Role nil is
// the operator's view; with a role, what a's member may read of it, a link naming the other record only
// when a sees it (linkShown).
func (s *Service) AuditLog(ctx context.Context, a Actor, q audit.Query) (*audit.Page, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	seen := map[string]bool{} // resource/record -> inside a's record rule, for this page
	return s.trail.Page(ctx, audit.Viewer{Workspace: a.Workspace, Member: a.Member, Role: a.Role, Policy: a.Policy,
		Visible: func(ctx context.Context, pol *access.Policy, id string) (bool, error) {
			return s.within(ctx, a, pol, id, seen)
		},
		Linked: func(ctx context.Context, other *model.Resource, id string) (bool, error) {
			return s.linkShown(ctx, a, other, id, seen)
		}}, q)
}

// audit writes the audit entry of one write of record id of r, inside its transaction q.
func (s *Service) audit(ctx context.Context, q store.Querier, a Actor, r *model.Resource, id, action string, changes, previous map[string]any, at time.Time) error {
	return audit.Write(ctx, q, s.d, a.author(), at, []audit.Entry{{Resource: r.Name, RecordID: id, Action: action, Changes: changes, Previous: previous}})
}

func (a Actor) author() audit.Author {
	return audit.Author{Workspace: a.Workspace, Member: a.Member, Key: a.Key, RequestID: a.RequestID}
}

// createdValues is the changes of a new record of c: its declared values and, when any, its custom values.
func createdValues(c *Collection, values, custom map[string]any) map[string]any {
	out := audit.Values(c.Resource, values)
	if len(custom) > 0 {
		out["custom_fields"] = audit.Custom(c.Fields, custom, keysOf(custom))
	}
	return out
}

// editValues is the audit entry of e applied to cur: for an update only what changed, with the values
// it replaced.
func editValues(c *Collection, cur Record, e *edit) (changes, previous map[string]any) {
	update := e.action == audit.ActionUpdate
	changes = map[string]any{}
	if update {
		previous = map[string]any{}
	}
	for k, v := range e.changes {
		if k == "custom_fields" {
			continue // from e.custom below
		}
		f, ok := c.Resource.Field(k)
		if !ok {
			continue
		}
		nv := model.JSONValue(f, v)
		if update {
			if audit.Same(cur[k], nv) {
				continue
			}
			previous[k] = cur[k]
		}
		changes[k] = nv
	}
	old, _ := cur["custom_fields"].(map[string]any)
	var ids []string
	for _, id := range e.customIDs {
		if !audit.Same(old[id], e.custom[id]) {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		changes["custom_fields"] = audit.Custom(c.Fields, e.custom, ids)
		if update {
			previous["custom_fields"] = audit.Custom(c.Fields, old, ids)
		}
	}
	return changes, previous
}

// Visible reports whether record id of pol's resource exists in a's workspace inside pol's record rule
// (archived or not). A policy without a record rule costs no query.
func (s *Service) Visible(ctx context.Context, a Actor, pol *access.Policy, id string) (bool, error) {
	if pol.Rule == access.All {
		return true, nil
	}
	ctx = store.WithWorkspace(ctx, a.Workspace)
	r := pol.Resource
	key := sqlgen.Key{Workspace: a.Workspace, ID: id, Policy: pol}
	if r.ModelScoped {
		found, err := store.QueryOne(ctx, s.st, s.d.Bind("SELECT model_id FROM "+sqlgen.Quote(r.Table)+" WHERE workspace_id = ? AND id = ?", a.Workspace, id), func(row []any) error {
			key.ModelID = store.UUIDText(row[0])
			return nil
		})
		if err != nil || !found {
			return false, err
		}
	}
	_, err := s.get(ctx, s.st, r, key, false)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// within is Visible remembered in seen (resource/record -> the answer), so that a page of the feed or
// of the audit trail asks at most once per record.
func (s *Service) within(ctx context.Context, a Actor, pol *access.Policy, id string, seen map[string]bool) (bool, error) {
	k := pol.Resource.Name + "/" + id
	if ok, done := seen[k]; done {
		return ok, nil
	}
	ok, err := s.Visible(ctx, a, pol, id)
	if err != nil {
		return false, err
	}
	seen[k] = ok
	return ok, nil
}

// linkShown reports whether a link may name record id of other to a — in the change feed, a webhook
// payload, a history or the audit trail — which is exactly when a sees that record where the link is
// listed (ListLinks, expansions): a reaches other and its role reads it (Actor.linked), and the record
// is inside its record rule, archived or not. seen remembers the answers of one page (within).
func (s *Service) linkShown(ctx context.Context, a Actor, other *model.Resource, id string, seen map[string]bool) (bool, error) {
	pol := a.linked(other)
	if pol == nil || !model.IsUUID(id) {
		return false, nil
	}
	return s.within(ctx, a, pol, id, seen)
}

// ErrMemberNotFound is a member that is not in the workspace.
var ErrMemberNotFound = errors.New("member not found in this workspace")

// MemberActor returns the actor member of workspace is, with its current role and department, to read
// as that member outside a request (recordsctl audit list --as-member).
func (s *Service) MemberActor(ctx context.Context, workspace, member string) (Actor, error) {
	if err := s.live(); err != nil {
		return Actor{}, err
	}
	workspace, member = strings.ToLower(workspace), strings.ToLower(member)
	if !model.IsUUID(member) {
		return Actor{}, field.ErrorList{field.New(field.CodeFormat, field.NewPath("member"), "must be a UUID")}
	}
	a := Actor{Workspace: workspace, Member: member}
	var name string
	var def any
	found, err := store.QueryOne(ctx, s.st, s.d.Bind(`SELECT m.role, m.department_id, wr.definition FROM members m
LEFT JOIN workspace_roles wr ON wr.workspace_id = m.workspace_id AND wr.name = m.role
WHERE m.workspace_id = ? AND m.id = ?`, workspace, member), func(row []any) error {
		name, a.Department, def = store.Text(row[0]), store.UUIDText(row[1]), row[2]
		return nil
	})
	if err != nil {
		return Actor{}, fmt.Errorf("member %s: %w", member, err)
	}
	if !found {
		return Actor{}, fmt.Errorf("member %s: %w", member, ErrMemberNotFound)
	}
	if role, ok := s.cat.Role(name); ok {
		a.Role = role
		return a, nil
	}
	if def == nil {
		return Actor{}, fmt.Errorf("member %s: role %q is not defined", member, name)
	}
	var role model.Role
	if err := json.Unmarshal(store.JSON(def), &role); err != nil {
		return Actor{}, fmt.Errorf("member %s: role %s: %w", member, name, err)
	}
	role.Name = name
	a.Role = &role
	return a, nil
}
