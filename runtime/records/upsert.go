package records

// Upsert: create or change the one active record of a collection that holds a value of one of its unique
// keys (PUT /v1/{resource}/by/{key}/{value}). The key is a declared unique field, or a unique custom field
// named cf__<key>. Archived records hold no key (the unique indexes are partial), so an upsert never
// matches one: it creates a new active record beside it.
//
// Concurrency: inside the write's transaction the key value is locked first (a transaction-scoped
// advisory lock on PostgreSQL, the same lock a unique custom value takes; SQLite runs one write
// transaction at a time), then the holder is looked up, then the record is created or changed. Two
// upserts of one value therefore run one after the other and make exactly one record. A plain create
// of the same value that slips between the look-up and the insert makes the insert fail on the unique
// index; the upsert then runs once more and changes the record that create made.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/store"
)

// UpsertConditions are an upsert's preconditions: If-Match (the record must exist and be at one of the
// versions, or any version for "*"), or If-None-Match: * (no record may hold the value: create only).
type UpsertConditions struct {
	IfMatch     *IfMatch
	IfNoneMatch bool
}

// uniqueKey is one unique key of a collection as an upsert names it.
type uniqueKey struct {
	name   string            // as the path and the 409 name it: a field key, or cf__<key>
	field  *model.Field      // the declared field, or the custom field's definition as a field
	custom *customfields.Def // nil for a declared key
}

// UniqueKeys returns the names of c's unique keys: the declared ones in definition order, then the unique
// custom fields as cf__<key>.
func (c *Collection) UniqueKeys() []string {
	var out []string
	for _, f := range c.Resource.Fields {
		if f.Unique && !f.Custom {
			out = append(out, f.Key)
		}
	}
	if c.Fields != nil {
		for _, d := range c.Fields.Defs {
			if d.Unique && !d.Archived {
				out = append(out, schema.CustomPrefix+d.Key)
			}
		}
	}
	return out
}

// uniqueKeyOf resolves name on c; a name that is no unique key is 404, with the keys there are.
func (c *Collection) uniqueKeyOf(name string) (uniqueKey, error) {
	if key, ok := strings.CutPrefix(name, schema.CustomPrefix); ok && c.Fields != nil {
		if d, ok := c.Fields.ByKey(key); ok && d.Unique {
			return uniqueKey{name: name, field: c.Fields.Field(d), custom: d}, nil
		}
	} else if f, ok := c.Resource.Field(name); ok && f.Unique && !f.Custom {
		return uniqueKey{name: name, field: f}, nil
	}
	keys := c.UniqueKeys()
	msg := fmt.Sprintf("%s has no unique key %q.", c.Resource.Name, apierr.Clip(name))
	if len(keys) == 0 {
		msg += " It has no unique keys to upsert by."
	} else {
		if s, ok := suggest.Nearest(name, keys); ok {
			msg += fmt.Sprintf(" Did you mean %q?", s)
		}
		msg += " Its unique keys: " + strings.Join(keys, ", ") + "."
	}
	return uniqueKey{}, apierr.New(apierr.NotFound, msg)
}

// pathValue reads a key value given as a path segment as the JSON value a body would carry: a number for
// a numeric field (when it is one), else the text.
func pathValue(f *model.Field, raw string) any {
	if f.Type == model.Integer || f.Type == model.Decimal {
		var n json.Number
		if json.Unmarshal([]byte(raw), &n) == nil {
			return n
		}
	}
	return raw
}

// set puts v as k's value into a copy of body, in the body's form of custom fields.
func (k uniqueKey) set(body map[string]any, v any) map[string]any {
	out := maps.Clone(body)
	if k.custom == nil {
		out[k.name] = v
		return out
	}
	if obj, ok := out["custom_fields"].(map[string]any); ok {
		obj = maps.Clone(obj)
		obj[k.custom.Key] = v
		out["custom_fields"] = obj
		return out
	}
	out[k.name] = v
	return out
}

// without returns a copy of body without k's member, and the value it held (given: whether it held one).
func (k uniqueKey) without(body map[string]any) (rest map[string]any, v any, given bool) {
	out := maps.Clone(body)
	if k.custom != nil {
		if obj, ok := out["custom_fields"].(map[string]any); ok {
			v, given = obj[k.custom.Key]
			obj = maps.Clone(obj)
			delete(obj, k.custom.Key)
			out["custom_fields"] = obj
			return out, v, given
		}
	}
	v, given = out[k.name]
	delete(out, k.name)
	return out, v, given
}

// canonical is v as k's canonical value, validated as a write of k alone would be; the errors name k.
func (s *Service) canonical(c *Collection, k uniqueKey, v any) (any, error) {
	if k.custom == nil {
		b, errs := s.schemas.Resource(c.Resource.Name).Validate(map[string]any{k.name: v}, schema.Update)
		if len(errs) > 0 {
			return nil, errs
		}
		return b.Values[k.name], nil
	}
	ci, errs := c.checkCustom(map[string]any{k.custom.Key: v}, schema.MemberForm, schema.Update)
	if len(errs) > 0 {
		return nil, errs
	}
	return ci.values[k.custom.Key], nil
}

