package records

// Conditional requests (RFC 9110 §13). A record's version is its updated_at in microseconds: every
// write of the record (update, archive, restore) sets updated_at, and change makes it strictly greater
// than the one it replaces, so the version moves on every write, as a Kubernetes resourceVersion does.
// A record's ETag is "<version>-<hash>", the hash being that of the response body the caller receives:
// two callers under different field rules (or one asking for fewer fields) see different bodies and
// get different tags, so If-None-Match never answers 304 for a representation the caller does not
// hold. If-Match compares the version part only: the precondition is about the record's state, which
// the caller's rendering of it does not change.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/apierr"
)

// ErrPreconditionFailed is an If-Match that no longer holds: the record changed since it was read.
var ErrPreconditionFailed = errors.New("precondition failed")

// IfMatch is a parsed If-Match header: any existing record (*), or one of the listed versions.
type IfMatch struct {
	Any      bool
	Versions []int64
}

// holds reports whether the precondition holds for a record of version v.
func (m *IfMatch) holds(v int64) bool {
	if m == nil || m.Any {
		return true
	}
	for _, w := range m.Versions {
		if w == v {
			return true
		}
	}
	return false
}

// ParseIfMatch reads the If-Match header values (nil: no header). A list of entity tags or "*" is
// well formed; a weak tag (W/"…") or a tag this server never issued never matches, as strong
// comparison requires; anything else is malformed (400).
func ParseIfMatch(values []string) (*IfMatch, error) {
	if len(values) == 0 {
		return nil, nil
	}
	m := &IfMatch{}
	tags, ok := entityTags(values)
	if !ok {
		return nil, apierr.New(apierr.InvalidRequest, `If-Match must be "*" or a list of entity tags ("…"), as the ETag header gives them.`)
	}
	for _, t := range tags {
		switch {
		case t == "*":
			m.Any = true
		case strings.HasPrefix(t, "W/"):
		default:
			if v, ok := tagVersion(t); ok {
				m.Versions = append(m.Versions, v)
			}
		}
	}
	return m, nil
}

// NoneMatch reports whether the If-None-Match header values match etag (weak comparison, RFC 9110
// §13.1.2); malformed values match nothing.
func NoneMatch(values []string, etag string) bool {
	tags, ok := entityTags(values)
	if !ok {
		return false
	}
	for _, t := range tags {
		t = strings.TrimPrefix(t, "W/")
		if t == "*" || t == etag || strings.TrimSuffix(t, `-gzip"`)+`"` == etag {
			return true
		}
	}
	return false
}

// entityTags splits header values into "*" and entity tags; false when one is malformed.
func entityTags(values []string) ([]string, bool) {
	var tags []string
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "" {
				continue
			}
			body := strings.TrimPrefix(t, "W/")
			if t != "*" && (len(body) < 2 || body[0] != '"' || body[len(body)-1] != '"' || strings.ContainsAny(body[1:len(body)-1], "\" \t")) {
				return nil, false
			}
			tags = append(tags, t)
		}
	}
	return tags, len(tags) > 0
}

// tagVersion is the version an ETag of this server carries.
func tagVersion(tag string) (int64, bool) {
	inner := strings.Trim(tag, `"`)
	v, _, ok := strings.Cut(inner, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n > 0
}

// VersionOf is the version of a record as stored (its updated_at), false when rec has none.
func VersionOf(rec Record) (int64, bool) {
	switch t := rec["updated_at"].(type) {
	case time.Time:
		return t.UnixMicro(), true
	case string:
		p, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return 0, false
		}
		return p.UnixMicro(), true
	}
	return 0, false
}

// ETag is the entity tag of a record of version v answered with body.
func ETag(v int64, body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + strconv.FormatInt(v, 10) + "-" + hex.EncodeToString(sum[:8]) + `"`
}

// nextVersion is the updated_at of a write of cur at now: now, or just past cur's when the clock has
// not moved past it, so that the version strictly grows.
func nextVersion(cur Record, now time.Time) time.Time {
	if v, ok := VersionOf(cur); ok && now.UnixMicro() <= v {
		return time.UnixMicro(v + 1).UTC()
	}
	return now
}
