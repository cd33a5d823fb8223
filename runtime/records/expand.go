package records

import (
	"context"
	"fmt"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// Expansions (README "Expand"): each expansion of a request is one statement for all the records it
// expands, whatever their number — a reference's targets by id, an association's first links by a window
// function over the links of every record — and its records are what a read of them gives the caller:
// the target's record rule in the statement, its custom fields, masks and hidden fields applied. A
// target resource the caller may not use at all (key allowlist, plan feature, role) expands to null
// (Actor.linked, which also decides what a link's entries in the feed and the trail name).

// expandPaths resolves the expand paths of a request on c's resource for a.
func (s *Service) expandPaths(a Actor, r *model.Resource, paths []string) ([]*listplan.Expansion, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	exps, fl := listplan.Expand(s.cat, r, paths, a.Policy)
	if len(fl) > 0 {
		return nil, apierr.Invalid("", fl)
	}
	return exps, nil
}

// expand adds the expansions exps to recs, records of one resource in workspace as the caller sees them.
func (s *Service) expand(ctx context.Context, a Actor, workspace string, recs []Record, exps []*listplan.Expansion) error {
	if len(recs) == 0 {
		return nil
	}
	for _, e := range exps {
		name := e.Relation.Name
		pol := a.linked(e.Target)
		if pol == nil {
			for _, rec := range recs {
				rec[name] = nil
			}
			continue
		}
		fs, err := s.customFields(ctx, workspace, e.Target)
		if err != nil {
			return err
		}
		tc := &Collection{Resource: e.Target, Workspace: workspace, Fields: fs, Policy: pol}
		if e.Relation.Many() {
			err = s.expandLinks(ctx, a, tc, recs, e)
		} else {
			err = s.expandReferences(ctx, a, tc, recs, e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// expandReferences sets e's member of each of recs to the record its reference field names (null
// when it names none, or one the caller does not see).
func (s *Service) expandReferences(ctx context.Context, a Actor, tc *Collection, recs []Record, e *listplan.Expansion) error {
	key := e.Relation.Field.Key
	var ids []string
	seen := map[string]bool{}
	for _, rec := range recs {
		if id, ok := rec[key].(string); ok && model.IsUUID(id) && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	found := map[string]Record{}
	var targets []Record
	if len(ids) > 0 {
		err := s.st.Query(ctx, s.d.Records(tc.Resource, tc.Workspace, tc.Policy, ids), func(row []any) error {
			rec, err := s.toRecord(tc.Resource, row, tc.Workspace, "")
			if err != nil {
				return err
			}
			found[rec["id"].(string)] = rec
			targets = append(targets, rec)
			return nil
		})
		if err != nil {
			return fmt.Errorf("expand %s: %w", e.Path, err)
		}
	}
	if err := s.settleExpanded(ctx, a, tc, targets, e); err != nil {
		return err
	}
	for _, rec := range recs {
		id, _ := rec[key].(string)
		if t, ok := found[id]; ok {
			rec[e.Relation.Name] = t
		} else {
			rec[e.Relation.Name] = nil
		}
	}
	return nil
}

// expandLinks sets e's member of each of recs to its first listplan.ExpandedLinks linked records,
// whether more follow, and where to read them all.
func (s *Service) expandLinks(ctx context.Context, a Actor, tc *Collection, recs []Record, e *listplan.Expansion) error {
	assoc := e.Relation.Assoc
	res, name, fromOwner := assoc.StoredAs(e.From.Name)
	l := sqlgen.Link{Workspace: tc.Workspace, Resource: res, Name: name, FromOwner: fromOwner, Other: tc.Resource, OtherPolicy: tc.Policy}
	ids := make([]string, 0, len(recs))
	seen := map[string]bool{}
	for _, rec := range recs {
		if id, _ := rec["id"].(string); !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	linked := map[string][]Record{}
	var targets []Record
	err := s.st.Query(ctx, s.d.LinkedRecords(l, ids, listplan.ExpandedLinks+1), func(row []any) error {
		from := store.UUIDText(row[0])
		rec, err := s.toRecord(tc.Resource, row[1:], tc.Workspace, "")
		if err != nil {
			return err
		}
		linked[from] = append(linked[from], rec)
		if len(linked[from]) <= listplan.ExpandedLinks {
			targets = append(targets, rec)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("expand %s: %w", e.Path, err)
	}
	if err := s.settleExpanded(ctx, a, tc, targets, e); err != nil {
		return err
	}
	for _, rec := range recs {
		id, _ := rec["id"].(string)
		list := linked[id]
		more := len(list) > listplan.ExpandedLinks
		if more {
			list = list[:listplan.ExpandedLinks]
		}
		data := make([]any, len(list))
		for i, t := range list {
			data[i] = t
		}
		rec[e.Relation.Name] = map[string]any{"data": data, "has_more": more, "url": "/v1/" + e.From.Name + "/" + id + "/" + assoc.Name}
	}
	return nil
}

// settleExpanded makes targets, the records of one expansion, what the caller sees: custom fields presented,
// the caller's field rules applied, the expansions below e added, and e's field selection made. Every
// target is a record of its own (one per row read), so each is settled once.
func (s *Service) settleExpanded(ctx context.Context, a Actor, tc *Collection, targets []Record, e *listplan.Expansion) error {
	for _, t := range targets {
		tc.view(t)
	}
	if err := s.expand(ctx, a, tc.Workspace, targets, e.Children); err != nil {
		return err
	}
	if e.Fields != nil {
		for _, t := range targets {
			// In place: the parents hold this map.
			sel := selectFields(t, e.Fields, e.Children)
			for k := range t {
				if _, ok := sel[k]; !ok {
					delete(t, k)
				}
			}
		}
	}
	return nil
}

// unknownSelected returns the names of a fields selection that select nothing, once each in the order
// given: at the record's level as Collection.UnknownFields says (an expansion's name is known), inside
// an expansion as the target's UnknownFields says, and dotted names that lead to no expansion.
func (s *Service) unknownSelected(a Actor, c *Collection, names, top, unmatched []string, exps []*listplan.Expansion) []string {
	if names == nil {
		return nil
	}
	bad := map[string]bool{}
	for _, n := range unmatched {
		bad[n] = true
	}
	for _, n := range c.UnknownFields(withoutExpansions(top, exps)) {
		bad[n] = true
	}
	var walk func(exps []*listplan.Expansion)
	walk = func(exps []*listplan.Expansion) {
		for _, e := range exps {
			if e.Fields != nil {
				tc := &Collection{Resource: e.Target, Policy: a.Policy(e.Target)}
				for _, n := range tc.UnknownFields(withoutExpansions(e.Fields, e.Children)) {
					bad[e.Path+"."+n] = true
				}
			}
			walk(e.Children)
		}
	}
	walk(exps)
	var out []string
	for _, n := range names {
		if bad[n] {
			out = append(out, n)
			delete(bad, n)
		}
	}
	return out
}

// withoutExpansions returns names less the members of exps.
func withoutExpansions(names []string, exps []*listplan.Expansion) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !isExpansion(n, exps) {
			out = append(out, n)
		}
	}
	return out
}

func isExpansion(name string, exps []*listplan.Expansion) bool {
	for _, e := range exps {
		if e.Relation.Name == name {
			return true
		}
	}
	return false
}
