package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/runtime/store"
)

// The console's sign-in and session times (docs/issue-24.md).
const (
	// SignInLinkLifetime is how long a sign-in link is good for by default; MaxSignInLinkLifetime bounds
	// what an operator may ask.
	SignInLinkLifetime    = 15 * time.Minute
	MaxSignInLinkLifetime = 24 * time.Hour
	// SessionIdle ends a session not used for this long; SessionLifetime ends any session this long
	// after its sign-in.
	SessionIdle     = 30 * time.Minute
	SessionLifetime = 12 * time.Hour
	// RecentSignIn is how fresh a session's sign-in must be to create or roll a key: the key delegates
	// that sign-in's assurance.
	RecentSignIn = 15 * time.Minute
	// sessionTouch is how stale last_seen_at may get before a request writes it again.
	sessionTouch = time.Minute
)

// AccessSession is the Access of the Key that stands for a console session in its Principal.
const AccessSession = "session"

// Session is a member's console session.
type Session struct {
	ID         string    `json:"id"`
	Workspace  string    `json:"workspace_id"`
	Member     string    `json:"member_id"`
	SignedInAt time.Time `json:"signed_in_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// Recent reports whether the session signed in within RecentSignIn of now.
func (s *Session) Recent(now time.Time) bool { return now.Sub(s.SignedInAt) < RecentSignIn }

// IdleUntil is when the session ends unless used again: SessionIdle after its last use, or its absolute
// expiry if sooner.
func (s *Session) IdleUntil() time.Time {
	idle := s.LastSeenAt.Add(SessionIdle)
	if idle.After(s.ExpiresAt) {
		return s.ExpiresAt
	}
	return idle
}

// CSRFToken is the token a console request sends in X-CSRF-Token beside the session cookie: derived from
// the session's secret, so every server can check it with nothing stored, and no one without the
// (HttpOnly) cookie can compute it.
func CSRFToken(secret string) string {
	sum := sha256.Sum256([]byte("csrf:" + secret))
	return hex.EncodeToString(sum[:])
}

// CheckCSRF reports whether token is the CSRF token of the session secret.
func CheckCSRF(secret, token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(CSRFToken(secret)), []byte(token)) == 1
}

// randomSecret returns 32 random bytes in hex.
func randomSecret() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	return hex.EncodeToString(raw), nil
}

// CreateSignInLink makes a one-time sign-in token for member, good for ttl (0: SignInLinkLifetime; at
// most MaxSignInLinkLifetime). Only its hash is stored; the token is returned once.
func (d *Directory) CreateSignInLink(ctx context.Context, member string, ttl time.Duration) (token string, expires time.Time, err error) {
	if ttl == 0 {
		ttl = SignInLinkLifetime
	}
	if ttl < 0 || ttl > MaxSignInLinkLifetime {
		return "", time.Time{}, fmt.Errorf("%w: a sign-in link lasts more than 0 and at most %s", ErrInvalid, MaxSignInLinkLifetime)
	}
	member = strings.ToLower(member)
	var workspace string
	var active any
	found, err := store.QueryOne(ctx, d.st, d.d.Bind("SELECT workspace_id, active FROM members WHERE id = ?", member), func(row []any) error {
		workspace, active = store.UUIDText(row[0]), row[1]
		return nil
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign-in link: %w", err)
	}
	if !found {
		return "", time.Time{}, fmt.Errorf("member %s: %w", member, ErrNotFound)
	}
	if !store.Bool(active) {
		return "", time.Time{}, fmt.Errorf("%w: member %s is inactive", ErrInvalid, member)
	}
	if token, err = randomSecret(); err != nil {
		return "", time.Time{}, fmt.Errorf("sign-in link: %w", err)
	}
	now := d.ts()
	expires = now.Add(ttl)
	if _, err := d.st.Exec(ctx, d.d.Bind("INSERT INTO console_links (workspace_id, id, member_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
		workspace, store.NewID(), member, hashSecret(token), now, expires)); err != nil {
		return "", time.Time{}, fmt.Errorf("sign-in link: %w", err)
	}
	return token, expires, nil
}

// errSignIn is the one answer to every failed sign-in: which of unknown, used, expired or inactive it
// was is not told.
var errSignIn = &apierr.Error{Code: apierr.InvalidAPIKey, Message: "The sign-in link is unknown, already used or expired; ask for a new one (recordsctl console-link)."}

// SignIn redeems a sign-in token, at most once and before it expires, for an active member, and starts a
// session. It returns the session's secret (the cookie's value, never stored: only its hash is) and the
// session. Every session starts with a new secret: none a browser brings is ever taken.
func (d *Directory) SignIn(ctx context.Context, token string) (string, *Session, error) {
	if len(token) != 64 {
		return "", nil, errSignIn
	}
	now := d.ts()
	secret, err := randomSecret()
	if err != nil {
		return "", nil, fmt.Errorf("sign in: %w", err)
	}
	var s *Session
	err = d.st.Tx(ctx, func(q store.Querier) error {
		var workspace, member string
		found, err := store.QueryOne(ctx, q, d.d.Bind(`UPDATE console_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?
RETURNING workspace_id, member_id`, now, hashSecret(token), now), func(row []any) error {
			workspace, member = store.UUIDText(row[0]), store.UUIDText(row[1])
			return nil
		})
		if err != nil {
			return err
		}
		if !found {
			return errSignIn
		}
		var active any
		if _, err := store.QueryOne(ctx, q, d.d.Bind("SELECT active FROM members WHERE id = ?", member), func(row []any) error {
			active = row[0]
			return nil
		}); err != nil {
			return err
		}
		if !store.Bool(active) {
			return errSignIn
		}
		s = &Session{ID: store.NewID(), Workspace: workspace, Member: member, SignedInAt: now, LastSeenAt: now, ExpiresAt: now.Add(SessionLifetime)}
		_, err = q.Exec(ctx, d.d.Bind(`INSERT INTO console_sessions (workspace_id, id, member_id, token_hash, signed_in_at, last_seen_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`, s.Workspace, s.ID, s.Member, hashSecret(secret), now, now, s.ExpiresAt))
		return err
	})
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return "", nil, ae
		}
		return "", nil, fmt.Errorf("sign in: %w", err)
	}
	return secret, s, nil
}

// errSession is the answer to a session cookie that does not (or no longer) sign anyone in.
var errSession = &apierr.Error{Code: apierr.InvalidAPIKey, Message: "The console session has ended or expired; sign in again."}

// SessionPrincipal resolves a session secret (the cookie's value) to the principal it acts as: its
// member, with the member's current role and workspace. A session ends when it is signed out, idle for
// SessionIdle, SessionLifetime after its sign-in, when its member is deactivated (for good, even if
// activated again: endSessions), or when the member verifies a new MFA factor after the sign-in. Each use moves its idle time on (written at most once a
// minute).
func (d *Directory) SessionPrincipal(ctx context.Context, secret string) (*Principal, error) {
	if len(secret) != 64 {
		return nil, errSession
	}
	// Where every change is announced (PostgreSQL's NOTIFY: sign-out, deactivation, a new MFA factor, a
	// role changed), a session read lately is remembered as a key is, for PrincipalMaxAge, while its idle
	// time need not move on. (On SQLite the session is read every time: the change count that guards
	// remembered keys does not count sessions.)
	hash := "session:" + hashSecret(secret)
	cacheable := d.watching.Load() && !d.counted
	var epoch uint64
	if cacheable {
		d.mu.Lock()
		c, ok := d.cache[hash]
		epoch = d.epoch
		d.mu.Unlock()
		if now := d.now(); ok && time.Since(c.loaded) < PrincipalMaxAge && now.Before(c.p.Session.IdleUntil()) && now.Sub(c.p.Session.LastSeenAt) < sessionTouch {
			return c.p, nil
		}
	}
	p, err := d.sessionPrincipal(ctx, secret)
	if err != nil || !cacheable {
		return p, err
	}
	d.mu.Lock()
	if d.epoch == epoch && len(d.cache) < maxCachedPrincipals {
		d.cache[hash] = cachedPrincipal{p: p, loaded: time.Now()}
	}
	d.mu.Unlock()
	return p, nil
}

// sessionPrincipal reads the session of secret (SessionPrincipal) from the database.
func (d *Directory) sessionPrincipal(ctx context.Context, secret string) (*Principal, error) {
	var p Principal
	var s Session
	var ended, active, mfa, roleDef, overrides any
	found, err := store.QueryOne(ctx, d.st, d.d.Bind(`SELECT s.id, s.workspace_id, s.member_id, s.signed_in_at, s.last_seen_at, s.expires_at, s.ended_at,
  m.email, m.role, m.active, m.mfa_verified_at, m.department_id, w.name, w.plan, wr.definition, w.limits
FROM console_sessions s JOIN members m ON m.id = s.member_id JOIN workspaces w ON w.id = s.workspace_id
LEFT JOIN workspace_roles wr ON wr.workspace_id = s.workspace_id AND wr.name = m.role
WHERE s.token_hash = ?`, hashSecret(secret)), func(row []any) error {
		s = Session{ID: store.UUIDText(row[0]), Workspace: store.UUIDText(row[1]), Member: store.UUIDText(row[2])}
		var err error
		for i, dst := range []*time.Time{&s.SignedInAt, &s.LastSeenAt, &s.ExpiresAt} {
			if *dst, err = store.Time(row[3+i]); err != nil {
				return err
			}
		}
		ended = row[6]
		p.Member = Member{ID: s.Member, Email: store.Text(row[7]), Role: store.Text(row[8]), Department: store.UUIDText(row[11])}
		active, mfa = row[9], row[10]
		p.Workspace = Workspace{ID: s.Workspace, Name: store.Text(row[12]), Plan: store.Text(row[13])}
		roleDef, overrides = row[14], row[15]
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	now := d.ts()
	if !found || ended != nil || !now.Before(s.IdleUntil()) || !store.Bool(active) {
		return nil, errSession
	}
	if mfa != nil {
		at, err := store.Time(mfa)
		if err != nil {
			return nil, fmt.Errorf("session: %w", err)
		}
		if at.After(s.SignedInAt) {
			return nil, &apierr.Error{Code: apierr.KeyAssuranceStale, Message: "A new MFA factor was verified after this sign-in; sign in again."}
		}
	}
	p.Member.Active = true
	cat := d.catalog() // one version for the plan and the role
	plan, ok := cat.Plan(p.Workspace.Plan)
	if !ok {
		return nil, fmt.Errorf("session: workspace %s has plan %q, which the definitions do not declare", p.Workspace.ID, p.Workspace.Plan)
	}
	if err := p.setPlan(plan, overrides); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	if p.Role, err = ResolveRole(cat, p.Member.Role, roleDef); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	if p.Role == nil {
		return nil, &apierr.Error{Code: apierr.PermissionDenied, Message: "Your role " + p.Member.Role + " no longer exists; ask an administrator for another."}
	}
	if now.Sub(s.LastSeenAt) >= sessionTouch {
		if _, err := d.st.Exec(ctx, d.d.Bind("UPDATE console_sessions SET last_seen_at = ? WHERE id = ? AND workspace_id = ?", now, s.ID, s.Workspace)); err != nil {
			return nil, fmt.Errorf("session: %w", err)
		}
		s.LastSeenAt = now
	}
	p.Session = &s
	p.Key = Key{ID: s.ID, Workspace: s.Workspace, Member: s.Member, Access: AccessSession, CreatedAt: s.SignedInAt, ExpiresAt: s.ExpiresAt}
	return &p, nil
}

// endSessions ends every console session of member (of workspace) still going, in q's transaction, at: a member
// deactivated is signed out everywhere for good, as their keys are revoked for good — activating them
// again brings neither back. Activation calls it too, for a session that began while the member was
// being deactivated or was left by a deactivation before sessions ended with it. The caller forgets the
// remembered principals (Directory.forget) once committed.
func (d *Directory) endSessions(ctx context.Context, q store.Querier, workspace, member string, at time.Time) error {
	if _, err := q.Exec(ctx, d.d.Bind("UPDATE console_sessions SET ended_at = ? WHERE workspace_id = ? AND member_id = ? AND ended_at IS NULL", at, workspace, member)); err != nil {
		return fmt.Errorf("end the member's console sessions: %w", err)
	}
	return nil
}

// SignOut ends the session of secret. Ending an ended or unknown session is not an error.
func (d *Directory) SignOut(ctx context.Context, secret string) error {
	defer d.forget() // every server's remembered sessions
	if _, err := d.st.Exec(ctx, d.d.Bind("UPDATE console_sessions SET ended_at = ? WHERE token_hash = ? AND ended_at IS NULL", d.ts(), hashSecret(secret))); err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	return nil
}
