package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workspace-records/records/engine/sqlgen"
)

// migrationLockID is the advisory lock key that serialises migrations across servers.
const migrationLockID = 0x7265636f7264 // "record"

// ConnectTimeout bounds how long opening a connection may take, so that an unreachable database answers
// 503 quickly instead of holding requests. The URL's connect_timeout (seconds, as libpq reads it)
// replaces it: WithConnectTimeout.
const ConnectTimeout = 2 * time.Second

// CommandConnectTimeout is how long recordsctl waits for a connection when the URL sets none: a command
// an operator runs may wait for a loaded database, as psql does, where a request may not.
const CommandConnectTimeout = 10 * time.Second

// WithConnectTimeout returns url with connect_timeout set to d (whole seconds, at least one) when url is
// a PostgreSQL URL that sets none; any other url is returned as it is.
func WithConnectTimeout(url string, d time.Duration) string {
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return url
	}
	if strings.Contains(url, "connect_timeout=") {
		return url
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "connect_timeout=" + strconv.Itoa(max(1, int(d/time.Second)))
}

// Postgres is a Store on PostgreSQL through a pgx pool (statements are prepared and cached per connection).
type Postgres struct {
	pool *pgxpool.Pool
}

// Notify tells every process listening on channel (Listen) that something it caches changed.
func (p *Postgres) Notify(ctx context.Context, channel string) error {
	_, err := p.pool.Exec(ctx, "SELECT pg_notify($1, '')", channel)
	return mapPG(err)
}

// Listen calls fn for each notification on channel until ctx ends, on a connection of its own (outside
// the pool). ready(true) is called once listening; ready(false) when the connection is lost, since
// notifications may then be missed; it then reconnects with backoff.
func (p *Postgres) Listen(ctx context.Context, channel string, ready func(bool), fn func()) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, p.pool.Config().ConnConfig)
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err == nil {
				ready(true)
				backoff = 100 * time.Millisecond
				for {
					if _, err = conn.WaitForNotification(ctx); err != nil {
						break
					}
					fn()
				}
				ready(false)
			}
			conn.Close(context.Background())
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

var _ Store = (*Postgres)(nil)

// IdleInTransactionTimeout is the idle_in_transaction_session_timeout of the server's sessions.
const IdleInTransactionTimeout = "60s"

// OpenPostgres connects to url and checks the server answers.
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse postgres url: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgx's default (the number of processors, at least 4) starves writes: a write holds its
		// connection for the few round trips of its transaction, mostly waiting on the network and
		// the disk, not the processor. pool_max_conns in the URL overrides this.
		cfg.MaxConns = int32(max(8, 4*runtime.NumCPU()))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 { // the URL's connect_timeout (or PGCONNECT_TIMEOUT) wins
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	if _, set := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		// A transaction left open by a stuck client (a process frozen mid-request, a bug) would hold
		// its row locks and its pool slot and block vacuum indefinitely; PostgreSQL ends such a session
		// after this. No request holds a transaction idle for anywhere near this long (its deadline is
		// request_timeout). The URL's idle_in_transaction_session_timeout overrides it.
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = IdleInTransactionTimeout
	}
	closeOnFatal := cfg.ConnConfig.OnPgError
	cfg.ConnConfig.OnPgError = func(c *pgconn.PgConn, e *pgconn.PgError) bool {
		// A session that may not write (25006) is talking to a standby, or to a primary that was
		// demoted (failover): it never recovers. Closing it (false) keeps it out of the pool, so the
		// next connection reaches whatever server now takes writes, instead of every later write on
		// this pooled session failing until a restart.
		if e.Code == "25006" {
			return false
		}
		return closeOnFatal == nil || closeOnFatal(c, e)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect postgres: %w", mapPG(err))
	}
	return &Postgres{pool: pool}, nil
}

// Dialect implements Store.
func (p *Postgres) Dialect() sqlgen.Dialect { return sqlgen.New(sqlgen.Postgres) }

// Pool exposes the pool to benchmarks that compare against raw SQL.
func (p *Postgres) Pool() *pgxpool.Pool { return p.pool }

type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

type pgq struct{ q pgQuerier }

func (q pgq) Query(ctx context.Context, s sqlgen.Stmt, fn func(row []any) error) error {
	rows, err := q.q.Query(ctx, s.SQL, s.Args...)
	if err != nil {
		return mapPG(err)
	}
	return scanRows(rows, fn)
}

// scanRows calls fn for every row and closes rows.
func scanRows(rows pgx.Rows, fn func(row []any) error) error {
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return mapPG(err)
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	rows.Close()
	return mapPG(rows.Err())
}

func (q pgq) Exec(ctx context.Context, s sqlgen.Stmt) (int64, error) {
	tag, err := q.q.Exec(ctx, s.SQL, s.Args...)
	if err != nil {
		return 0, mapPG(err)
	}
	return tag.RowsAffected(), nil
}

