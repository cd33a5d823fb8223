package records

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/plugins/sdk"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/store"
)

// beforeHooks runs the Before hooks r's definition names, inside the write's transaction q, and returns
// the values they set (canonical, by field key), checked like any written value. changes are the
// write's canonical values by key. A refusal is a field.ErrorList (422) or a *ConflictError (409); a
// plugin that cannot answer is plugins.ErrUnavailable (503).
func (s *Service) beforeHooks(ctx context.Context, q store.Querier, a Actor, r *model.Resource, op sdk.Operation, stored Record, changes map[string]any) (map[string]any, error) {
	if s.hooks == nil || len(r.Hooks) == 0 {
		return nil, nil
	}
	shown := make(map[string]any, len(changes))
	for k, v := range changes {
		if f, ok := r.Field(k); ok {
			shown[k] = model.JSONValue(f, v)
		}
	}
	set := map[string]any{}
	// What the plugins say back must not repeat what the caller may not read (see withheld).
	hidden := &withheld{}
	if a.Role != nil {
		hidden.addRecord(a.Policy(r), stored, false)
	}
	for _, name := range r.Hooks {
		if !s.hooks.Handles(name, r.Name) {
			continue
		}
		call := &sdk.Call{Workspace: a.Workspace, Member: a.Member, Resource: r.Name, Operation: op, RequestID: a.RequestID, Stored: stored, Changes: shown}
		res, err := s.hooks.Before(ctx, name, call, &hookReader{s: s, q: q, workspace: a.Workspace, actor: a, hidden: hidden})
		if err != nil {
			return nil, err
		}
		if res.Conflict != "" {
			return nil, &ConflictError{Message: hidden.scrub(res.Conflict)}
		}
		if len(res.Errors) > 0 {
			errs := make(field.ErrorList, len(res.Errors))
			for i, e := range res.Errors {
				code := field.Code(e.Code)
				if code == "" {
					code = field.CodeInvalid
				}
				errs[i] = &field.Error{Code: code, Field: e.Field, Message: hidden.scrub(e.Message)}
			}
			sort.Slice(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
			return nil, errs
		}
		if len(res.Set) > 0 && (op == sdk.OpArchive || op == sdk.OpRestore) {
			return nil, fmt.Errorf("%w: %s set values on %s", plugins.ErrUnavailable, name, op)
		}
		for k, v := range res.Set {
			f, ok := r.Field(k)
			if !ok || f.Managed || f.Formula != nil {
				return nil, fmt.Errorf("%w: %s set %q, which is not a settable field of %s", plugins.ErrUnavailable, name, k, r.Name)
			}
			var cv any
			if v != nil {
				var err error
				if cv, err = model.Canonical(f, v); err == nil {
					err = model.Check(f, cv)
				}
				if err != nil {
					return nil, fmt.Errorf("%w: %s set %s to %v: %v", plugins.ErrUnavailable, name, k, v, err)
				}
			} else if f.Required {
				return nil, fmt.Errorf("%w: %s cleared required field %s", plugins.ErrUnavailable, name, k)
			}
			set[k], shown[k] = cv, v
		}
	}
	return set, nil
}

// afterHooks tells the plugins of a committed write, in the background.
func (s *Service) afterHooks(a Actor, w *afterCall) {
	if s.hooks == nil || len(w.r.Hooks) == 0 || w.full == nil {
		return
	}
	shown := make(map[string]any, len(w.changes))
	for k, v := range w.changes {
		if f, ok := w.r.Field(k); ok {
			shown[k] = model.JSONValue(f, v)
		}
	}
	for _, name := range w.r.Hooks {
		if s.hooks.Handles(name, w.r.Name) {
			s.hooks.After(name, &sdk.Call{Workspace: a.Workspace, Member: a.Member, Resource: w.r.Name, Operation: w.op, RequestID: a.RequestID, Changes: shown}, w.full)
		}
	}
}

// hookReader serves a plugin's lookups from the write's transaction, in its workspace, unrestricted
// by the caller's role (rules see what they need; what they return is only their decision). What the
// caller's role would not show of each record read is collected in hidden.
type hookReader struct {
	s         *Service
	q         store.Querier
	workspace string
	actor     Actor
	hidden    *withheld
}

// withhold collects what the caller may not read of recs, records of r the plugin read.
func (h *hookReader) withhold(ctx context.Context, r *model.Resource, recs ...map[string]any) error {
	if h.actor.Role == nil || len(recs) == 0 {
		return nil
	}
	pol := h.actor.Policy(r)
	ids := make([]string, len(recs))
	for i, rec := range recs {
		ids[i], _ = rec["id"].(string)
	}
	visible, err := h.s.visibleIDs(ctx, h.q, r, pol, h.workspace, ids)
	if err != nil {
		return err
	}
	for i, rec := range recs {
		h.hidden.addRecord(pol, rec, !visible[ids[i]])
	}
	return nil
}

func (h *hookReader) Get(ctx context.Context, resource, id string) (map[string]any, bool, error) {
	r, ok := h.s.cat.Resource(resource)
	if !ok || r.ModelScoped {
		return nil, false, fmt.Errorf("unknown resource %q", resource)
	}
	if !model.IsUUID(id) {
		return nil, false, nil
	}
	rec, err := h.s.get(ctx, h.q, r, sqlgen.Key{Workspace: h.workspace, ID: strings.ToLower(id)}, false)
	if err == ErrNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := h.withhold(ctx, r, rec); err != nil {
		return nil, false, err
	}
	return rec, true, nil
}

func (h *hookReader) List(ctx context.Context, resource string, filters []sdk.Filter, limit int) ([]map[string]any, bool, error) {
	r, ok := h.s.cat.Resource(resource)
	if !ok || r.ModelScoped {
		return nil, false, fmt.Errorf("unknown resource %q", resource)
	}
	items := make([]any, len(filters))
	for i, f := range filters {
		items[i] = map[string]any{"field": f.Field, "op": f.Op, "value": f.Value}
	}
	size := min(max(limit, 1), listplan.MaxPageSize)
	plan, errs := listplan.Build(r, listplan.Params{Filters: items, PageSize: &size, IncludeArchived: true}, listplan.Scope{Workspace: h.workspace, Secret: h.s.secret})
	if len(errs) > 0 {
		return nil, false, errs
	}
	var out []map[string]any
	for _, stmt := range h.s.d.List(plan, h.workspace) {
		err := h.q.Query(ctx, stmt, func(row []any) error {
			if len(out) > plan.Limit {
				return nil
			}
			rec, err := h.s.toRecord(r, row, h.workspace, "")
			if err == nil {
				out = append(out, rec)
			}
			return err
		})
		if err != nil {
			return nil, false, err
		}
	}
	more := len(out) > plan.Limit
	if more {
		out = out[:plan.Limit]
	}
	if err := h.withhold(ctx, r, out...); err != nil {
		return nil, false, err
	}
	return out, more, nil
}
