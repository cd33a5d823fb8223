package records

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/plugins/sdk"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/store"
)

// Create validates body and stores a new record of c owned by the actor.
func (s *Service) Create(ctx context.Context, a Actor, c *Collection, body map[string]any, rc *Receipt) (Record, error) {
	b, ci, err := s.checkBody(a, c, body, schema.Create)
	if err != nil {
		return nil, err
	}
	rec, _, err := s.commit(ctx, a, c, rc, s.insert(a, c, b.Values, ci))
	return rec, err
}

// Update validates body and changes the given fields of record id of c, under the precondition m (nil:
// none). It returns the record and Changed, or Unchanged when every value given equals the stored one
// (nothing was written).
func (s *Service) Update(ctx context.Context, a Actor, c *Collection, id string, body map[string]any, m *IfMatch, rc *Receipt) (Record, Effect, error) {
	b, ci, err := s.checkBody(a, c, body, schema.Update) // refused before any lock is taken
	if err != nil {
		return nil, 0, s.withRules(ctx, c, id, body, err)
	}
	return s.changeOne(ctx, a, c, rc, id, m, s.updateEdit(a, c, b, ci))
}

// updateEdit decides the edit of an update of c with the validated body b and custom input ci.
func (s *Service) updateEdit(a Actor, c *Collection, b *schema.Body, ci *customInput) func(ctx context.Context, q store.Querier, cur Record) (*edit, error) {
	r := c.Resource
	return func(ctx context.Context, q store.Querier, cur Record) (*edit, error) {
		if cur["archived"] == true {
			return nil, &ConflictError{Message: "the record is archived; restore it before changing it"}
		}
		if len(b.Values) == 0 && !ci.given {
			return nil, nil
		}
		// The rules see the stored record (locked) and the body over it, before any plugin is called.
		chk := updateCheck(r, c.Policy, cur, b.Values, nil)
		if blind := r.BlindRules(chk); len(blind) > 0 {
			return nil, blindRefusal(r, blind, chk.Blind)
		}
		if errs := r.CheckRules(chk); len(errs) > 0 {
			return nil, errs
		}
		values := maps.Clone(b.Values) // a step may run again (an upsert retried): b stays as validated
		set, err := s.beforeHooks(ctx, q, a, r, sdk.OpUpdate, cur, values)
		if err != nil {
			return nil, err
		}
		maps.Copy(values, set)
		if err := s.checkAllReferences(ctx, q, a, c, values, ci); err != nil {
			return nil, err
		}
		e := &edit{action: audit.ActionUpdate, values: map[string]any{}, changes: map[string]any{}}
		for k, v := range values {
			f, _ := r.Field(k)
			e.values[f.Column] = v
			e.changes[k] = v
		}
		if err := setComputed(r, cur, values, e.values); err != nil {
			return nil, err
		}
		if ci.given {
			current, _ := cur["custom_fields"].(map[string]any)
			custom := c.stored(ci, current)
			ids := c.ids(ci)
			// Values equal to the stored ones are not written again: an update that changes nothing
			// writes nothing (change).
			if slices.ContainsFunc(ids, func(id string) bool { return !audit.Same(current[id], custom[id]) }) {
				if err := s.syncCustom(ctx, q, c.Workspace, cur["id"].(string), c.Fields, custom, ids); err != nil {
					return nil, fmt.Errorf("custom values of %s: %w", r.Name, err)
				}
				if err := s.checkCustomKeys(ctx, q, c, cur["id"].(string), custom, ids); err != nil {
					return nil, err
				}
			}
			e.values["custom_fields"] = jsonText(custom)
			e.changes["custom_fields"] = b.Custom
			e.custom, e.customIDs = custom, ids
		}
		return e, nil
	}
}

// MaxReason is the longest archive reason.
const MaxReason = 1000

// Archive soft-deletes record id of c; body may give the reason ({"reason": "…"}).
func (s *Service) Archive(ctx context.Context, a Actor, c *Collection, id string, body map[string]any, m *IfMatch, rc *Receipt) (Record, error) {
	reason, err := archiveReason(body)
	if err != nil {
		return nil, err
	}
	rec, _, err := s.changeOne(ctx, a, c, rc, id, m, s.archiveEdit(a, c, reason))
	return rec, err
}

