package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// ErrLinkNotFound is a missing link between two records.
var ErrLinkNotFound = errors.New("link not found")

// LinkParams page a list of links: Page (1-based) or Cursor ("start" or a previous NextCursor).
type LinkParams struct {
	Page     int
	Cursor   string
	PageSize int
}

// link addresses a's links from record id of r.
func (s *Service) link(a Actor, r *model.Resource, assoc *model.Association, id string) sqlgen.Link {
	other, _ := s.cat.Resource(assoc.Target)
	res, name, fromOwner := assoc.StoredAs(r.Name)
	return sqlgen.Link{Workspace: a.Workspace, Resource: res, Name: name, FromOwner: fromOwner, FromID: strings.ToLower(id),
		Other: other, OtherPolicy: a.Policy(other)}
}

func linkRecord(assoc *model.Association, other string, attrs any, created, updated any) (Record, error) {
	rec := Record{"id": store.UUIDText(other), "resource": assoc.Target, "association": assoc.Name}
	a := map[string]any{}
	switch x := attrs.(type) {
	case map[string]any:
		a = x
	default:
		if err := json.Unmarshal([]byte(store.Text(x)), &a); err != nil {
			return nil, fmt.Errorf("link attributes: %w", err)
		}
	}
	rec["attributes"] = a
	for k, v := range map[string]any{"created_at": created, "updated_at": updated} {
		t, err := store.Time(v)
		if err != nil {
			return nil, err
		}
		rec[k] = t.UTC().Format(store.TimeLayout)
	}
	return rec, nil
}

