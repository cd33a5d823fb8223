package store

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"reflect"
	"sync"
)

// StmtCacheSize is how many prepared statements each SQLite connection keeps, least recently used
// first out. The engine's statements come from a bounded set of shapes (one per resource, operation
// and filter set), so a connection serving one workload reuses a handful of them; a statement of a
// shape seen once (a batch of an unusual size) only pushes out the coldest.
const StmtCacheSize = 128

// stmtConnector opens SQLite connections that keep their prepared statements (stmtConn): SQLite
// spends more time parsing and planning a short statement than running it, so reading one record
// costs several times what it would with the statement already prepared. Each connection plans
// without the ANALYZE samples (keepPlans), which would otherwise have SQLite plan a statement again on
// every run.
type stmtConnector struct {
	driver.Connector
	size int
}

func (c stmtConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	for _, need := range []bool{isA[driver.QueryerContext](conn), isA[driver.ExecerContext](conn), isA[driver.ConnPrepareContext](conn), isA[driver.ConnBeginTx](conn)} {
		if !need {
			conn.Close()
			return nil, errors.New("sqlite: the driver's connection lacks a context method the statement cache needs")
		}
	}
	if err := keepPlans(conn); err != nil {
		// Statements stay correct, only re-planned on every run of an analyzed database.
		keepPlansFailed.Do(func() { slog.Warn("sqlite: prepared statements may be planned again on every run", "err", err) })
	}
	return &stmtConn{Conn: conn, size: c.size, byText: map[string]*list.Element{}, lru: list.New()}, nil
}

var keepPlansFailed sync.Once

func isA[T any](v any) bool { _, ok := v.(T); return ok }

// stmtConn is a driver connection with a cache of prepared statements by SQL text. database/sql uses a
// connection from one goroutine at a time; the mutex only guards the cache against a Rows closed from
// elsewhere. A statement whose rows are still open (a query run while iterating another in the same
// transaction) is busy: the same text meanwhile runs as a one-shot statement, as without the cache.
type stmtConn struct {
	driver.Conn
	size int

	mu     sync.Mutex
	byText map[string]*list.Element // of *cachedStmt
	lru    *list.List               // front: most recently used
}

type cachedStmt struct {
	text string
	st   driver.Stmt
	busy bool
	gone bool // evicted or the connection closed while busy: close when released
}

// acquire returns the cached statement for text, preparing it if needed, marked busy; nil when the
// cached one is busy.
func (c *stmtConn) acquire(ctx context.Context, text string) (*cachedStmt, error) {
	c.mu.Lock()
	if e, ok := c.byText[text]; ok {
		s := e.Value.(*cachedStmt)
		if s.busy {
			c.mu.Unlock()
			return nil, nil
		}
		s.busy = true
		c.lru.MoveToFront(e)
		c.mu.Unlock()
		return s, nil
	}
	c.mu.Unlock()
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	s := &cachedStmt{text: text, st: st, busy: true}
	c.mu.Lock()
	c.byText[text] = c.lru.PushFront(s)
	var closing []driver.Stmt
	for c.lru.Len() > c.size {
		e := c.lru.Back()
		old := e.Value.(*cachedStmt)
		c.lru.Remove(e)
		delete(c.byText, old.text)
		if old.busy {
			old.gone = true
		} else {
			closing = append(closing, old.st)
		}
	}
	c.mu.Unlock()
	for _, st := range closing {
		_ = st.Close() // finalizing a reset statement cannot fail in a way the caller could act on
	}
	return s, nil
}

// release makes s available again, or closes it when it left the cache while busy.
func (c *stmtConn) release(s *cachedStmt) {
	c.mu.Lock()
	s.busy = false
	gone := s.gone
	c.mu.Unlock()
	if gone {
		_ = s.st.Close()
	}
}

// QueryContext implements driver.QueryerContext.
func (c *stmtConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	}
	rows, err := s.st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		c.release(s)
		return nil, err
	}
	return &stmtRows{Rows: rows, done: func() { c.release(s) }}, nil
}

// ExecContext implements driver.ExecerContext.
func (c *stmtConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	}
	defer c.release(s)
	return s.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

// PrepareContext implements driver.ConnPrepareContext (statements database/sql prepares itself are
// its own to close, and not cached).
func (c *stmtConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

// BeginTx implements driver.ConnBeginTx.
func (c *stmtConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

// Ping implements driver.Pinger.
func (c *stmtConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// ResetSession implements driver.SessionResetter.
func (c *stmtConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

// IsValid implements driver.Validator.
func (c *stmtConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// Close finalizes the cached statements, then closes the connection.
func (c *stmtConn) Close() error {
	c.mu.Lock()
	var closing []driver.Stmt
	for e := c.lru.Front(); e != nil; e = e.Next() {
		s := e.Value.(*cachedStmt)
		if s.busy {
			s.gone = true
		} else {
			closing = append(closing, s.st)
		}
	}
	c.lru.Init()
	clear(c.byText)
	c.mu.Unlock()
	var errs []error
	for _, st := range closing {
		errs = append(errs, st.Close())
	}
	return errors.Join(append(errs, c.Conn.Close())...)
}

// stmtRows releases its statement to the cache once closed (the driver resets it).
type stmtRows struct {
	driver.Rows
	done func()
}

func (r *stmtRows) Close() error {
	err := r.Rows.Close()
	if r.done != nil {
		r.done()
		r.done = nil
	}
	return err
}

// The driver's column metadata, passed through.

func (r *stmtRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *stmtRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (r *stmtRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *stmtRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *stmtRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}
