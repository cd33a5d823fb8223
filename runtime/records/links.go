package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/store"
)

// linkParams reads page, page_size and cursor of an association list, with the bounds of record lists.
func linkParams(q map[string][]string) (page, size int, cursor string, err error) {
	page, size = 1, listplan.DefaultSize
	var errs field.ErrorList
	for k, vals := range q {
		if len(vals) != 1 {
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath(k), "must be given once"))
			continue
		}
		switch k {
		case "page", "page_size":
			n, err := strconv.Atoi(vals[0])
			switch {
			case err != nil:
				errs = append(errs, field.New(field.CodeType, field.NewPath(k), "must be an integer"))
			case k == "page" && (n < 1 || n > listplan.MaxPage):
				errs = append(errs, field.New(field.CodeRange, field.NewPath(k), "must be between 1 and 10000"))
			case k == "page_size" && (n < 1 || n > listplan.MaxPageSize):
				errs = append(errs, field.New(field.CodeRange, field.NewPath(k), "must be between 1 and 100"))
			case k == "page":
				page = n
			default:
				size = n
			}
		case "cursor":
			cursor = vals[0]
		default:
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "is not a parameter of association lists (page, page_size, cursor)"))
		}
	}
	if _, ok := q["page"]; ok {
		if _, ok := q["cursor"]; ok {
			errs = append(errs, field.New(field.CodeConflicting, field.NewPath("page"), "cannot be combined with cursor"))
		}
	}
	if cursor == "" && (page-1)*size >= listplan.PageWindow+size {
		errs = append(errs, field.New(field.CodeRange, field.NewPath("page"), "is beyond the first 10,000 links; use cursor"))
	}
	if len(errs) > 0 {
		return 0, 0, "", apierr.Invalid("", errs)
	}
	return page, size, cursor, nil
}

