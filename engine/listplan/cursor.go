package listplan

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/model"
)

// A cursor is base64url(payload) "." base64url(HMAC-SHA256(secret, payload)[:16]). The payload names the
// plan it belongs to by fingerprint, so a cursor replayed with another sort, order, search, filter set,
// join, archived flag, resource, model or workspace is refused, and any edit breaks the MAC.
type cursorPayload struct {
	V int             `json:"v"`
	F string          `json:"f"`
	K json.RawMessage `json:"k"`
	I string          `json:"i"`
}

const macLen = 16

// MaxCursorLen bounds the cursor text a caller may send. It must hold every cursor this server issues:
// the longest sort value a record can hold is a sortable text of 500 characters (project_tasks.title),
// which JSON may escape to six bytes each (control characters, U+2028, & < >) — 3,000 bytes, 4,130
// characters of cursor — refused by the 4,096 this used to be. 16 KiB holds sortable text of 2,000
// characters in the worst case.
const MaxCursorLen = 16384

// ErrCursor is returned for any cursor that is not one this server issued for the same query.
var ErrCursor = errors.New("is not a valid cursor for this query; start again with cursor=start and keep sort, order, search, filters, join and include_archived unchanged")

// Sign returns payload with its MAC, in the cursor text format.
func Sign(secret, payload []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:macLen])
}

// Verify returns the payload of a text made by Sign with secret, refusing any other text, including
// non-canonical encodings of a valid one.
func Verify(secret []byte, s string) ([]byte, error) {
	if len(s) > MaxCursorLen {
		return nil, ErrCursor
	}
	body, sig, ok := strings.Cut(s, ".")
	if !ok {
		return nil, ErrCursor
	}
	payload, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, ErrCursor
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(got) != macLen {
		return nil, ErrCursor
	}
	// The decoder skips newlines and ignores spare bits; only the exact encoding we issue is accepted,
	// so that any edit of the text is refused.
	if base64.RawURLEncoding.EncodeToString(payload) != body || base64.RawURLEncoding.EncodeToString(got) != sig {
		return nil, ErrCursor
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(payload)
	if !hmac.Equal(got, mac.Sum(nil)[:macLen]) {
		return nil, ErrCursor
	}
	return payload, nil
}

// One keyset cursor serves every walk of the API — record lists, association lists and the audit trail:
// a signed position (key, id) bound to its walk's scope, a fingerprint of everything that must stay the
// same between pages (who walks, what, filtered and ordered how). A cursor of another walk, or edited,
// is refused with ErrCursor.

// EncodeKeyset returns the cursor that resumes the walk scope after the row with the JSON-shaped sort
// value key (nil for NULL) and id.
func EncodeKeyset(secret []byte, scope string, key any, id string) string {
	k, _ := json.Marshal(key)
	payload, _ := json.Marshal(cursorPayload{V: 1, F: scope, K: k, I: id})
	return Sign(secret, payload)
}

// DecodeKeyset verifies s as a cursor of the walk scope and returns its position: the sort value,
// JSON-shaped with numbers as json.Number, and the id (lowercase).
func DecodeKeyset(secret []byte, scope, s string) (key any, id string, err error) {
	payload, err := Verify(secret, s)
	if err != nil {
		return nil, "", err
	}
	var c cursorPayload
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil || c.V != 1 || c.F != scope || !model.IsUUID(c.I) {
		return nil, "", ErrCursor
	}
	kd := json.NewDecoder(bytes.NewReader(c.K))
	kd.UseNumber()
	if err := kd.Decode(&key); err != nil {
		return nil, "", ErrCursor
	}
	return key, strings.ToLower(c.I), nil
}

// WalkScope returns the fingerprint of a walk named by parts, for EncodeKeyset: a digest, so a cursor
// carries no identifier in clear.
func WalkScope(parts ...string) string {
	data, _ := json.Marshal(parts)
	sum := sha256.Sum256(data)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// EncodeTimeKeyset is EncodeKeyset for walks in (time, id) order.
func EncodeTimeKeyset(secret []byte, scope string, at time.Time, id string) string {
	return EncodeKeyset(secret, scope, at.UTC().Format(time.RFC3339Nano), id)
}

// DecodeTimeKeyset is DecodeKeyset for walks in (time, id) order.
func DecodeTimeKeyset(secret []byte, scope, s string) (time.Time, string, error) {
	key, id, err := DecodeKeyset(secret, scope, s)
	if err != nil {
		return time.Time{}, "", err
	}
	text, ok := key.(string)
	if !ok {
		return time.Time{}, "", ErrCursor
	}
	at, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return time.Time{}, "", ErrCursor
	}
	return at, id, nil
}

// EncodeCursor returns the cursor that resumes plan after pos.
func EncodeCursor(secret []byte, plan *Plan, pos Position) string {
	return EncodeKeyset(secret, plan.Fingerprint, model.JSONValue(plan.Sort, pos.Key), pos.ID)
}

// DecodeCursor verifies s and returns the position it encodes for plan.
func DecodeCursor(secret []byte, s string, plan *Plan) (*Position, error) {
	raw, id, err := DecodeKeyset(secret, plan.Fingerprint, s)
	if err != nil {
		return nil, err
	}
	pos := &Position{ID: id}
	if raw != nil {
		if pos.Key, err = model.Canonical(plan.Sort, raw); err != nil {
			return nil, ErrCursor
		}
	}
	return pos, nil
}

// fingerprint identifies everything that must stay the same during a walk.
func fingerprint(p *Plan, workspace string) string {
	filters := fingerprintItems(p.Filter.Items)
	var who string
	if p.Policy != nil {
		who = p.Policy.Member + "/" + p.Policy.Rule.String() + "/" + p.Policy.Department
	}
	data, _ := json.Marshal(struct {
		U string   `json:"u"`
		W string   `json:"w"`
		R string   `json:"r"`
		M string   `json:"m"`
		S string   `json:"s"`
		D bool     `json:"d"`
		Q []string `json:"q"`
		F []any    `json:"f"`
		J bool     `json:"j"`
		A bool     `json:"a"`
	}{who, workspace, p.Resource.Name, p.ModelID, p.Sort.Key, p.Desc, p.Search, filters, p.Filter.Or, p.IncludeArchived})
	sum := sha256.Sum256(data)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// fingerprintItems encodes the filter tree for the fingerprint: a condition as {f, o, v} (the encoding
// of the flat filter lists that came before groups, so their cursors stay valid), a group as {j, g}.
func fingerprintItems(items []Item) []any {
	type cond struct {
		F string `json:"f"`
		O string `json:"o"`
		V any    `json:"v,omitempty"`
	}
	type group struct {
		J string `json:"j"`
		G []any  `json:"g"`
	}
	out := make([]any, len(items))
	for i, it := range items {
		if g := it.Group; g != nil {
			join := "and"
			if g.Or {
				join = "or"
			}
			out[i] = group{J: join, G: fingerprintItems(g.Items)}
			continue
		}
		f := it.Filter
		var v any
		if f.Values != nil {
			vals := make([]any, len(f.Values))
			for j, x := range f.Values {
				vals[j] = model.JSONValue(f.Field, x)
			}
			v = vals
		} else if f.Value != nil {
			v = model.JSONValue(f.Field, f.Value)
		}
		out[i] = cond{F: f.Key(), O: f.Op, V: v}
	}
	return out
}