// upsert is one validated upsert: the key and its canonical value, the body read as an update's and, when
// it is a valid create's too, as a create's.
type upsert struct {
	k          uniqueKey
	value      any
	lock, text string
	ub         *schema.Body
	uci        *customInput
	cb         *schema.Body
	cci        *customInput
	createErr  error // the create's problems, which count only when no record holds the value
	cond       UpsertConditions
	created    bool // the last run of the step made the record
}

// Upsert creates the record of c whose unique key keyName holds the value raw (a path segment), or
// changes the active record that holds it: body is a create's body (the key's member may be left out, or
// must hold the same value) or, for an existing record, an update's. It returns the record and what the
// upsert did: Created, Changed, or Unchanged when the body changes nothing of the record there was.
func (s *Service) Upsert(ctx context.Context, a Actor, c *Collection, keyName, raw string, body map[string]any, cond UpsertConditions, rc *Receipt) (Record, Effect, error) {
	u, err := s.planUpsert(a, c, keyName, raw, body, cond)
	if err != nil {
		return nil, 0, err
	}
	rec, e, err := s.commit(ctx, a, c, rc, s.upsertStep(a, c, u))
	if u.retry(err) {
		rec, e, err = s.commit(ctx, a, c, rc, s.upsertStep(a, c, u))
	}
	if err != nil {
		return nil, 0, err
	}
	return rec, e, nil
}

// planUpsert validates an upsert of c before any transaction.
func (s *Service) planUpsert(a Actor, c *Collection, keyName, raw string, body map[string]any, cond UpsertConditions) (*upsert, error) {
	k, err := c.uniqueKeyOf(keyName)
	if err != nil {
		return nil, err
	}
	if k.custom == nil && !c.Policy.Readable(k.name) {
		// A key the caller's role masks or hides finds records by a value the caller may not see (and
		// may not write): refused whether or not a record holds the value, as a write of the field is.
		return nil, apierr.Refused(field.ErrorList{field.New(field.CodeNotPermitted, field.NewPath(k.name), "your role may not see or write this field, so it cannot upsert by it")})
	}
	value, err := s.canonical(c, k, pathValue(k.field, raw))
	if err != nil {
		return nil, err
	}
	if value == nil {
		return nil, apierr.InvalidField(field.CodeRequired, k.name, "the unique key value in the path must not be empty")
	}
	rest, bodyValue, inBody := k.without(body)
	createValue := pathValue(k.field, raw)
	if inBody {
		createValue = bodyValue // checked with the create's body; it must be the path's value
		if v, err := s.canonical(c, k, bodyValue); err == nil && !sameValue(v, value) {
			return nil, apierr.InvalidField(field.CodeInvalid, k.name, "differs from the unique key value in the path; leave it out or send the same value")
		}
	}
	u := &upsert{k: k, value: value, cond: cond}
	// An update's body is checked whole before any transaction: its problems are the upsert's whatever
	// the record's state. A create's problems (a required field left out) count only when no record
	// holds the value.
	if u.ub, u.uci, err = s.checkBody(a, c, rest, schema.Update); err != nil {
		return nil, err
	}
	u.cb, u.cci, u.createErr = s.checkBody(a, c, k.set(rest, createValue), schema.Create)
	u.lock, u.text = s.keyText(c, k, value)
	return u, nil
}

// upsertStep is the step of u: lock the value, look up its holder, then create or change.
func (s *Service) upsertStep(a Actor, c *Collection, u *upsert) step {
	return func(ctx context.Context, q store.Querier) (*outcome, error) {
		u.created = false
		if s.d.Kind() == sqlgen.Postgres {
			if _, err := q.Exec(ctx, s.d.Bind("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", u.lock)); err != nil {
				return nil, fmt.Errorf("lock unique key value: %w", err)
			}
		}
		id, found, err := s.holder(ctx, q, c, u.k, u.value, u.text)
		if err != nil {
			return nil, err
		}
		if !found {
			if u.cond.IfMatch != nil {
				return nil, ErrPreconditionFailed // If-Match, even "*", needs a current record
			}
			if u.createErr != nil {
				return nil, u.createErr
			}
			u.created = true
			return s.insert(a, c, u.cb.Values, u.cci)(ctx, q)
		}
		if u.cond.IfNoneMatch {
			return nil, ErrPreconditionFailed
		}
		out, err := s.change(a, c, id, u.cond.IfMatch, s.updateEdit(a, c, u.ub, u.uci))(ctx, q)
		if errors.Is(err, ErrNotFound) {
			// Held by a record outside the caller's record rule: refused as a create of the value is.
			return nil, uniqueRefusal(u.k.name, nil)
		}
		return out, err
	}
}

