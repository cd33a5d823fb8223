// Package auth keeps API keys, console sessions and key usage, and turns a bearer key or a console
// session into the principal a request acts as, reading its member, workspace, plan, limits and role
// (built-in or the workspace's) and resolving them in one definitions version (Directory.For). A key is
// "wsk_" followed by 64 lowercase hex characters; only its SHA-256 is stored. Workspaces, members, roles
// and limit overrides are written by runtime/members, which tells the directory of each change (Forget,
// EndAccess); notifications and key expiry reminders are runtime/notices'; data models are
// runtime/customfields'.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/spec"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/notices"
	"github.com/workspace-records/records/runtime/store"
)

// KeyPrefix starts every API key.
const KeyPrefix = "wsk"

// AccessAdmin is the access level of an admin key: it administers its workspace (/v1/admin/…) and
// reads or writes no records; its owner's role must hold PermManage. Data keys are "read" or "write".
const AccessAdmin = "admin"

// The permissions of roles.yaml that the API itself checks.
const (
	PermAccess = "api.access" // create and use one's own keys
	PermManage = "api.manage" // administer the workspace: members' keys, usage, the admin API
)

// MaxKeyLifetime is the longest expiry a key may have.
const MaxKeyLifetime = 365 * 24 * time.Hour

var (
	keyRE  = regexp.MustCompile(`^wsk_[0-9a-f]{64}$`)
	keyRE2 = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
)

// Errors of the admin operations.
var (
	ErrNotFound = errors.New("not found")
	ErrInvalid  = errors.New("invalid argument")
	// ErrNotPermitted refuses an operation the member's role does not allow (a key for an owner
	// without api.access).
	ErrNotPermitted = errors.New("not permitted")
)

// Workspace is a tenant.
type Workspace struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Plan string `json:"plan"`
}

// Member is a person in a workspace.
type Member struct {
	ID         string `json:"id"`
	Department string `json:"department_id,omitempty"`
	Email      string `json:"email"`
	Role       string `json:"role"`
	Active     bool   `json:"active"`
}