// link addresses a's links from record id of r. Its OtherPolicy is nil when a may not use the other
// resource at all (Actor.linked): the handler refuses that before any link is read or written.
func (s *Service) link(a Actor, r *model.Resource, assoc *model.Association, id string) sqlgen.Link {
	other, _ := s.cat.Resource(assoc.Target)
	res, name, fromOwner := assoc.StoredAs(r.Name)
	return sqlgen.Link{Workspace: a.Workspace, Resource: res, Name: name, FromOwner: fromOwner, FromID: strings.ToLower(id),
		Other: other, OtherPolicy: a.linked(other)}
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

// ListLinks returns one page of the links of record id of c (which must be visible to the caller)
// through assoc, leaving out links to records the caller cannot see; query holds page, page_size and
// cursor.
func (s *Service) ListLinks(ctx context.Context, a Actor, c *Collection, assoc *model.Association, id string, query map[string][]string) (*Page, error) {
	pageNo, size, cursor, err := linkParams(query)
	if err != nil {
		return nil, err
	}
	if _, err := s.Get(ctx, c, id, nil); err != nil {
		return nil, err
	}
	ctx = store.WithWorkspace(ctx, c.Workspace)
	l := s.link(a, c.Resource, assoc, id)
	if l.OtherPolicy == nil {
		// The handler refused it already; a nil policy would read every record at the other end.
		return nil, apierr.New(apierr.Forbidden, "You may not use "+assoc.Target+".")
	}
	scope := listplan.WalkScope("links", c.Workspace, a.Member, c.Resource.Name, assoc.Name, l.FromID)
	var afterTime time.Time
	var afterID string
	offset := 0
	switch cursor {
	case "":
		offset = (pageNo - 1) * size
	case "start":
	default:
		if afterTime, afterID, err = listplan.DecodeTimeKeyset(s.secret, scope, cursor); err != nil {
			// A cursor this list did not issue (another record, workspace or member): a malformed
			// parameter, 400 like a record list's.
			return nil, apierr.InvalidField(field.CodeInvalid, "cursor", listplan.ErrCursor.Error())
		}
	}
	page := &Page{Records: []Record{}, PageSize: size}
	if cursor == "" {
		page.Page = pageNo
	}
	var times []time.Time
	err = s.st.Query(ctx, s.d.ListLinks(l, afterTime, afterID, size+1, offset), func(row []any) error {
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
		return nil, fmt.Errorf("list %s.%s: %w", c.Resource.Name, assoc.Name, err)
	}
	if len(page.Records) > size {
		page.Records, page.HasMore = page.Records[:size], true
		next := listplan.EncodeTimeKeyset(s.secret, scope, times[size-1], page.Records[size-1]["id"].(string))
		page.NextCursor = &next
	}
	return page, nil
}

// PutLink creates or updates the link from record id of c to otherID through assoc, with attributes
// from body. Both records must be visible to the caller.
func (s *Service) PutLink(ctx context.Context, a Actor, c *Collection, assoc *model.Association, id, otherID string, body map[string]any, rc *Receipt) (Record, error) {
	b, verrs := s.schemas.Resource(assoc.Attrs.Name).Validate(body, schema.Create)
	if errs := firstPerField(reachErrors(a, s.cat, assoc.Attrs, body), verrs); errs != nil {
		sortErrors(assoc.Attrs, errs)
		return nil, errs
	}
	if len(b.Custom) > 0 {
		return nil, field.ErrorList{field.New(field.CodeUnknown, field.NewPath("custom_fields"), "associations have no custom fields")}
	}
	attrs := map[string]any{}
	for k, v := range b.Values {
		f, _ := assoc.Attrs.Field(k)
		attrs[k] = model.JSONValue(f, v)
	}
	data, _ := json.Marshal(attrs)
	l := s.link(a, c.Resource, assoc, id)
	storedTarget := assoc.Target
	if !l.FromOwner {
		storedTarget = c.Resource.Name
	}
	other := strings.ToLower(otherID)
	rec, _, err := s.commit(ctx, a, c, rc, func(ctx context.Context, q store.Querier) (*outcome, error) {
		if err := s.bothVisible(ctx, q, a, c, l, other); err != nil {
			return nil, err
		}
		if err := s.checkReferences(ctx, q, a, assoc.Attrs, c.Workspace, b.Values); err != nil {
			return nil, err
		}
		old, err := s.readLink(ctx, q, assoc, l, other)
		if err != nil && !errors.Is(err, ErrLinkNotFound) {
			return nil, err
		}
		now := s.timestamp()
		if _, err := q.Exec(ctx, s.d.PutLink(l, other, storedTarget, string(data), now)); err != nil {
			return nil, fmt.Errorf("link %s.%s: %w", c.Resource.Name, assoc.Name, err)
		}
		changes := map[string]any{assoc.Name: other}
		if len(attrs) > 0 {
			changes["attributes"] = attrs
		}
		var previous map[string]any
		if old != nil && !audit.Same(old["attributes"], attrs) {
			previous = map[string]any{"attributes": old["attributes"]}
		}
		if err := s.audit(ctx, q, a, c.Resource, l.FromID, audit.ActionLink, changes, previous, now); err != nil {
			return nil, err
		}
		if err := s.writeEvents(ctx, q, a, now, recordEvent(c, l.FromID, audit.ActionLink, changes, previous)); err != nil {
			return nil, err
		}
		rec, err := s.readLink(ctx, q, assoc, l, other)
		return &outcome{rec: rec}, err
	})
	return rec, err
}

// DeleteLink removes the link from record id of c to otherID and returns it; it takes no body.
func (s *Service) DeleteLink(ctx context.Context, a Actor, c *Collection, assoc *model.Association, id, otherID string, body map[string]any, rc *Receipt) (Record, error) {
	if len(body) > 0 {
		return nil, apierr.Invalid("Deleting an association takes no body.", nil)
	}
	l := s.link(a, c.Resource, assoc, id)
	other := strings.ToLower(otherID)
	rec, _, err := s.commit(ctx, a, c, rc, func(ctx context.Context, q store.Querier) (*outcome, error) {
		if err := s.bothVisible(ctx, q, a, c, l, other); err != nil {
			return nil, err
		}
		rec, err := s.readLink(ctx, q, assoc, l, other)
		if err != nil {
			return nil, err
		}
		if _, err := q.Exec(ctx, s.d.DeleteLink(l, other)); err != nil {
			return nil, fmt.Errorf("unlink %s.%s: %w", c.Resource.Name, assoc.Name, err)
		}
		var previous map[string]any
		if attrs, _ := rec["attributes"].(map[string]any); len(attrs) > 0 {
			previous = map[string]any{"attributes": attrs}
		}
		now := s.timestamp()
		if err := s.audit(ctx, q, a, c.Resource, l.FromID, audit.ActionUnlink, map[string]any{assoc.Name: other}, previous, now); err != nil {
			return nil, err
		}
		if err := s.writeEvents(ctx, q, a, now, recordEvent(c, l.FromID, audit.ActionUnlink, map[string]any{assoc.Name: other}, previous)); err != nil {
			return nil, err
		}
		return &outcome{rec: rec}, nil
	})
	return rec, err
}

// bothVisible checks, inside a link write, that both records exist in the workspace inside the caller's
// record rules.
func (s *Service) bothVisible(ctx context.Context, q store.Querier, a Actor, c *Collection, l sqlgen.Link, other string) error {
	if err := s.visible(ctx, q, a, c.Resource, l.FromID); err != nil {
		return err
	}
	return s.visible(ctx, q, a, l.Other, other)
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
