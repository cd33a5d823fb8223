package auth

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/store"
)

// WorkspaceKey returns key id of workspace; a key of another workspace, or no key, is ErrNotFound.
func (d *Directory) WorkspaceKey(ctx context.Context, workspace, id string) (Key, error) {
	return d.workspaceKey(ctx, d.st, strings.ToLower(workspace), id)
}

func (d *Directory) workspaceKey(ctx context.Context, q store.Querier, workspace, id string) (Key, error) {
	var k Key
	if !model.IsUUID(id) {
		return k, fmt.Errorf("key %s: %w", id, ErrNotFound)
	}
	var scanErr error
	found, err := store.QueryOne(ctx, q, d.d.Bind("SELECT "+keyColumns+" FROM api_keys WHERE workspace_id = ? AND id = ?", workspace, strings.ToLower(id)), func(row []any) error {
		k, scanErr = scanKey(row)
		return scanErr
	})
	if err != nil {
		return k, fmt.Errorf("read key: %w", err)
	}
	if !found {
		return k, fmt.Errorf("key %s: %w", id, ErrNotFound)
	}
	return k, nil
}

// RevokeWorkspaceKey revokes key id of workspace (a key of another workspace is ErrNotFound, whatever
// its id) and returns it as revoked. Inside the revoking transaction it runs then, when set, with the
// key before and after: an error from then rolls the revocation back (the admin API writes its audit
// entry there). Revoking a revoked key keeps its first revocation time. Every server's cache forgets
// the key once committed, as with RevokeKey.
func (d *Directory) RevokeWorkspaceKey(ctx context.Context, workspace, id string, then func(ctx context.Context, q store.Querier, before, after Key) error) (Key, error) {
	defer d.forget()
	workspace = strings.ToLower(workspace)
	ctx = store.WithWorkspace(ctx, workspace)
	now := d.ts()
	var after Key
	err := d.st.Tx(ctx, func(q store.Querier) error {
		before, err := d.workspaceKey(ctx, q, workspace, id)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, d.d.Bind("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE workspace_id = ? AND id = ?", now, workspace, before.ID)); err != nil {
			return fmt.Errorf("revoke key: %w", err)
		}
		after = before
		if after.RevokedAt == nil {
			t := now
			after.RevokedAt = &t
		}
		if then != nil {
			return then(ctx, q, before, after)
		}
		return nil
	})
	if err != nil {
		return Key{}, err
	}
	return after, nil
}

// KeyState is the state of k at now: "revoked", "expired" or "active".
func KeyState(k *Key, now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case !now.Before(k.ExpiresAt):
		return "expired"
	}
	return "active"
}
