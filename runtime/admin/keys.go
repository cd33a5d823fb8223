package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/store"
)

// KeyStates are the states a key listing filters on (auth.KeyState).
var KeyStates = []string{"active", "revoked", "expired"}

// KeyMember names a key's owner.
type KeyMember struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

// KeyView is a member's key as the admin API shows it: never its secret nor the secret's hash.
type KeyView struct {
	ID        string     `json:"id"`
	Member    KeyMember  `json:"member"`
	Hint      string     `json:"hint"`
	Access    string     `json:"access"`
	Resources []string   `json:"resources"` // null: every resource
	AllowIPs  []string   `json:"allow_ips"` // empty: any address
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	// LastUsedAt and LastUsedIP include this server's uses not written yet (auth.Directory.LastUse).
	LastUsedAt *time.Time `json:"last_used_at"`
	LastUsedIP *string    `json:"last_used_ip"`
	State      string     `json:"state"`
	// Name, AssuredAt, RolledFrom and RolledTo: as auth.Key's (absent when unset).
	Name       string     `json:"name,omitempty"`
	AssuredAt  *time.Time `json:"assured_at,omitempty"`
	RolledFrom *string    `json:"rolled_from,omitempty"`
	RolledTo   *string    `json:"rolled_to,omitempty"`
}

// KeyFilter selects keys of a listing; "" selects all.
type KeyFilter struct {
	Member string
	State  string
}

// errNoKey is the answer for a key id that is not the workspace's (or no key's).
var errNoKey = apierr.New(apierr.NotFound, "No such key in this workspace.")

// Keys lists every member's keys of the actor's workspace, newest first.
func (s *Service) Keys(ctx context.Context, a Actor, f KeyFilter) ([]KeyView, error) {
	var errs field.ErrorList
	if f.Member != "" && !model.IsUUID(f.Member) {
		errs = append(errs, field.New(field.CodeFormat, field.NewPath("member"), "must be a member's id (a UUID)"))
	}
	if f.State != "" && !slices.Contains(KeyStates, f.State) {
		errs = append(errs, field.New(field.CodeOption, field.NewPath("state"), "must be one of "+strings.Join(KeyStates, ", ")))
	}
	if errs != nil {
		return nil, apierr.Invalid("", errs)
	}
	ws := a.Principal.Workspace.ID
	keys, err := s.cfg.Directory.ListKeys(ctx, ws)
	if err != nil {
		return nil, err
	}
	emails, err := s.memberEmails(ctx, ws)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := []KeyView{}
	for i := range keys {
		k := &keys[i]
		v := s.keyView(k, emails, now)
		if (f.Member == "" || strings.EqualFold(k.Member, f.Member)) && (f.State == "" || v.State == f.State) {
			out = append(out, v)
		}
	}
	return out, nil
}

// Key returns key id of the actor's workspace.
func (s *Service) Key(ctx context.Context, a Actor, id string) (KeyView, error) {
	ws := a.Principal.Workspace.ID
	k, err := s.cfg.Directory.WorkspaceKey(ctx, ws, id)
	if errors.Is(err, auth.ErrNotFound) {
		return KeyView{}, errNoKey
	}
	if err != nil {
		return KeyView{}, err
	}
	emails, err := s.memberEmails(ctx, ws)
	if err != nil {
		return KeyView{}, err
	}
	return s.keyView(&k, emails, time.Now()), nil
}

// RevokeKey revokes key id of the actor's workspace, writing its audit entry in the revoking
// transaction. Every server refuses the key from its next request (auth.Directory's change
// announcements). Revoking a revoked key keeps its first revocation time.
func (s *Service) RevokeKey(ctx context.Context, a Actor, id string) (KeyView, error) {
	ws := a.Principal.Workspace.ID
	k, err := s.cfg.Directory.RevokeWorkspaceKey(ctx, ws, id, func(ctx context.Context, q store.Querier, before, after auth.Key) error {
		return s.record(ctx, q, a, audit.AdminAPIKeys, after.ID, audit.ActionRevoke,
			map[string]any{"revoked_at": after.RevokedAt}, map[string]any{"revoked_at": before.RevokedAt})
	})
	if errors.Is(err, auth.ErrNotFound) {
		return KeyView{}, errNoKey
	}
	if err != nil {
		return KeyView{}, err
	}
	emails, err := s.memberEmails(ctx, ws)
	if err != nil {
		return KeyView{}, err
	}
	return s.keyView(&k, emails, time.Now()), nil
}

func (s *Service) keyView(k *auth.Key, emails map[string]string, now time.Time) KeyView {
	v := KeyView{ID: k.ID, Member: KeyMember{ID: k.Member, Email: emails[k.Member]}, Hint: k.Hint, Access: k.Access, Resources: k.Resources,
		AllowIPs: k.AllowIPs, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt, State: auth.KeyState(k, now),
		Name: k.Name, AssuredAt: k.AssuredAt, RolledFrom: k.RolledFrom, RolledTo: k.RolledTo}
	if v.AllowIPs == nil {
		v.AllowIPs = []string{}
	}
	v.LastUsedAt, v.LastUsedIP = s.cfg.Directory.LastUse(k)
	return v
}

// memberEmails returns the emails of workspace's members by id.
func (s *Service) memberEmails(ctx context.Context, workspace string) (map[string]string, error) {
	members, err := s.cfg.Members.ListMembers(ctx, workspace)
	if err != nil {
		return nil, fmt.Errorf("members of the workspace: %w", err)
	}
	out := make(map[string]string, len(members))
	for _, m := range members {
		out[m.ID] = m.Email
	}
	return out, nil
}