// archiveEdit decides the edit of an archive of a record of c with the reason (nil: none).
func (s *Service) archiveEdit(a Actor, c *Collection, reason *string) func(ctx context.Context, q store.Querier, cur Record) (*edit, error) {
	return func(ctx context.Context, q store.Querier, cur Record) (*edit, error) {
		if cur["archived"] == true {
			return nil, &ConflictError{Message: "the record is already archived"}
		}
		changes := map[string]any{}
		if reason != nil {
			changes["archive_reason"] = *reason
		}
		if _, err := s.beforeHooks(ctx, q, a, c.Resource, sdk.OpArchive, cur, changes); err != nil {
			return nil, err
		}
		now := s.timestamp()
		e := &edit{action: audit.ActionArchive, values: map[string]any{"archived": true, "archived_at": now, "updated_at": now, "archive_reason": nil}, changes: map[string]any{}}
		if reason != nil {
			e.values["archive_reason"] = *reason
			e.changes["archive_reason"] = *reason
		}
		return e, nil
	}
}

// archiveReason reads the body of an archive: nothing, or the reason.
func archiveReason(body map[string]any) (*string, error) {
	refuse := func(name string, code field.Code, message string) error {
		return field.ErrorList{field.New(code, field.NewPath(name), message)}
	}
	for k := range body {
		if k != "reason" {
			return nil, refuse(k, field.CodeUnknown, "archive takes only reason")
		}
	}
	v, ok := body["reason"]
	if !ok || v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, refuse("reason", field.CodeType, "must be a string")
	}
	if n := len([]rune(s)); n > MaxReason {
		return nil, refuse("reason", field.CodeTooLong, "must be at most 1000 characters")
	}
	if strings.ContainsRune(s, 0) {
		return nil, refuse("reason", field.CodeFormat, "must not contain NUL characters")
	}
	return &s, nil
}

// Restore brings archived record id of c back; it takes no body.
func (s *Service) Restore(ctx context.Context, a Actor, c *Collection, id string, body map[string]any, m *IfMatch, rc *Receipt) (Record, error) {
	if len(body) > 0 {
		return nil, apierr.Invalid("restore takes no body.", nil)
	}
	rec, _, err := s.changeOne(ctx, a, c, rc, id, m, s.restoreEdit(a, c))
	return rec, err
}

// restoreEdit decides the edit of a restore of a record of c.
func (s *Service) restoreEdit(a Actor, c *Collection) func(ctx context.Context, q store.Querier, cur Record) (*edit, error) {
	return func(ctx context.Context, q store.Querier, cur Record) (*edit, error) {
		if cur["archived"] != true {
			return nil, &ConflictError{Message: "the record is not archived"}
		}
		if _, err := s.beforeHooks(ctx, q, a, c.Resource, sdk.OpRestore, cur, map[string]any{}); err != nil {
			return nil, err
		}
		// A restored record takes its unique custom values back: refused when another holds one now.
		current, _ := cur["custom_fields"].(map[string]any)
		if err := s.checkCustomKeys(ctx, q, c, cur["id"].(string), current, keysOf(current)); err != nil {
			return nil, err
		}
		return &edit{action: audit.ActionRestore, values: map[string]any{"archived": false, "archived_at": nil, "archive_reason": nil}, changes: map[string]any{}}, nil
	}
}

// changeOne commits the change of record id of c that decide makes, under the precondition m; an id that
// is no UUID names no record.
func (s *Service) changeOne(ctx context.Context, a Actor, c *Collection, rc *Receipt, id string, m *IfMatch, decide func(ctx context.Context, q store.Querier, cur Record) (*edit, error)) (Record, Effect, error) {
	if !model.IsUUID(id) {
		return nil, 0, ErrNotFound
	}
	return s.commit(ctx, a, c, rc, s.change(a, c, id, m, decide))
}
