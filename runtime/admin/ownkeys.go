package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/store"
)

// KeyInput is the body of POST /v1/me/keys.
type KeyInput struct {
	Access    string
	Resources []string
	AllowIPs  []string
	ExpiresIn string
	Name      string
}

// DefaultKeyLifetime is the lifetime of a key created without expires_in (as recordsctl's default).
const DefaultKeyLifetime = 90 * 24 * time.Hour

// ParseLifetime reads a Go duration or a number of days ("90d"), as recordsctl --expires-in does.
func ParseLifetime(s string) (time.Duration, bool) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 || n > 100000 {
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	v, err := time.ParseDuration(s)
	return v, err == nil
}

// ownView is key k of the caller as the API shows it (KeyView).
func (s *Service) ownView(a Actor, k *auth.Key, now time.Time) KeyView {
	return s.keyView(k, map[string]string{a.Principal.Member.ID: a.Principal.Member.Email}, now)
}

// OwnKeys lists the caller's own keys, newest first.
func (s *Service) OwnKeys(ctx context.Context, a Actor) ([]KeyView, error) {
	keys, err := s.cfg.Directory.MemberKeys(ctx, a.Principal.Workspace.ID, a.Principal.Member.ID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]KeyView, len(keys))
	for i, k := range keys {
		out[i] = s.ownView(a, &k, now)
	}
	return out, nil
}

// recentSession checks that a or creates keys from a console session signed in within
// auth.RecentSignIn: the key delegates that sign-in.
func recentSession(a Actor, now time.Time) (*auth.Session, error) {
	ses := a.Principal.Session
	if ses == nil {
		return nil, apierr.New(apierr.InsufficientScope, "Keys are created and rolled from a console session (sign in at /console); an API key cannot make keys.")
	}
	if !ses.Recent(now) {
		return nil, apierr.New(apierr.KeyAssuranceStale, fmt.Sprintf("Creating or rolling a key needs a sign-in within the last %s; this session signed in at %s. Sign in again.",
			auth.RecentSignIn, ses.SignedInAt.Format(time.RFC3339)))
	}
	return ses, nil
}

// CreateOwnKey creates a key for the caller from a recent console session and returns it with its
// secret, shown once.
func (s *Service) CreateOwnKey(ctx context.Context, a Actor, in KeyInput) (KeyView, string, error) {
	now := time.Now()
	ses, err := recentSession(a, now)
	if err != nil {
		return KeyView{}, "", err
	}
	if err := keyPermission(a, in.Access); err != nil {
		return KeyView{}, "", err
	}
	errs := s.CheckKeyInput(in)
	if errs != nil {
		return KeyView{}, "", apierr.Refused(errs)
	}
	life := DefaultKeyLifetime
	if in.ExpiresIn != "" {
		life, _ = ParseLifetime(in.ExpiresIn)
	}
	ctx = store.WithWorkspace(ctx, a.Principal.Workspace.ID)
	assured := ses.SignedInAt
	o := auth.KeyOptions{Access: in.Access, Resources: in.Resources, AllowIPs: in.AllowIPs, ExpiresIn: life, Name: strings.TrimSpace(in.Name), AssuredAt: &assured,
		Within: func(ctx context.Context, q store.Querier, k *auth.Key) error {
			return s.auditKey(ctx, q, a, k.ID, audit.ActionCreate, keyChanges(k), nil)
		}}
	k, secret, err := s.cfg.Directory.CreateKey(ctx, a.Principal.Member.ID, o)
	if err != nil {
		return KeyView{}, "", keyError(err)
	}
	return s.ownView(a, k, now), secret, nil
}

// keyPermission checks that the caller's role may own a key of access (an unknown access is left to
// CheckKeyInput).
func keyPermission(a Actor, access string) error {
	switch access {
	case "read", "write":
		if !a.Principal.HasPermission(auth.PermAccess) {
			return apierr.New(apierr.PermissionDenied, "Creating a key needs the api.access permission, which your role does not hold.")
		}
	case auth.AccessAdmin:
		if !a.Principal.HasPermission(auth.PermManage) || !a.Principal.HasPermission(auth.PermAccess) {
			return apierr.New(apierr.PermissionDenied, "An admin key needs the api.access and api.manage permissions, which your role does not both hold.")
		}
	}
	return nil
}