// Each pooled connection remembers, at session level, the workspace its statements are scoped to
// (records.workspace_id, which the row-level security policies read), and wsKey tracks it in the
// connection's custom data. A statement for the same workspace as the connection's last one runs alone;
// otherwise the setting and the statement go as one batch: one round trip either way. A context
// without a workspace clears the setting, so it still sees no record rows at all.
const wsKey = "records.workspace_id"

// Query implements Querier, scoped to the workspace of ctx (none: no record rows).
func (p *Postgres) Query(ctx context.Context, s sqlgen.Stmt, fn func(row []any) error) error {
	counted(ctx)
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return mapPG(err)
	}
	defer conn.Release()
	ws := workspaceOf(ctx)
	if scopedTo(conn.Conn(), ws) {
		return pgq{conn}.Query(ctx, s, fn)
	}
	br := scope(ctx, conn.Conn(), ws, s)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return mapPG(err)
	}
	rows, err := br.Query()
	if err != nil {
		return mapPG(err)
	}
	if err := scanRows(rows, fn); err != nil {
		return err
	}
	if err := br.Close(); err != nil {
		return mapPG(err)
	}
	conn.Conn().PgConn().CustomData()[wsKey] = ws
	return nil
}

// Exec implements Querier, scoped like Query.
func (p *Postgres) Exec(ctx context.Context, s sqlgen.Stmt) (int64, error) {
	counted(ctx)
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return 0, mapPG(err)
	}
	defer conn.Release()
	ws := workspaceOf(ctx)
	if scopedTo(conn.Conn(), ws) {
		return pgq{conn}.Exec(ctx, s)
	}
	br := scope(ctx, conn.Conn(), ws, s)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return 0, mapPG(err)
	}
	tag, err := br.Exec()
	if err != nil {
		return 0, mapPG(err)
	}
	if err := br.Close(); err != nil {
		return 0, mapPG(err)
	}
	conn.Conn().PgConn().CustomData()[wsKey] = ws
	return tag.RowsAffected(), nil
}

// scopedTo reports whether conn's session is known to be scoped to ws.
func scopedTo(conn *pgx.Conn, ws string) bool {
	cur, known := conn.PgConn().CustomData()[wsKey].(string)
	return known && cur == ws
}

// scope sends the session's workspace setting and s as one batch (one implicit transaction: if s fails,
// the setting is rolled back too). Until the batch succeeds the connection's scope is unknown.
func scope(ctx context.Context, conn *pgx.Conn, ws string, s sqlgen.Stmt) pgx.BatchResults {
	delete(conn.PgConn().CustomData(), wsKey)
	b := &pgx.Batch{}
	b.Queue(setSessionWorkspace, ws)
	b.Queue(s.SQL, s.Args...)
	return conn.SendBatch(ctx, b)
}

// Lock implements Store with a transaction-scoped advisory lock.
func (p *Postgres) Lock(ctx context.Context, fn func(q Querier) error) error {
	return p.Tx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: "SELECT pg_advisory_xact_lock($1)", Args: []any{int64(migrationLockID)}}); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		return fn(q)
	})
}

// Ping implements Store.
func (p *Postgres) Ping(ctx context.Context) error { return mapPG(p.pool.Ping(ctx)) }

// Close implements Store.
func (p *Postgres) Close() error { p.pool.Close(); return nil }

// mapPG translates pgx errors to the package sentinels, keeping the original in the chain.
func mapPG(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505":
			return fmt.Errorf("%w: %w", ErrConflict, err)
		case pgErr.Code[:2] == "22": // data exception: out of range, invalid text representation, ...
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		case pgErr.Code[:2] == "08", pgErr.Code[:2] == "53", pgErr.Code[:2] == "57",
			pgErr.Code == "25006", // read_only_sql_transaction: a standby, or a primary being failed over
			// Transaction rollback (40001 serialization failure, 40P01 deadlock detected) and 55P03
			// lock_not_available: the transaction lost to a concurrent one and was rolled back whole, so
			// the same request sent again is safe and will most likely pass.
			pgErr.Code[:2] == "40", pgErr.Code == "55P03":
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// unavailable reports whether err means the database could not be reached or the connection broke.
func unavailable(err error) bool {
	var netErr net.Error
	var connErr *pgconn.ConnectError
	switch {
	case errors.As(err, &netErr), errors.As(err, &connErr), pgconn.Timeout(err), pgconn.SafeToRetry(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool")
}

// PoolStats reports the pgx pool.
func (p *Postgres) PoolStats() PoolStats {
	s := p.pool.Stat()
	return PoolStats{Acquired: int64(s.AcquiredConns()), Idle: int64(s.IdleConns()), Total: int64(s.TotalConns()), Max: int64(s.MaxConns()),
		Acquires: s.AcquireCount(), EmptyAcquires: s.EmptyAcquireCount(), AcquireWait: s.AcquireDuration()}
}
