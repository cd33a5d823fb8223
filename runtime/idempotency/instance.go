package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// HeartbeatInterval is how often a running server marks itself alive in server_instances.
const HeartbeatInterval = time.Second

// DeadAfter is how long after its last heartbeat a server counts as dead: a claim it left running is then
// taken over by a retry at once, without waiting for the claim's Lease. A server the database did not hear
// from for this long (stopped by SIGKILL, its machine gone, cut off from the database) is in one of two
// states, both safe: dead, or unable to commit, since its write's transaction completes the claim only
// while the claim's token still holds (Complete fails with ErrLost once a retry took the claim over).
const DeadAfter = 5 * time.Second

// instanceRetention is how long the row of a server not heard from stays; claims naming a server without
// a row count as a dead server's.
const instanceRetention = time.Hour

// Instance is this server process as the other servers sharing the database see it: a row in
// server_instances whose heartbeat says it is alive. Claims record the instance that made them.
type Instance struct {
	ID string

	st   store.Store
	log  *slog.Logger
	stop context.CancelFunc
	done chan struct{}
}

// Register adds a new instance of this process to server_instances and keeps its heartbeat every
// HeartbeatInterval until Close.
func Register(ctx context.Context, st store.Store, log *slog.Logger) (*Instance, error) {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	in := &Instance{ID: hex.EncodeToString(raw), st: st, log: log, done: make(chan struct{})}
	if err := in.beat(ctx); err != nil {
		return nil, fmt.Errorf("register server instance: %w", err)
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	in.stop = stop
	go in.heartbeat(bg)
	return in, nil
}

// beat marks the instance alive now, by the database's clock on PostgreSQL (servers on several machines
// compare heartbeats with one clock), adding its row the first time, or again if a clean-up removed it.
func (in *Instance) beat(ctx context.Context) error {
	d := in.st.Dialect()
	now, args := "?", []any{time.Now().UTC()}
	if d.Kind() == sqlgen.Postgres {
		now, args = "now()", nil
	}
	host, _ := os.Hostname()
	stmt := d.Bind("INSERT INTO server_instances (id, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, "+now+", "+now+
		") ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at", append([]any{in.ID, host, int64(os.Getpid())}, append(args, args...)...)...)
	_, err := in.st.Exec(ctx, stmt)
	return err
}

func (in *Instance) heartbeat(ctx context.Context) {
	defer close(in.done)
	t := time.NewTicker(HeartbeatInterval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		bctx, cancel := context.WithTimeout(ctx, HeartbeatInterval)
		err := in.beat(bctx)
		cancel()
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			failing = true
			in.log.Warn("server heartbeat failed; past "+DeadAfter.String()+" other servers may take over this server's running Idempotency-Key claims", "err", err)
		case err == nil && failing:
			failing = false
			in.log.Info("server heartbeat restored")
		}
	}
}

// Close stops the heartbeat and removes the instance, so that a claim it left (a request cut off at
// shutdown whose release failed) is taken over at once.
func (in *Instance) Close(ctx context.Context) error {
	if in == nil {
		return nil
	}
	in.stop()
	<-in.done
	if _, err := in.st.Exec(ctx, in.st.Dialect().Bind("DELETE FROM server_instances WHERE id = ?", in.ID)); err != nil {
		return fmt.Errorf("deregister server instance: %w", err)
	}
	return nil
}

// CleanupInstances deletes the rows of servers not heard from for an hour and returns how many.
func CleanupInstances(ctx context.Context, st store.Store) (int64, error) {
	n, err := st.Exec(ctx, st.Dialect().Bind("DELETE FROM server_instances WHERE heartbeat_at < ?", time.Now().UTC().Add(-instanceRetention)))
	if err != nil {
		return 0, fmt.Errorf("clean up server instances: %w", err)
	}
	return n, nil
}

// aliveSince returns the SQL condition that the server_instances row aliased i was heard from within
// DeadAfter, and its arguments.
func aliveSince(d sqlgen.Dialect, now time.Time) (string, []any) {
	if d.Kind() == sqlgen.Postgres {
		return "i.heartbeat_at > now() - make_interval(secs => ?)", []any{DeadAfter.Seconds()}
	}
	return "i.heartbeat_at > ?", []any{now.UTC().Add(-DeadAfter)}
}
