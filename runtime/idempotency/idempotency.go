// Package idempotency implements the Idempotency-Key rules of SPEC.md across servers sharing a database.
//
// On PostgreSQL a write whose key is presumed new (the usual case: Fresh, Start) claims the key inside
// its own transaction: its first statement takes a transaction-scoped advisory lock on the key and
// checks that no row holds it, and its last, sent with the COMMIT, inserts the key completed with the
// response — one row written, one commit. A concurrent request with the same key finds the lock taken
// (409 in use); a write that rolls back leaves nothing to release, and a server that dies mid-request
// leaves nothing behind, its transaction and lock ending with its connection.
//
// Otherwise (SQLite, or a key that is there already) a request claims its key in a short transaction
// of its own (Claim): a new key is inserted as running with a random token and a lease, or the stored
// key is replayed, refused or taken over. The write then completes the key — status, headers and body of
// the response — inside the same transaction as the record write, on the condition that the token still
// holds the claim; so a response is stored if and only if the write committed, and a server that lost
// its lease rolls its write back. A request that fails releases its key. A claim names the server
// instance that made it (Instance): a server that dies mid-request leaves a running key that a retry
// takes over as soon as that instance's heartbeat is DeadAfter old, or at the latest when the claim's
// lease expires. Keys are scoped to the API key and kept for 24 hours.
package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/jsonenc"
	"github.com/workspace-records/records/runtime/store"
)

// Retention is how long a completed key replays its response.
const Retention = 24 * time.Hour

// Lease is how long a running claim blocks other requests with the same key before it may be taken over,
// even while the server holding it is alive (claims whose server is dead are taken over sooner: DeadAfter).
const Lease = 60 * time.Second

// MaxKeyLen is the longest Idempotency-Key.
const MaxKeyLen = 255

// Errors of a claim.
var (
	ErrInvalidKey = errors.New("Idempotency-Key must be 1 to 255 printable ASCII characters")
	ErrInUse      = errors.New("a request with this Idempotency-Key is still running")
	ErrReused     = errors.New("this Idempotency-Key was used for a different request")
	ErrLost       = errors.New("the claim on this Idempotency-Key was taken over")
)

