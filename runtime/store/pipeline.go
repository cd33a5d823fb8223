package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workspace-records/records/engine/sqlgen"
)

// ErrNoRowsAffected is the error of a statement queued with Later that had to write a row and wrote
// none.
var ErrNoRowsAffected = errors.New("the statement affected no row")

// Later runs s, a statement whose result the caller does not need at once, in the transaction q. On a
// PostgreSQL transaction it is queued and sent with the transaction's next statement or its COMMIT, in
// the same round trip; elsewhere it runs at once. mustWrite: s (an INSERT, UPDATE or DELETE without
// RETURNING) must affect a row, or it fails with ErrNoRowsAffected; on PostgreSQL that is checked by the
// statement itself, so a COMMIT sent behind it never commits. The error of s, passed through wrap (nil:
// as is), is returned by whichever call sends it — the next Query or Exec on q, or the commit — and the
// transaction then rolls back whole.
func Later(ctx context.Context, q Querier, s sqlgen.Stmt, mustWrite bool, wrap func(error) error) error {
	if t, ok := q.(*pgTx); ok {
		counted(ctx)
		t.pending = append(t.pending, queued{s: s, must: mustWrite, wrap: wrap})
		return nil
	}
	n, err := q.Exec(ctx, s)
	if err == nil && mustWrite && n == 0 {
		err = ErrNoRowsAffected
	}
	if err != nil && wrap != nil {
		err = wrap(err)
	}
	return err
}

// LaterRows queues rows as multi-row INSERTs (each within sqlgen.MaxParams placeholders) with Later,
// each error passed through wrap.
func LaterRows(ctx context.Context, q Querier, d sqlgen.Dialect, rows sqlgen.Rows, wrap func(error) error) error {
	per := rows.RowsPerStatement()
	for start := 0; start < len(rows.Values); start += per {
		part := rows
		part.Values = rows.Values[start:min(start+per, len(rows.Values))]
		if err := Later(ctx, q, d.InsertRows(part), false, wrap); err != nil {
			return err
		}
	}
	return nil
}

// Check runs s, a SELECT, in the transaction q, which must go no further unless s returns a row: on
// PostgreSQL it is queued like a Later statement, and one that returns no row fails with
// ErrNoRowsAffected, so that nothing after it in the pipeline runs; elsewhere it runs at once. done is
// told the outcome of s once known (nil: it returned a row) and returns the error to report.
func Check(ctx context.Context, q Querier, s sqlgen.Stmt, done func(error) error) error {
	if t, ok := q.(*pgTx); ok {
		counted(ctx)
		t.pending = append(t.pending, queued{s: s, must: true, wrap: done, ok: func() { _ = done(nil) }})
		return nil
	}
	found := false
	if err := q.Query(ctx, s, func([]any) error { found = true; return nil }); err != nil {
		return done(err)
	}
	if !found {
		return done(ErrNoRowsAffected)
	}
	return done(nil)
}

// Flush sends the statements queued on q with Later, if any, and returns the first one's error.
func Flush(ctx context.Context, q Querier) error {
	t, ok := q.(*pgTx)
	if !ok || len(t.pending) == 0 {
		return nil
	}
	return t.run(ctx, sqlgen.Stmt{SQL: "SELECT 1"}, func(br pgx.BatchResults) error {
		_, err := br.Exec()
		return mapPG(err)
	})
}

// Mark is a point in a transaction's queue of statements (MarkOf).
type Mark struct{ rounds, n int }

// MarkOf marks the statements queued on q so far, for DiscardSince.
func MarkOf(q Querier) Mark {
	if t, ok := q.(*pgTx); ok {
		return Mark{rounds: t.rounds, n: len(t.pending)}
	}
	return Mark{}
}

// DiscardSince drops the statements queued on q with Later since m and not sent yet: for a write rolled
// back to a savepoint, whose queued statements belong to what is undone. What was queued before m (the
// transaction's BEGIN, a claim's check) stays.
func DiscardSince(q Querier, m Mark) {
	t, ok := q.(*pgTx)
	if !ok {
		return
	}
	if t.rounds == m.rounds && m.n <= len(t.pending) {
		t.pending = t.pending[:m.n]
		return
	}
	t.pending = nil // sent since m: everything still queued came after it
}

// queued is a statement waiting for the next round trip of a pgTx.
type queued struct {
	s    sqlgen.Stmt
	must bool
	wrap func(error) error
	ok   func() // nil: nothing to tell when s succeeds
}

// divisionByZero is how a queued mustWrite statement that wrote nothing fails (see queued.sql).
const divisionByZero = "22012"

func (p queued) sql() string {
	if !p.must {
		return p.s.SQL
	}
	// The statement fails when it wrote (or, a SELECT, returned) no row, so that nothing after it in
	// the pipeline — a COMMIT above all — runs.
	if strings.HasPrefix(p.s.SQL, "SELECT") {
		return "WITH w AS (" + p.s.SQL + ") SELECT 1 / count(*) FROM w"
	}
	return "WITH w AS (" + p.s.SQL + " RETURNING 1) SELECT 1 / count(*) FROM w"
}

func (p queued) fail(err error) error {
	var pgErr *pgconn.PgError
	if p.must && errors.As(err, &pgErr) && pgErr.Code == divisionByZero {
		err = ErrNoRowsAffected
	} else {
		err = mapPG(err)
	}
	if p.wrap != nil {
		err = p.wrap(err)
	}
	return err
}