// CheckKeyInput returns every problem of a key's creation body.
func (s *Service) CheckKeyInput(in KeyInput) field.ErrorList {
	var errs field.ErrorList
	if in.ExpiresIn != "" {
		if life, ok := ParseLifetime(in.ExpiresIn); !ok {
			errs = append(errs, field.New(field.CodeFormat, field.NewPath("expires_in"), "must be a duration such as 720h or 90d"))
		} else if life <= 0 || life > auth.MaxKeyLifetime {
			errs = append(errs, field.New(field.CodeRange, field.NewPath("expires_in"), "must be after now and at most one year away"))
		}
	}
	switch in.Access {
	case "read", "write", auth.AccessAdmin:
	case "":
		errs = append(errs, field.New(field.CodeRequired, field.NewPath("access"), "is required: read, write or admin"))
	default:
		errs = append(errs, field.New(field.CodeOption, field.NewPath("access"), "must be read, write or admin"))
	}
	if in.Access == auth.AccessAdmin && len(in.Resources) > 0 {
		errs = append(errs, field.New(field.CodeInvalid, field.NewPath("resources"), "an admin key reads no records, so it takes no resource allowlist"))
	}
	for i, r := range in.Resources {
		if _, ok := s.cfg.Catalog.Resource(r); !ok {
			errs = append(errs, field.New(field.CodeOption, field.NewPath("resources").Index(i), fmt.Sprintf("%q is not a resource", r)))
		}
	}
	for i, ip := range in.AllowIPs {
		if _, err := auth.ParseCIDR(ip); err != nil {
			errs = append(errs, field.New(field.CodeFormat, field.NewPath("allow_ips").Index(i), err.Error()))
		}
	}
	if len(in.Name) > 100 {
		errs = append(errs, field.New(field.CodeTooLong, field.NewPath("name"), "must be at most 100 characters"))
	}
	return errs
}

// RollOwnKey rolls the caller's key id (auth.Directory.RollKey) from a recent console session.
func (s *Service) RollOwnKey(ctx context.Context, a Actor, id string, overlap time.Duration) (KeyView, KeyView, string, error) {
	now := time.Now()
	ses, err := recentSession(a, now)
	if err != nil {
		return KeyView{}, KeyView{}, "", err
	}
	var old *auth.Key
	ctx = store.WithWorkspace(ctx, a.Principal.Workspace.ID)
	k, secret, err := s.cfg.Directory.RollKey(ctx, a.Principal.Workspace.ID, a.Principal.Member.ID, id, overlap, ses.SignedInAt,
		func(ctx context.Context, q store.Querier, o, n *auth.Key) error {
			old = o
			if err := s.auditKey(ctx, q, a, o.ID, audit.ActionRoll, map[string]any{"expires_at": o.ExpiresAt, "rolled_to": n.ID}, nil); err != nil {
				return err
			}
			return s.auditKey(ctx, q, a, n.ID, audit.ActionCreate, keyChanges(n), nil)
		})
	if err != nil {
		return KeyView{}, KeyView{}, "", keyError(err)
	}
	return s.ownView(a, old, now), s.ownView(a, k, now), secret, nil
}

// RevokeOwnKey revokes the caller's key id; any of the caller's keys or sessions may. A key's owner never
// changes, so checking it before the revocation is enough.
func (s *Service) RevokeOwnKey(ctx context.Context, a Actor, id string) (KeyView, error) {
	ws := a.Principal.Workspace.ID
	if _, err := s.cfg.Directory.KeyOf(ctx, ws, a.Principal.Member.ID, id); err != nil {
		return KeyView{}, keyError(err)
	}
	k, err := s.cfg.Directory.RevokeWorkspaceKey(ctx, ws, id, func(ctx context.Context, q store.Querier, before, after auth.Key) error {
		if before.RevokedAt != nil {
			return nil // revoked already: nothing changes, nothing to audit
		}
		return s.auditKey(ctx, q, a, after.ID, audit.ActionRevoke, map[string]any{"revoked_at": after.RevokedAt}, map[string]any{"revoked_at": nil})
	})
	if err != nil {
		return KeyView{}, keyError(err)
	}
	return s.ownView(a, &k, time.Now()), nil
}

// keyChanges are the audited values of a new key: never its secret.
func keyChanges(k *auth.Key) map[string]any {
	c := map[string]any{"member_id": k.Member, "hint": k.Hint, "access": k.Access, "resources": k.Resources, "allow_ips": k.AllowIPs,
		"expires_at": k.ExpiresAt}
	if k.Name != "" {
		c["name"] = k.Name
	}
	if k.RolledFrom != nil {
		c["rolled_from"] = *k.RolledFrom
	}
	return c
}

// auditKey writes the audit entry of a key write in its transaction q (resource admin.api_keys).
func (s *Service) auditKey(ctx context.Context, q store.Querier, a Actor, id, action string, changes, previous map[string]any) error {
	return s.record(ctx, q, a, audit.AdminAPIKeys, id, action, jsonShaped(changes), previous)
}

// jsonShaped turns times into RFC 3339 text, as the audit trail stores values.
func jsonShaped(m map[string]any) map[string]any {
	for k, v := range m {
		if t, ok := v.(time.Time); ok {
			m[k] = t.UTC().Format(time.RFC3339Nano)
		}
	}
	return m
}

// keyError maps the key store's errors to the API's.
func keyError(err error) error {
	switch {
	case errors.Is(err, auth.ErrNotFound):
		return apierr.New(apierr.NotFound, "No such key among yours.")
	case errors.Is(err, auth.ErrKeyInactive):
		return apierr.New(apierr.Conflict, "The key is revoked, expired or already rolled; only an active key rolls.")
	case errors.Is(err, auth.ErrNotPermitted):
		return apierr.New(apierr.PermissionDenied, strings.TrimPrefix(err.Error(), auth.ErrNotPermitted.Error()+": "))
	case errors.Is(err, auth.ErrInvalid):
		return apierr.New(apierr.InvalidRequest, strings.TrimPrefix(err.Error(), auth.ErrInvalid.Error()+": "))
	}
	return err
}
