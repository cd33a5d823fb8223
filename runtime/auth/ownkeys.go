package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/runtime/store"
)

// MaxRollOverlap is the longest a rolled key stays valid beside its replacement; DefaultRollOverlap is
// the overlap when none is chosen.
const (
	MaxRollOverlap     = 7 * 24 * time.Hour
	DefaultRollOverlap = 24 * time.Hour
	// rollLifetime is the replacement's lifetime when the rolled key would expire within the overlap.
	rollLifetime = 90 * 24 * time.Hour
)

// KeyOf returns key id of workspace, owned by member ("" for any member of the workspace); ErrNotFound
// when there is none: a key of another workspace or member is not told apart from no key.
func (d *Directory) KeyOf(ctx context.Context, workspace, member, id string) (*Key, error) {
	k, err := d.workspaceKey(ctx, d.st, strings.ToLower(workspace), id)
	if err != nil {
		return nil, err
	}
	if member != "" && !strings.EqualFold(k.Member, member) {
		return nil, fmt.Errorf("key %s: %w", id, ErrNotFound)
	}
	return &k, nil
}

// MemberKeys returns member's keys in workspace, newest first.
func (d *Directory) MemberKeys(ctx context.Context, workspace, member string) ([]Key, error) {
	return d.listKeys(ctx, workspace, member)
}

// ErrKeyInactive refuses to roll a key that is revoked or expired.
var ErrKeyInactive = errors.New("key is revoked, expired or already rolled")

// RollKey replaces key id of member in workspace with a new key of the same access, restrictions and
// name: the new key expires when the old one did (or rollLifetime from now, when the old one expires
// within the overlap), and the old one stays valid for overlap (0 … MaxRollOverlap) then expires, as
// Stripe rolls keys. The new key delegates assuredAt. within (when set) runs in the transaction with
// the old key (as updated) and the new one. It returns the new key and its secret, shown once.
func (d *Directory) RollKey(ctx context.Context, workspace, member, id string, overlap time.Duration, assuredAt time.Time,
	within func(ctx context.Context, q store.Querier, old, replacement *Key) error) (*Key, string, error) {
	if overlap < 0 || overlap > MaxRollOverlap {
		return nil, "", fmt.Errorf("%w: the overlap is 0 to %s", ErrInvalid, MaxRollOverlap)
	}
	defer d.forget()
	old, err := d.KeyOf(ctx, workspace, member, id)
	if err != nil {
		return nil, "", err
	}
	now := d.ts()
	if old.RevokedAt != nil || !now.Before(old.ExpiresAt) {
		return nil, "", fmt.Errorf("key %s: %w", old.ID, ErrKeyInactive)
	}
	cut := now.Add(overlap)
	life := old.ExpiresAt.Sub(now)
	if old.ExpiresAt.Before(cut) || life <= 0 {
		life = rollLifetime
	}
	if life > MaxKeyLifetime {
		life = MaxKeyLifetime
	}
	oldExpiry := old.ExpiresAt
	if cut.Before(oldExpiry) {
		oldExpiry = cut
	}
	o := KeyOptions{Access: old.Access, Resources: old.Resources, AllowIPs: old.AllowIPs, ExpiresIn: life, Name: old.Name, AssuredAt: &assuredAt, rolledFrom: old.ID}
	o.Within = func(ctx context.Context, q store.Querier, k *Key) error {
		n, err := q.Exec(ctx, d.d.Bind("UPDATE api_keys SET expires_at = ?, rolled_to = ? WHERE workspace_id = ? AND id = ? AND revoked_at IS NULL AND rolled_to IS NULL",
			oldExpiry, k.ID, old.Workspace, old.ID))
		if err != nil {
			return fmt.Errorf("roll key: %w", err)
		}
		if n == 0 {
			// Revoked or rolled by another request since it was read: this roll makes nothing.
			return fmt.Errorf("key %s: %w", old.ID, ErrKeyInactive)
		}
		old.ExpiresAt, old.RolledTo = oldExpiry, &k.ID
		if within != nil {
			return within(ctx, q, old, k)
		}
		return nil
	}
	return d.CreateKey(ctx, old.Member, o)
}