// Key is an API key, without its secret.
type Key struct {
	ID        string     `json:"id"`
	Workspace string     `json:"workspace_id"`
	Member    string     `json:"member_id"`
	Hint      string     `json:"hint"`
	Access    string     `json:"access"`
	Resources []string   `json:"resources"` // nil: every resource
	AllowIPs  []string   `json:"allow_ips"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	// LastUsedAt and LastUsedIP are when and from which client address the key was last used, written
	// by FlushUsage: as late as the flush interval (see Touch).
	LastUsedAt *time.Time `json:"last_used_at"`
	LastUsedIP *string    `json:"last_used_ip"`
	// AssuredAt is the sign-in the key delegates (docs/issue-24.md): the console session's sign-in for a
	// key made there, nil for a key made by recordsctl (whose creation is its assurance). A new MFA factor
	// verified after it makes the key stale (key_assurance_stale).
	AssuredAt *time.Time `json:"assured_at,omitempty"`
	// Name is the owner's label for the key ("" when none).
	Name string `json:"name,omitempty"`
	// RolledFrom and RolledTo link a rolled key and its replacement (Roll).
	RolledFrom *string `json:"rolled_from,omitempty"`
	RolledTo   *string `json:"rolled_to,omitempty"`
}

// Assurance returns the sign-in time the key delegates: AssuredAt, or its creation.
func (k *Key) Assurance() time.Time {
	if k.AssuredAt != nil {
		return *k.AssuredAt
	}
	return k.CreatedAt
}

// Principal is who a request acts as.
type Principal struct {
	Workspace Workspace
	Member    Member
	Key       Key
	// Session is the console session the request came with; nil for a key. A session's principal has a
	// Key standing for it (ID the session's id, Access AccessSession) so that limits and logs treat it
	// as they treat a key.
	Session *Session
	Role    *model.Role
	Plan    *model.Plan
	// Limits are the plan's limits with the workspace's overrides applied; nil fields are uncapped.
	Limits spec.Limits
}

// Directory stores workspaces, members and keys. It resolves plans, roles and resources in a
// definitions version, its catalog: For gives the same directory over one version (each generation of a
// server has one; docs/architecture.md), Following over whichever version a source names at each call
// (a server's backend: the version served), sharing everything else — the store, the remembered keys,
// the usage not yet written.
type Directory struct {
	*directory
	cat func() *model.Catalog
}

// directory is what every view of a Directory (For) shares.
type directory struct {
	st  store.Store
	d   sqlgen.Dialect
	now func() time.Time

	mu       sync.Mutex
	cache    map[string]cachedPrincipal // by secret hash
	epoch    uint64                     // bumped by every change seen
	watching atomic.Bool                // listening for other processes' changes: the cache may be used
	// counted: the database counts changes (SQLite, migrate.AuthChangesTable), read on every request;
	// seen is the highest count read.
	counted bool
	seen    int64

	useMu sync.Mutex
	uses  map[string]keyUse    // by key id: uses not yet written (Touch, FlushUsage)
	daily map[dayKey]*dayCount // requests and refusals per key and day not yet written (Count, FlushUsage)
}

// notifier is a store that can tell other processes sharing the database about changes (PostgreSQL).
type notifier interface {
	Notify(ctx context.Context, channel string) error
	Listen(ctx context.Context, channel string, ready func(bool), fn func())
}

// changesChannel is the notification channel of changes to keys, members, roles, plans and limits.
const changesChannel = "records_auth"

// PrincipalMaxAge is how long a server may use what it read about a key (its member, role, workspace,
// plan and limits) without reading it again. The cache is only used while the server learns of
// changes other processes make, so revocations and changes of role, plan or limits apply on the next
// request everywhere:
//
//   - PostgreSQL: while it listens for them (Watch). Every change made through a Directory, in any
//     process, is announced and empties the cache of every server at once; the age bound covers changes
//     made to the tables by hand.
//   - SQLite: always. Triggers count every change to workspaces, members, roles and keys in the
//     database (migrate.AuthChangesTable), by hand included; each request reads the count (one row, a
//     prepared statement) and a remembered key serves only while the count is what it was when the key
//     was read.
const PrincipalMaxAge = time.Second

// maxCachedPrincipals bounds the cache; past it, stale entries are swept on insert.
const maxCachedPrincipals = 10000

type cachedPrincipal struct {
	p      *Principal
	cat    *model.Catalog // the version p's role and plan were resolved in: another view reads the key again
	loaded time.Time
	n      int64 // the change count read before p (SQLite; 0 on PostgreSQL)
}

// forget drops every cached principal here and, through the database, in every other server: each
// change to keys, members, roles, plans or limits calls it once committed.
func (d *Directory) forget() {
	d.forgetLocal()
	if n, ok := d.st.(notifier); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// A lost announcement only delays the change elsewhere by PrincipalMaxAge at most.
		_ = n.Notify(ctx, changesChannel)
	}
}

// Forget drops every remembered principal here and in every other server: a writer of keys, members,
// roles, plans or limits outside this package (runtime/members) calls it once its change is committed.
func (d *Directory) Forget() { d.forget() }

// EndAccess ends member's console sessions (of workspace) still going, at, in q's transaction, and with
// revokeKeys revokes every key the member holds: a deactivation does both, for good; an activation
// ends the sessions only, so that none from before the deactivation comes back. The caller calls
// Forget once committed.
func (d *Directory) EndAccess(ctx context.Context, q store.Querier, workspace, member string, at time.Time, revokeKeys bool) error {
	if revokeKeys {
		if _, err := q.Exec(ctx, d.d.Bind("UPDATE api_keys SET revoked_at = ? WHERE workspace_id = ? AND member_id = ? AND revoked_at IS NULL", at, workspace, member)); err != nil {
			return fmt.Errorf("revoke keys of member: %w", err)
		}
	}
	return d.endSessions(ctx, q, workspace, member, at)
}

// Watching reports whether the Directory learns of other processes' changes, and so remembers keys:
// always on SQLite (the change count), while listening on PostgreSQL.
func (d *Directory) Watching() bool { return d.counted || d.watching.Load() }

func (d *Directory) forgetLocal() {
	d.mu.Lock()
	clear(d.cache)
	d.epoch++
	d.mu.Unlock()
}

// Watch listens for changes other processes make until ctx ends, and lets Authenticate remember keys
// while it does (PostgreSQL only; elsewhere every request reads its key).
func (d *Directory) Watch(ctx context.Context) {
	n, ok := d.st.(notifier)
	if !ok {
		return
	}
	n.Listen(ctx, changesChannel, func(listening bool) {
		d.forgetLocal()
		d.watching.Store(listening)
	}, d.forgetLocal)
}

// NewDirectory returns a Directory over st.
func NewDirectory(st store.Store, cat *model.Catalog, now func() time.Time) *Directory {
	if now == nil {
		now = time.Now
	}
	shared := &directory{st: st, d: st.Dialect(), now: now, cache: map[string]cachedPrincipal{}, uses: map[string]keyUse{},
		counted: st.Dialect().Kind() == sqlgen.SQLite}
	return shared.For(cat)
}

// For returns the directory resolving plans, roles and resources in cat: d's store, remembered keys and
// unwritten usage, another definitions version. A key remembered under one version is read again
// under another.
func (d *directory) For(cat *model.Catalog) *Directory {
	return &Directory{directory: d, cat: func() *model.Catalog { return cat }}
}

// Following returns the directory resolving plans, roles and resources in the version source returns
// at each call, sharing the rest with d.
func (d *directory) Following(source func() *model.Catalog) *Directory {
	return &Directory{directory: d, cat: source}
}

func (d *Directory) catalog() *model.Catalog { return d.cat() }

func (d *Directory) ts() time.Time { return d.now().UTC().Truncate(time.Microsecond) }

// KeyOptions are the restrictions of a new key.
type KeyOptions struct {
	Access    string   // read, write or admin (AccessAdmin)
	Resources []string // nil or empty: every resource
	AllowIPs  []string // CIDRs or addresses; empty: any
	ExpiresIn time.Duration
	// Name is the owner's label for the key (at most 100 characters; "" for none).
	Name string
	// AssuredAt is the sign-in the key delegates (a console session's); nil: its creation.
	AssuredAt *time.Time
	// Within, when set, runs in the transaction that stores the key (the audit entry of an API write).
	Within     func(ctx context.Context, q store.Querier, k *Key) error
	rolledFrom string
}

// CreateKey creates a key for member and returns it with its secret, which is never shown again.
func (d *Directory) CreateKey(ctx context.Context, member string, o KeyOptions) (*Key, string, error) {
	if o.Access != "read" && o.Access != "write" && o.Access != AccessAdmin {
		return nil, "", fmt.Errorf("%w: access must be read, write or admin", ErrInvalid)
	}
	if o.Access == AccessAdmin && len(o.Resources) > 0 {
		return nil, "", fmt.Errorf("%w: an admin key reads no records, so it takes no resource allowlist", ErrInvalid)
	}
	if o.ExpiresIn <= 0 || o.ExpiresIn > MaxKeyLifetime {
		return nil, "", fmt.Errorf("%w: expiry must be after now and at most one year away", ErrInvalid)
	}
	for _, r := range o.Resources {
		if _, ok := d.catalog().Resource(r); !ok {
			return nil, "", fmt.Errorf("%w: %s", ErrInvalid, suggest.Unknown("resource", r, d.catalog().ResourceNames(false)))
		}
	}
	for _, ip := range o.AllowIPs {
		if _, err := ParseCIDR(ip); err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	if len(o.Name) > 100 {
		return nil, "", fmt.Errorf("%w: a key's name is at most 100 characters", ErrInvalid)
	}
	member = strings.ToLower(member)
	var workspace, roleName string
	var active, roleDef any
	found, err := store.QueryOne(ctx, d.st, d.d.Bind(`SELECT m.workspace_id, m.active, m.role, wr.definition FROM members m
LEFT JOIN workspace_roles wr ON wr.workspace_id = m.workspace_id AND wr.name = m.role WHERE m.id = ?`, member), func(row []any) error {
		workspace, active, roleName, roleDef = store.UUIDText(row[0]), row[1], store.Text(row[2]), row[3]
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("create key: %w", err)
	}
	if !found {
		return nil, "", fmt.Errorf("member %s: %w", member, ErrNotFound)
	}
	if !store.Bool(active) {
		return nil, "", fmt.Errorf("%w: member %s is inactive", ErrInvalid, member)
	}
	// A key acts as its owner: an owner without api.access could create keys that every request refuses.
	role, err := ResolveRole(d.catalog(), roleName, roleDef)
	if err != nil {
		return nil, "", fmt.Errorf("create key: %w", err)
	}
	if role == nil || !HasPermission(role, "api.access") {
		return nil, "", fmt.Errorf("%w: member %s has role %s, which lacks the api.access permission; give the member a role with api.access first", ErrNotPermitted, member, roleName)
	}
	if o.Access == AccessAdmin && !HasPermission(role, PermManage) {
		return nil, "", fmt.Errorf("%w: member %s has role %s, which lacks the api.manage permission an admin key needs", ErrNotPermitted, member, roleName)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", fmt.Errorf("create key: %w", err)
	}
	body := hex.EncodeToString(raw)
	secret := KeyPrefix + "_" + body
	now := d.ts()
	k := &Key{ID: store.NewID(), Workspace: workspace, Member: member, Hint: KeyPrefix + "_…" + body[60:], Access: o.Access,
		CreatedAt: now, ExpiresAt: now.Add(o.ExpiresIn).Truncate(time.Microsecond)}
	if len(o.Resources) > 0 {
		k.Resources = o.Resources
	}
	if len(o.AllowIPs) > 0 {
		k.AllowIPs = o.AllowIPs
	}
	k.Name, k.AssuredAt = o.Name, o.AssuredAt
	var assured, from any
	if o.AssuredAt != nil {
		assured = o.AssuredAt.UTC().Truncate(time.Microsecond)
	}
	if o.rolledFrom != "" {
		k.RolledFrom, from = &o.rolledFrom, o.rolledFrom
	}
	err = d.st.Tx(ctx, func(q store.Querier) error {
		if _, err := q.Exec(ctx, d.d.Bind("INSERT INTO api_keys (workspace_id, id, member_id, secret_hash, hint, access, resources, allow_ips, created_at, expires_at, assured_at, name, rolled_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			workspace, k.ID, member, hashSecret(secret), k.Hint, k.Access, jsonOrNil(k.Resources), jsonOrNil(k.AllowIPs), now, k.ExpiresAt, assured, nullString(k.Name), from)); err != nil {
			return err
		}
		if err := notices.ScheduleReminders(ctx, q, d.d, notices.NewKey{Workspace: k.Workspace, ID: k.ID, Member: k.Member, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt}); err != nil {
			return err
		}
		if o.Within != nil {
			return o.Within(ctx, q, k)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("create key: %w", err)
	}
	return k, secret, nil
}

// RevokeKey revokes key id. Revoking a revoked key is not an error.
func (d *Directory) RevokeKey(ctx context.Context, id string) error {
	defer d.forget()
	id = strings.ToLower(id)
	n, err := d.st.Exec(ctx, d.d.Bind("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", d.ts(), id))
	if err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("key %s: %w", id, ErrNotFound)
	}
	return nil
}

// ListKeys returns the keys of a workspace, newest first.
func (d *Directory) ListKeys(ctx context.Context, workspace string) ([]Key, error) {
	return d.listKeys(ctx, workspace, "")
}

// listKeys returns the keys of workspace, of member only unless member is "", newest first.
func (d *Directory) listKeys(ctx context.Context, workspace, member string) ([]Key, error) {
	sql, args := "SELECT "+keyColumns+" FROM api_keys WHERE workspace_id = ?", []any{strings.ToLower(workspace)}
	if member != "" {
		sql += " AND member_id = ?"
		args = append(args, strings.ToLower(member))
	}
	keys := []Key{}
	err := d.st.Query(ctx, d.d.Bind(sql+" ORDER BY created_at DESC, id DESC", args...), func(row []any) error {
		k, err := scanKey(row)
		if err != nil {
			return err
		}
		keys = append(keys, k)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return keys, nil
}

const keyColumns = "id, workspace_id, member_id, hint, access, resources, allow_ips, created_at, expires_at, revoked_at, last_used_at, last_used_ip, assured_at, name, rolled_from, rolled_to"

// keyColumnCount is the number of columns keyColumns names, which scanKey reads.
const keyColumnCount = 16

func scanKey(row []any) (Key, error) {
	k := Key{ID: store.UUIDText(row[0]), Workspace: store.UUIDText(row[1]), Member: store.UUIDText(row[2]), Hint: store.Text(row[3]), Access: store.Text(row[4])}
	if err := decodeList(row[5], &k.Resources); err != nil {
		return k, err
	}
	if err := decodeList(row[6], &k.AllowIPs); err != nil {
		return k, err
	}
	var err error
	if k.CreatedAt, err = store.Time(row[7]); err != nil {
		return k, err
	}
	if k.ExpiresAt, err = store.Time(row[8]); err != nil {
		return k, err
	}
	for i, dst := range []**time.Time{&k.RevokedAt, &k.LastUsedAt} {
		if row[9+i] != nil {
			t, err := store.Time(row[9+i])
			if err != nil {
				return k, err
			}
			*dst = &t
		}
	}
	if row[11] != nil {
		ip := store.Text(row[11])
		k.LastUsedIP = &ip
	}
	if row[12] != nil {
		t, err := store.Time(row[12])
		if err != nil {
			return k, err
		}
		k.AssuredAt = &t
	}
	k.Name = store.Text(row[13])
	for i, dst := range []**string{&k.RolledFrom, &k.RolledTo} {
		if row[14+i] != nil {
			id := store.UUIDText(row[14+i])
			*dst = &id
		}
	}
	return k, nil
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Authenticate resolves a bearer secret to its principal, checking the key, its owner and the plan.
//
// While the Directory learns of changes (Watching), a key that authenticated is remembered for
// PrincipalMaxAge, so that a request costs no query here on PostgreSQL and one read of the change
// count on SQLite; its expiry is checked on every use. Unknown, revoked or refused keys are never
// remembered.
func (d *Directory) Authenticate(ctx context.Context, secret string) (*Principal, error) {
	if !keyRE.MatchString(secret) {
		return nil, &apierr.Error{Code: apierr.InvalidAPIKey, Message: "The API key is malformed: expected wsk_ followed by 64 lowercase hex characters."}
	}
	hash := hashSecret(secret)
	var n int64
	switch {
	case d.counted:
		// Read before the key, so that a change committing in between leaves the key remembered
		// under the older count: the next request reads the newer one and reads the key again.
		var err error
		if n, err = d.changes(ctx); err != nil {
			return d.authenticate(ctx, d.catalog(), hash) // fails the same way when the database is unavailable
		}
	case !d.watching.Load():
		return d.authenticate(ctx, d.catalog(), hash)
	}
	d.mu.Lock()
	if n > d.seen { // every remembered key was read under an older count
		clear(d.cache)
		d.seen = n
		d.epoch++
	}
	c, ok := d.cache[hash]
	epoch := d.epoch
	d.mu.Unlock()
	cat := d.catalog()
	if ok && c.n == n && c.cat == cat && time.Since(c.loaded) < PrincipalMaxAge && d.now().Before(c.p.Key.ExpiresAt) {
		return c.p, nil
	}
	p, err := d.authenticate(ctx, cat, hash)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.epoch == epoch { // no change raced with the read
		if len(d.cache) >= maxCachedPrincipals {
			for h, c := range d.cache {
				if time.Since(c.loaded) >= PrincipalMaxAge {
					delete(d.cache, h)
				}
			}
		}
		if len(d.cache) < maxCachedPrincipals {
			d.cache[hash] = cachedPrincipal{p: p, cat: cat, loaded: time.Now(), n: n}
		}
	}
	d.mu.Unlock()
	return p, nil
}

// changesSQL reads the change count of migrate.AuthChangesTable (SQLite).
var changesSQL = sqlgen.Stmt{SQL: "SELECT n FROM auth_changes WHERE id = 1"}

// changes reads how many changes to workspaces, members, roles and keys the database has seen.
func (d *Directory) changes(ctx context.Context) (int64, error) {
	var n int64
	// One row by its key: nothing to interrupt, so the query goes without the request's cancellation,
	// which would cost the driver and database/sql a goroutine each to watch.
	found, err := store.QueryOne(context.WithoutCancel(ctx), d.st, changesSQL, func(row []any) error {
		v, ok := row[0].(int64)
		if !ok {
			return fmt.Errorf("change count: unexpected %T", row[0])
		}
		n = v
		return nil
	})
	if err == nil && !found {
		err = errors.New("change count: no row")
	}
	if err != nil {
		return 0, fmt.Errorf("read the change count: %w", err)
	}
	return n, nil
}

// KeyPrincipal is Authenticate for the key id of workspace instead of a secret, uncached: what a bulk
// job acts as when it runs outside the request that made it (runtime/jobs). A key revoked or expired
// since, an owner deactivated or without api.access, or a plan without API access are refused as
// Authenticate refuses them.
func (d *Directory) KeyPrincipal(ctx context.Context, workspace, id string) (*Principal, error) {
	if !model.IsUUID(id) || !model.IsUUID(workspace) {
		return nil, &apierr.Error{Code: apierr.InvalidAPIKey, Message: "The API key is unknown or has been revoked."}
	}
	return d.lookup(ctx, d.catalog(), "k.id = ? AND k.workspace_id = ?", []any{strings.ToLower(id), strings.ToLower(workspace)}, "")
}

// authenticate reads and checks the key with secret hash hash, resolving its role and plan in cat.
func (d *Directory) authenticate(ctx context.Context, cat *model.Catalog, hash string) (*Principal, error) {
	return d.lookup(ctx, cat, "k.secret_hash = ?", []any{hash}, hash)
}

// lookup reads and checks the key where selects (args its values), resolving its role and plan in cat;
// hash, when given, must be the key's secret hash.
func (d *Directory) lookup(ctx context.Context, cat *model.Catalog, where string, args []any, hash string) (*Principal, error) {
	var p Principal
	var storedHash string
	var active any
	var mfaAt *time.Time
	var roleDef any
	var overrides any
	found, err := store.QueryOne(ctx, d.st, d.d.Bind(`SELECT k.id, k.workspace_id, k.member_id, k.hint, k.access, k.resources, k.allow_ips, k.created_at, k.expires_at, k.revoked_at, k.last_used_at, k.last_used_ip,
  k.assured_at, k.name, k.rolled_from, k.rolled_to, k.secret_hash, m.email, m.role, m.active, w.name, w.plan, m.mfa_verified_at, m.department_id, wr.definition, w.limits
FROM api_keys k JOIN members m ON m.id = k.member_id JOIN workspaces w ON w.id = k.workspace_id
LEFT JOIN workspace_roles wr ON wr.workspace_id = k.workspace_id AND wr.name = m.role
WHERE `+where, args...), func(row []any) error {
		var err error
		if p.Key, err = scanKey(row[:keyColumnCount]); err != nil {
			return err
		}
		rest := row[keyColumnCount:] // past the key's columns
		storedHash = store.Text(rest[0])
		p.Member = Member{ID: p.Key.Member, Email: store.Text(rest[1]), Role: store.Text(rest[2])}
		active = rest[3]
		p.Workspace = Workspace{ID: p.Key.Workspace, Name: store.Text(rest[4]), Plan: store.Text(rest[5])}
		p.Member.Department = store.UUIDText(rest[7])
		roleDef = rest[8]
		overrides = rest[9]
		if rest[6] != nil {
			t, err := store.Time(rest[6])
			if err != nil {
				return err
			}
			mfaAt = &t
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if !found || (hash != "" && subtle.ConstantTimeCompare([]byte(storedHash), []byte(hash)) != 1) || p.Key.RevokedAt != nil {
		return nil, &apierr.Error{Code: apierr.InvalidAPIKey, Message: "The API key is unknown or has been revoked."}
	}
	if !d.now().Before(p.Key.ExpiresAt) {
		return nil, &apierr.Error{Code: apierr.ExpiredAPIKey, Message: "The API key expired at " + p.Key.ExpiresAt.Format(time.RFC3339) + "; create a replacement key."}
	}
	p.Member.Active = store.Bool(active)
	if !p.Member.Active {
		return nil, &apierr.Error{Code: apierr.InvalidAPIKey, Message: "The API key is unknown or has been revoked."}
	}
	if mfaAt != nil && mfaAt.After(p.Key.Assurance()) {
		return nil, &apierr.Error{Code: apierr.KeyAssuranceStale, Message: "A new MFA factor was verified after this key was created; sign in with MFA and create a replacement key."}
	}
	plan, ok := cat.Plan(p.Workspace.Plan)
	if !ok || !plan.APIAccess {
		return nil, &apierr.Error{Code: apierr.PlanUpgradeRequired, Message: "API access is available on the Pro, Growth, Scale and Enterprise plans."}
	}
	if err := p.setPlan(plan, overrides); err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	role, err := ResolveRole(cat, p.Member.Role, roleDef)
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if role == nil || !HasPermission(role, "api.access") {
		return nil, &apierr.Error{Code: apierr.PermissionDenied, Message: "The key's owner no longer has the api.access permission."}
	}
	p.Role = role
	return &p, nil
}

// setPlan gives p the workspace's plan and its limits, with the workspace's overrides (a JSON column).
func (p *Principal) setPlan(plan *model.Plan, overrides any) error {
	p.Plan = plan
	p.Limits = plan.Limits
	if overrides == nil {
		return nil
	}
	var o Limits
	if err := json.Unmarshal(store.JSON(overrides), &o); err != nil {
		return fmt.Errorf("workspace limits: %w", err)
	}
	for _, f := range [][2]**int64{{&p.Limits.KeyPerMinute, &o.KeyPerMinute}, {&p.Limits.KeyPerHour, &o.KeyPerHour}, {&p.Limits.WorkspacePerMinute, &o.WorkspacePerMinute}, {&p.Limits.MonthlyQuota, &o.MonthlyQuota}} {
		if *f[1] != nil {
			*f[0] = *f[1]
		}
	}
	return nil
}

// HasPermission reports whether role r grants perm.
func HasPermission(r *model.Role, perm string) bool {
	for _, p := range r.Permissions {
		if p == perm {
			return true
		}
	}
	return false
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func jsonOrNil(v []string) any {
	if v == nil {
		return nil
	}
	data, _ := json.Marshal(v)
	return string(data)
}

func decodeList(v any, dst *[]string) error {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return json.Unmarshal([]byte(x), dst)
	case []byte:
		return json.Unmarshal(x, dst)
	case []any:
		for _, it := range x {
			*dst = append(*dst, fmt.Sprint(it))
		}
		return nil
	}
	return fmt.Errorf("unexpected list value %T", v)
}