// retry reports whether u's step should run once more after err: its insert met a create of the same
// value that committed between the look-up and the insert; the next run changes that record.
func (u *upsert) retry(err error) bool {
	var ae *apierr.Error
	return u.created && errors.As(err, &ae) && ae.Details["unique_key"] == u.k.name
}

// sameValue compares two canonical values of one field.
func sameValue(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// keyText returns the advisory lock name of value of k on c, and for a custom key the text
// custom_values stores for it (the lock is the one checkCustomKeys takes, so that an upsert and a
// plain write of one custom value exclude each other).
func (s *Service) keyText(c *Collection, k uniqueKey, value any) (lock, text string) {
	if k.custom == nil {
		return c.Workspace + "/" + c.Resource.Name + "/" + k.name + "/" + sqlgen.CustomText(value), ""
	}
	stored := c.stored(&customInput{values: map[string]any{k.custom.Key: value}}, nil)
	rows, err := s.customRows(nil, "", c.Fields, stored, []string{k.custom.ID})
	if err != nil || len(rows) == 0 {
		return c.Workspace + "/" + k.custom.ID + "/", ""
	}
	return c.Workspace + "/" + rows[0].FieldID + "/" + rows[0].Text, rows[0].Text
}

// holder finds the active record of c that holds value of k, whoever may see it.
func (s *Service) holder(ctx context.Context, q store.Querier, c *Collection, k uniqueKey, value any, text string) (string, bool, error) {
	table := sqlgen.Quote(c.Resource.Table)
	var stmt sqlgen.Stmt
	if k.custom == nil {
		stmt = s.d.Bind(fmt.Sprintf(`SELECT id FROM %s WHERE workspace_id = ? AND %s = ? AND NOT archived LIMIT 1`, table, sqlgen.Quote(k.field.Column)),
			c.Workspace, value)
	} else {
		stmt = s.d.Bind(fmt.Sprintf(`SELECT r.id FROM custom_values cv JOIN %s r ON r.workspace_id = cv.workspace_id AND r.id = cv.record_id
WHERE cv.workspace_id = ? AND cv.field_id = ? AND cv.t = ? AND NOT r.archived LIMIT 1`, table), c.Workspace, k.custom.ID, text)
	}
	var id string
	found, err := store.QueryOne(ctx, q, stmt, func(row []any) error {
		id = store.UUIDText(row[0])
		return nil
	})
	if err != nil {
		return "", false, fmt.Errorf("look up %s by %s: %w", c.Resource.Name, k.name, err)
	}
	return id, found, nil
}

// IDsByUnique returns the ids of the active records of r that a may read whose unique key keyName (a
// declared unique field, or cf__<key>) holds one of values (as text, each read as a write of the key
// would read it), keyed by the value as given: what an import's mapping to an association target by
// unique key resolves (docs/issue-37.md). The records are found by a list of r with an "in" filter on
// the key, so that a's record rules, plan, key allowlist and field rules hold exactly as a list's: a key
// a's role masks or hides is refused as a filter on it is (400), and a record a may not read is not
// found (never an oracle). A value that does not read as the key's type is not found.
func (s *Service) IDsByUnique(ctx context.Context, a Actor, r *model.Resource, keyName string, values []string) (map[string]string, error) {
	c, err := s.Collection(ctx, a, r, "")
	if err != nil {
		return nil, err
	}
	k, err := c.uniqueKeyOf(keyName)
	if err != nil {
		return nil, err
	}
	filterKey := k.name
	if k.custom != nil {
		filterKey = k.custom.FilterKey()
	}
	canon := map[string][]string{} // canonical value as text → the values given that read as it
	var batch []any
	out := make(map[string]string, len(values))
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		lq, err := ReadList(ListRequest{Body: map[string]any{"filters": []any{map[string]any{"field": filterKey, "op": "in", "value": batch}}}})
		if err != nil {
			return err
		}
		cursor := ""
		for {
			page, err := s.List(ctx, a, c, lq.Walk(cursor, listplan.MaxInValues))
			if err != nil {
				return err
			}
			for _, rec := range page.Records {
				v := rec[k.name]
				if k.custom != nil {
					cf, _ := rec["custom_fields"].(map[string]any)
					v = cf[k.custom.Key]
				}
				id, _ := rec["id"].(string)
				for _, given := range canon[fmt.Sprint(v)] {
					out[given] = id
				}
			}
			if !page.HasMore || page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
		batch = batch[:0]
		return nil
	}
	for _, text := range values {
		v, err := s.canonical(c, k, pathValue(k.field, text))
		if err != nil {
			continue // not a value of the key's type: no record holds it
		}
		t := fmt.Sprint(v)
		if _, seen := canon[t]; !seen {
			batch = append(batch, v)
		}
		canon[t] = append(canon[t], text)
		if len(batch) == listplan.MaxInValues {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}