// pgTx is a transaction on one pooled connection that pipelines: BEGIN, the workspace setting and the
// statements queued with Later wait for the next statement whose result is needed, and all go to the
// server in one round trip (a pgx batch: one Sync); the last of them go with the COMMIT. A failing
// statement makes the server skip the rest of its batch, COMMIT included.
type pgTx struct {
	// mu serialises the statements run on conn: a plugin's lookup reads through the write's
	// transaction from a goroutine of its own (the hook's callback), and may still be running when the
	// write gives up on the hook (its deadline) and rolls back. Rollback and commit wait for a statement
	// under way, and a transaction that ended runs no more (ErrTxDone), so that no statement reaches
	// the connection once Tx has released it to the pool.
	mu      sync.Mutex
	done    bool
	conn    *pgx.Conn
	sent    bool // something went to the server: BEGIN at least
	rounds  int  // round trips made (run)
	pending []queued
}

// run sends the pending statements and s in one batch, returns the first pending statement's error,
// else what use makes of s's result.
func (t *pgTx) run(ctx context.Context, s sqlgen.Stmt, use func(br pgx.BatchResults) error) error {
	b := &pgx.Batch{}
	for _, p := range t.pending {
		b.Queue(p.sql(), p.s.Args...)
	}
	b.Queue(s.SQL, s.Args...)
	pend := t.pending
	t.pending, t.sent = nil, true
	t.rounds++
	br := t.conn.SendBatch(ctx, b)
	for _, p := range pend {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return p.fail(err)
		}
		if p.ok != nil {
			p.ok()
		}
	}
	if err := use(br); err != nil {
		_ = br.Close()
		return err
	}
	return mapPG(br.Close())
}

// ErrTxDone is the error of a statement run on a transaction that has ended.
var ErrTxDone = errors.New("the transaction has already ended")

// Query implements Querier.
func (t *pgTx) Query(ctx context.Context, s sqlgen.Stmt, fn func(row []any) error) error {
	counted(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return ErrTxDone
	}
	if len(t.pending) == 0 {
		return pgq{t.conn}.Query(ctx, s, fn)
	}
	return t.run(ctx, s, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return mapPG(err)
		}
		return scanRows(rows, fn)
	})
}

// Exec implements Querier.
func (t *pgTx) Exec(ctx context.Context, s sqlgen.Stmt) (int64, error) {
	counted(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return 0, ErrTxDone
	}
	if len(t.pending) == 0 {
		return pgq{t.conn}.Exec(ctx, s)
	}
	var n int64
	err := t.run(ctx, s, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		n = tag.RowsAffected()
		return mapPG(err)
	})
	return n, err
}

// errCommitRolledBack: the server answered COMMIT with ROLLBACK (the transaction had failed).
var errCommitRolledBack = errors.New("commit: the transaction was rolled back")

// commit sends what is pending with COMMIT. A transaction that ran nothing sends nothing.
func (t *pgTx) commit(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return ErrTxDone
	}
	t.done = true
	if !t.sent && !t.wrote() {
		t.pending = nil
		return nil
	}
	return t.run(ctx, sqlgen.Stmt{SQL: "COMMIT"}, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err != nil {
			return mapPG(err)
		}
		if tag.String() == "ROLLBACK" {
			return errCommitRolledBack
		}
		return nil
	})
}

// wrote reports whether statements beyond the transaction's opening (BEGIN and the workspace setting)
// wait to be sent.
func (t *pgTx) wrote() bool { return len(t.pending) > t.opening() }

func (t *pgTx) opening() int {
	n := 0
	for _, p := range t.pending {
		if p.s.SQL == "BEGIN" || p.s.SQL == setWorkspace {
			n++
		}
	}
	return n
}

// rollback ends a transaction that failed. A connection whose rollback fails is closed, so that the
// pool drops it rather than hand out a session inside a transaction.
func (t *pgTx) rollback(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	t.pending = nil
	if !t.sent || t.conn.IsClosed() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if _, err := t.conn.Exec(rctx, "ROLLBACK"); err != nil {
		_ = t.conn.Close(rctx)
	}
}

// Tx implements Store. The transaction is scoped to the workspace of ctx (none: no record rows) for
// its own duration; the connection's session scope is left as it was. BEGIN and the scope go to the
// server with the transaction's first statement, and statements queued with Later with the next one
// or the COMMIT (pgTx).
func (p *Postgres) Tx(ctx context.Context, fn func(q Querier) error) error {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return mapPG(err)
	}
	defer conn.Release()
	t := &pgTx{conn: conn.Conn(), pending: []queued{{s: sqlgen.Stmt{SQL: "BEGIN"}}}}
	if ws := workspaceOf(ctx); !scopedTo(t.conn, ws) {
		t.pending = append(t.pending, queued{s: sqlgen.Stmt{SQL: setWorkspace, Args: []any{ws}}})
	}
	if err := fn(t); err != nil {
		t.rollback(ctx)
		return mapPG(err)
	}
	if err := t.commit(ctx); err != nil {
		t.rollback(ctx)
		return mapPG(err)
	}
	return nil
}

var _ Querier = (*pgTx)(nil)