// ValidKey reports whether k is 1..255 printable ASCII characters.
func ValidKey(k string) bool {
	if len(k) == 0 || len(k) > MaxKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// Fingerprint identifies a request's meaning: method, path, query and the body as a canonical JSON value
// (member order and whitespace do not matter).
func Fingerprint(method, path, rawQuery string, body map[string]any) string {
	canon, _ := jsonenc.Marshal(body) // maps marshal with sorted keys
	sum := sha256.Sum256([]byte(method + "\n" + path + "\n" + rawQuery + "\n" + string(canon)))
	return hex.EncodeToString(sum[:])
}

// Response is a stored first response.
type Response struct {
	Status int
	Header http.Header // the headers a replay repeats (Location, ETag, Record-Unchanged)
	Body   []byte
}

// Claim is a held key.
type Claim struct {
	APIKey string
	Key    string
	token  string
	until  time.Time // end of the lease: past it, a retry takes the claim over anyway
	// fresh: the key is claimed inside the write's transaction (Fresh, Start) and stored only with
	// its response (Complete); otherwise it is a running row made by Claim.
	fresh       bool
	workspace   string
	fingerprint string
	started     bool // Start queued the fresh claim's check
	held        bool
}

// ErrTaken is the error of a write whose fresh key (Fresh, Start) is there already, or held by a write
// under way: nothing was written, and the request goes on with Claim, which replays, refuses or takes
// the key over.
var ErrTaken = errors.New("the Idempotency-Key is already stored")

// Fresh is the claim of a key presumed new (the usual case), made inside the write's own transaction
// (Start) and stored with the response only (Complete): on PostgreSQL, no statement and no commit of its
// own. It returns nil where that does not pay (SQLite: one writer, no round trips); use Claim then.
func (k *Keys) Fresh(workspace, apiKey, key, fingerprint string) *Claim {
	if k.st.Dialect().Kind() != sqlgen.Postgres {
		return nil
	}
	now := k.now().UTC()
	return &Claim{APIKey: apiKey, Key: key, token: token(), until: now.Add(Lease), fresh: true, workspace: workspace, fingerprint: fingerprint}
}

// lockName is the name of the advisory lock a write holds on its key while it runs.
func lockName(apiKey, key string) string { return "idempotency:" + apiKey + ":" + key }

// Start claims c, if it is a Fresh one, in the write's transaction q: a transaction-scoped advisory
// lock on the key, taken only if no other write holds it, and the check that no row stores the key; it
// goes with the write's first statement (store.Check). A key that is held or stored fails that statement
// with ErrTaken, and nothing of the write runs. Call it first thing in the write's transaction.
func (k *Keys) Start(ctx context.Context, q store.Querier, c *Claim) error {
	if c == nil || !c.fresh || c.started {
		return nil
	}
	c.started = true
	// Two statements, sent together: the lock, then the check that no row stores the key. In one
	// statement the check would read the snapshot taken when that statement began, before the lock was
	// granted: a write that completed the key and let go of the lock in between would go unseen, and
	// this one would run its Before hooks for a request that is a replay (found by 100 identical creates
	// over three servers). In READ COMMITTED each statement takes its own snapshot, so the second sees
	// every write that held the lock before this one.
	d := k.st.Dialect()
	verdict := func(err error) error {
		switch {
		case err == nil:
			return nil
		case errors.Is(err, store.ErrNoRowsAffected):
			return ErrTaken
		}
		return fmt.Errorf("claim idempotency key: %w", err)
	}
	lock := d.Bind(`SELECT 1 WHERE pg_try_advisory_xact_lock(hashtextextended(?, 0))`, lockName(c.APIKey, c.Key))
	if err := store.Check(ctx, q, lock, verdict); err != nil {
		return err
	}
	free := d.Bind(`SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys WHERE api_key_id = ? AND idem_key = ?)`, c.APIKey, c.Key)
	return store.Check(ctx, q, free, func(err error) error {
		if err := verdict(err); err != nil {
			return err
		}
		c.held = true
		return nil
	})
}

// Held reports whether c holds its key: always for a claim made by Claim; for a Fresh one, once its
// check went through (a write that failed before it was sent has not examined the key).
func (c *Claim) Held() bool { return c.held }

// Stored reports whether c left a row to release when its write fails: only a claim made by Claim.
func (c *Claim) Stored() bool { return !c.fresh }

// newClaim is a claim of key for a request with fingerprint, and the statement storing it as running
// unless the key is there already or (PostgreSQL) a fresh write holds it.
func (k *Keys) newClaim(workspace, apiKey, key, fingerprint string) (*Claim, sqlgen.Stmt) {
	now := k.now().UTC()
	c := &Claim{APIKey: apiKey, Key: key, token: token(), until: now.Add(Lease)}
	var owner any
	if k.owner != "" {
		owner = k.owner
	}
	d := k.st.Dialect()
	if d.Kind() == sqlgen.Postgres {
		return c, d.Bind(`INSERT INTO idempotency_keys (api_key_id, idem_key, workspace_id, fingerprint, status, token, locked_until, created_at, owner)
SELECT ?, ?, ?, ?, 'running', ?, ?, ?, ? WHERE pg_try_advisory_xact_lock(hashtextextended(?, 0)) ON CONFLICT (api_key_id, idem_key) DO NOTHING`,
			apiKey, key, workspace, fingerprint, c.token, now.Add(Lease), now, owner, lockName(apiKey, key))
	}
	return c, d.Bind(`INSERT INTO idempotency_keys (api_key_id, idem_key, workspace_id, fingerprint, status, token, locked_until, created_at, owner)
VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?) ON CONFLICT (api_key_id, idem_key) DO NOTHING`, apiKey, key, workspace, fingerprint, c.token, now.Add(Lease), now, owner)
}

// Keys stores idempotency keys.
type Keys struct {
	st    store.Store
	now   func() time.Time
	owner string // the Instance whose claims these are; "" for none (claims end with their lease only)

	mu       sync.Mutex
	pending  []*Claim // claims whose release failed, retried in the background
	retrying bool     // a goroutine is retrying pending
}

// New returns the key store over st.
func New(st store.Store, now func() time.Time) *Keys {
	if now == nil {
		now = time.Now
	}
	return &Keys{st: st, now: now}
}

// SetInstance makes the claims of k name instance, so that they end when it dies.
func (k *Keys) SetInstance(in *Instance) { k.owner = in.ID }

func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Claim takes the key for a request with fingerprint, or returns the stored response of the request that
// completed it (replay), or ErrReused / ErrInUse.
func (k *Keys) Claim(ctx context.Context, workspace, apiKey, key, fingerprint string) (*Claim, *Response, error) {
	d := k.st.Dialect()
	c, insert := k.newClaim(workspace, apiKey, key, fingerprint)
	now := c.until.Add(-Lease)
	var replay *Response
	var owner any
	if k.owner != "" {
		owner = k.owner
	}
	// A new key, the usual case, is claimed by this one statement; a key already there is examined
	// (and possibly taken over) in a transaction.
	if n, err := k.st.Exec(ctx, insert); err != nil {
		return nil, nil, err
	} else if n == 1 {
		c.held = true
		return c, nil, nil
	}
	err := k.st.Tx(ctx, func(q store.Querier) error {
		if d.Kind() == sqlgen.Postgres {
			// A fresh write holding the key (Start) keeps its lock until it ends.
			free := false
			if err := q.Query(ctx, d.Bind("SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0))", lockName(apiKey, key)), func(row []any) error {
				free = store.Bool(row[0])
				return nil
			}); err != nil {
				return err
			}
			if !free {
				return ErrInUse
			}
		}
		n, err := q.Exec(ctx, insert)
		if err != nil || n == 1 {
			return err
		}
		var fp, status, held string
		var locked, created time.Time
		var resp Response
		var hdr string
		var ownerDead bool
		alive, aliveArgs := aliveSince(d, time.Now()) // heartbeats carry the real time, whatever clock k keeps
		_, err = store.QueryOne(ctx, q, d.Bind(`SELECT k.fingerprint, k.status, k.locked_until, k.created_at, k.response_status, k.response_headers, k.response_body,
  k.token, k.owner IS NOT NULL AND NOT EXISTS (SELECT 1 FROM server_instances i WHERE i.id = k.owner AND `+alive+`)
FROM idempotency_keys k WHERE k.api_key_id = ? AND k.idem_key = ?`, append(aliveArgs, apiKey, key)...), func(row []any) error {
			fp, status = store.Text(row[0]), store.Text(row[1])
			held, ownerDead = store.Text(row[7]), store.Bool(row[8])
			var err error
			if locked, err = store.Time(row[2]); err != nil {
				return err
			}
			if created, err = store.Time(row[3]); err != nil {
				return err
			}
			resp.Status = int(store.Int(row[4]))
			hdr, resp.Body = store.Text(row[5]), []byte(store.Text(row[6]))
			return nil
		})
		if err != nil {
			return err
		}
		expired := now.Sub(created) >= Retention
		switch {
		case !expired && fp != fingerprint:
			return ErrReused
		case !expired && status == "completed":
			resp.Header = http.Header{}
			if hdr != "" {
				if err := json.Unmarshal([]byte(hdr), &resp.Header); err != nil {
					return fmt.Errorf("stored headers: %w", err)
				}
			}
			replay = &resp
			return nil
		case !expired && now.Before(locked) && !ownerDead:
			return ErrInUse
		}
		// An abandoned claim (its server died, or its lease ended) or an expired key: take it over,
		// unless another request just did (the claim seen dead is taken by its token).
		dead := ""
		if ownerDead {
			dead = held
		}
		n, err = q.Exec(ctx, d.Bind(`UPDATE idempotency_keys SET workspace_id = ?, fingerprint = ?, status = 'running', token = ?, locked_until = ?, created_at = ?,
  response_status = NULL, response_headers = NULL, response_body = NULL, completed_at = NULL, owner = ?
WHERE api_key_id = ? AND idem_key = ? AND (status = 'running' AND (locked_until <= ? OR token = ?) OR created_at <= ?)`,
			workspace, fingerprint, c.token, now.Add(Lease), now, owner, apiKey, key, now, dead, now.Add(-Retention)))
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrInUse
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if replay != nil {
		return nil, replay, nil
	}
	c.held = true
	return c, nil, nil
}

// Complete stores the response of a claimed request. Call it inside the transaction of the write; it
// fails with ErrLost if the claim was taken over, which must roll the write back. A fresh claim is
// stored here, completed, for the first time; a row that got there meanwhile (a server of an older
// version, which does not take the lock) fails it with ErrTaken.
func (k *Keys) Complete(ctx context.Context, q store.Querier, c *Claim, r Response) error {
	hdr, _ := json.Marshal(r.Header)
	d := k.st.Dialect()
	now := k.now().UTC()
	// Queued (store.Later): on PostgreSQL it goes with the COMMIT, which it stops when it fails.
	if c.fresh {
		return store.Later(ctx, q, d.Bind(`INSERT INTO idempotency_keys (api_key_id, idem_key, workspace_id, fingerprint, status, token, locked_until, created_at, owner,
  response_status, response_headers, response_body, completed_at)
VALUES (?, ?, ?, ?, 'completed', ?, ?, ?, NULL, ?, ?, ?, ?) ON CONFLICT (api_key_id, idem_key) DO NOTHING`,
			c.APIKey, c.Key, c.workspace, c.fingerprint, c.token, c.until, c.until.Add(-Lease), int64(r.Status), string(hdr), string(r.Body), now), true, func(err error) error {
			if errors.Is(err, store.ErrNoRowsAffected) {
				return ErrTaken
			}
			return fmt.Errorf("complete idempotency key: %w", err)
		})
	}
	return store.Later(ctx, q, d.Bind(`UPDATE idempotency_keys SET status = 'completed', response_status = ?, response_headers = ?, response_body = ?, completed_at = ?
WHERE api_key_id = ? AND idem_key = ? AND token = ?`, int64(r.Status), string(hdr), string(r.Body), now, c.APIKey, c.Key, c.token), true, func(err error) error {
		if errors.Is(err, store.ErrNoRowsAffected) {
			return ErrLost
		}
		return fmt.Errorf("complete idempotency key: %w", err)
	})
}

// Release frees the key of a request that failed, so that a retry runs anew. Call it only once the
// write's transaction has ended without committing.
//
// When the release itself fails (the database went away during the request), it is retried in the
// background until it succeeds or the claim's lease ends, so that a retry after the database returns
// runs at once instead of waiting out the lease. A late release is safe: it deletes the claim only while
// it is still this request's running claim, and a write whose commit did reach the database has marked
// it completed in that same transaction.
func (k *Keys) Release(ctx context.Context, c *Claim) error {
	if err := k.release(ctx, c); err != nil {
		k.releaseLater(c)
		return err
	}
	return nil
}

func (k *Keys) release(ctx context.Context, c *Claim) error {
	_, err := k.st.Exec(ctx, k.st.Dialect().Bind("DELETE FROM idempotency_keys WHERE api_key_id = ? AND idem_key = ? AND token = ? AND status = 'running'", c.APIKey, c.Key, c.token))
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// maxPending bounds the releases retried in the background; past it, claims end with their lease.
const maxPending = 10000

// releaseLater queues c for a background release and starts the retrying goroutine if none runs.
func (k *Keys) releaseLater(c *Claim) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.pending) >= maxPending {
		return
	}
	k.pending = append(k.pending, c)
	if !k.retrying {
		k.retrying = true
		go k.retryReleases()
	}
}

// retryReleases retries the pending releases with a backoff from 100 ms to 1 s, dropping each once it
// succeeds or its lease has ended, and returns when none is left.
func (k *Keys) retryReleases() {
	wait := 100 * time.Millisecond
	for {
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
		k.mu.Lock()
		batch := k.pending
		k.pending = nil
		k.mu.Unlock()
		var left []*Claim
		for _, c := range batch {
			if !k.now().UTC().Before(c.until) {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := k.release(ctx, c)
			cancel()
			if err != nil {
				left = append(left, c)
			}
		}
		k.mu.Lock()
		k.pending = append(k.pending, left...)
		if len(k.pending) == 0 {
			k.retrying = false
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
	}
}

// Cleanup deletes keys older than the retention period and returns how many.
func (k *Keys) Cleanup(ctx context.Context) (int64, error) {
	n, err := k.st.Exec(ctx, k.st.Dialect().Bind("DELETE FROM idempotency_keys WHERE created_at < ?", k.now().UTC().Add(-Retention)))
	if err != nil {
		return 0, fmt.Errorf("clean up idempotency keys: %w", err)
	}
	return n, nil
}