// ListLinks returns one page of the links of record id (which must be visible to a) through assoc,
// leaving out links to records a cannot see.
func (s *Service) ListLinks(ctx context.Context, a Actor, r *model.Resource, assoc *model.Association, id string, p LinkParams) (*Page, error) {
	if _, err := s.Get(ctx, a, r, "", id); err != nil {
		return nil, err
	}
	ctx = store.WithWorkspace(ctx, a.Workspace)
	l := s.link(a, r, assoc, id)
	fp := "links/" + a.Workspace + "/" + a.Member + "/" + r.Name + "/" + assoc.Name + "/" + l.FromID
	var afterTime time.Time
	var afterID string
	offset := 0
	if p.Cursor != "" && p.Cursor != "start" {
		payload, err := listplan.Verify(s.secret, p.Cursor)
		var c struct{ F, T, I string }
		if err == nil {
			err = json.Unmarshal(payload, &c)
		}
		if err == nil && c.F == fp && model.IsUUID(c.I) {
			afterTime, err = time.Parse(time.RFC3339Nano, c.T)
			afterID = c.I
		}
		if err != nil || afterID == "" {
			return nil, field.ErrorList{field.New(field.CodeInvalid, field.NewPath("cursor"), listplan.ErrCursor.Error())}
		}
	} else if p.Cursor == "" {
		offset = (p.Page - 1) * p.PageSize
	}
	page := &Page{Records: []Record{}}
	var times []time.Time
	err := s.st.Query(ctx, s.d.ListLinks(l, afterTime, afterID, p.PageSize+1, offset), func(row []any) error {
		rec, err := linkRecord(assoc, store.UUIDText(row[0]), row[1], row[2], row[3])
		if err != nil {
			return err
		}
		t, _ := store.Time(row[2])
		page.Records = append(page.Records, rec)
		times = append(times, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s.%s: %w", r.Name, assoc.Name, err)
	}
	if len(page.Records) > p.PageSize {
		page.Records, page.HasMore = page.Records[:p.PageSize], true
		last := page.Records[p.PageSize-1]
		payload, _ := json.Marshal(map[string]string{"F": fp, "T": times[p.PageSize-1].UTC().Format(time.RFC3339Nano), "I": last["id"].(string)})
		c := listplan.Sign(s.secret, payload)
		page.NextCursor = &c
	}
	return page, nil
}

// PutLink creates or updates the link from record id of r to otherID through assoc, with attributes
// from body. Both records must be visible to a. It reports whether the link is new.
func (s *Service) PutLink(ctx context.Context, a Actor, r *model.Resource, assoc *model.Association, id, otherID string, body map[string]any) (Record, bool, error) {
	ctx = store.WithWorkspace(ctx, a.Workspace)
	b, errs := s.schemas.Resource(assoc.Attrs.Name).Validate(body, schema.Create)
	if errs != nil {
		return nil, false, errs
	}
	if len(b.Custom) > 0 {
		return nil, false, field.ErrorList{field.New(field.CodeUnknown, field.NewPath("custom_fields"), "associations have no custom fields")}
	}
	attrs := map[string]any{}
	for k, v := range b.Values {
		f, _ := assoc.Attrs.Field(k)
		attrs[k] = model.JSONValue(f, v)
	}
	data, _ := json.Marshal(attrs)
	l := s.link(a, r, assoc, id)
	storedTarget := assoc.Target
	if !l.FromOwner {
		storedTarget = r.Name
	}
	var rec Record
	created := false
	err := s.st.Tx(ctx, func(q store.Querier) error {
		if err := s.visible(ctx, q, a, r, l.FromID); err != nil {
			return err
		}
		if err := s.visible(ctx, q, a, l.Other, strings.ToLower(otherID)); err != nil {
			return err
		}
		if err := s.checkReferences(ctx, q, assoc.Attrs, a.Workspace, b.Values); err != nil {
			return err
		}
		var old Record
		found, err := store.QueryOne(ctx, q, s.d.GetLink(l, strings.ToLower(otherID)), func(row []any) error {
			var err error
			old, err = linkRecord(assoc, otherID, row[0], row[1], row[2])
			return err
		})
		if err != nil {
			return err
		}
		created = !found
		now := s.timestamp()
		if _, err := q.Exec(ctx, s.d.PutLink(l, strings.ToLower(otherID), storedTarget, string(data), now)); err != nil {
			return fmt.Errorf("link %s.%s: %w", r.Name, assoc.Name, err)
		}
		changes := map[string]any{assoc.Name: strings.ToLower(otherID)}
		if len(attrs) > 0 {
			changes["attributes"] = attrs
		}
		var previous map[string]any
		if found && !sameValue(old["attributes"], attrs) {
			previous = map[string]any{"attributes": old["attributes"]}
		}
		if err := s.audit(ctx, q, a, r, l.FromID, ActionLink, changes, previous, now); err != nil {
			return err
		}
		rec, err = s.readLink(ctx, q, assoc, l, strings.ToLower(otherID))
		if err != nil {
			return err
		}
		if a.OnWrite != nil {
			return a.OnWrite(ctx, q, rec)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return rec, created, nil
}

// DeleteLink removes the link from record id of r to otherID and returns it.
func (s *Service) DeleteLink(ctx context.Context, a Actor, r *model.Resource, assoc *model.Association, id, otherID string) (Record, error) {
	ctx = store.WithWorkspace(ctx, a.Workspace)
	l := s.link(a, r, assoc, id)
	other := strings.ToLower(otherID)
	var rec Record
	err := s.st.Tx(ctx, func(q store.Querier) error {
		if err := s.visible(ctx, q, a, r, l.FromID); err != nil {
			return err
		}
		if err := s.visible(ctx, q, a, l.Other, other); err != nil {
			return err
		}
		var err error
		if rec, err = s.readLink(ctx, q, assoc, l, other); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, s.d.DeleteLink(l, other)); err != nil {
			return fmt.Errorf("unlink %s.%s: %w", r.Name, assoc.Name, err)
		}
		var previous map[string]any
		if attrs, _ := rec["attributes"].(map[string]any); len(attrs) > 0 {
			previous = map[string]any{"attributes": attrs}
		}
		if err := s.audit(ctx, q, a, r, l.FromID, ActionUnlink, map[string]any{assoc.Name: other}, previous, s.timestamp()); err != nil {
			return err
		}
		if a.OnWrite != nil {
			return a.OnWrite(ctx, q, rec)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

func (s *Service) readLink(ctx context.Context, q store.Querier, assoc *model.Association, l sqlgen.Link, other string) (Record, error) {
	var rec Record
	found, err := store.QueryOne(ctx, q, s.d.GetLink(l, other), func(row []any) error {
		var err error
		rec, err = linkRecord(assoc, other, row[0], row[1], row[2])
		return err
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrLinkNotFound
	}
	return rec, nil
}

// visible checks that record id of r exists in a's workspace and inside a's record rule.
func (s *Service) visible(ctx context.Context, q store.Querier, a Actor, r *model.Resource, id string) error {
	if !model.IsUUID(id) {
		return ErrNotFound
	}
	_, err := s.get(ctx, q, r, sqlgen.Key{Workspace: a.Workspace, ID: id, Policy: a.Policy(r)}, false)
	return err
}
