// Package store runs sqlgen statements against PostgreSQL or SQLite behind one small interface, and
// maps each driver's errors to the sentinels below; no other package looks at driver errors.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
)

// Errors a store reports.
var (
	ErrNotFound    = errors.New("not found")
	ErrConflict    = errors.New("conflicts with an existing row")
	ErrInvalid     = errors.New("value out of range for storage")
	ErrUnavailable = errors.New("database unavailable")
)

// Querier runs statements. Row values are driver values; see package records for their conversion.
type Querier interface {
	// Query calls fn for every row of s. The slice passed to fn is reused between rows.
	Query(ctx context.Context, s sqlgen.Stmt, fn func(row []any) error) error
	// Exec runs s and returns the number of rows it affected.
	Exec(ctx context.Context, s sqlgen.Stmt) (int64, error)
}

// Store is a database of records.
type Store interface {
	Querier
	// Dialect is the SQL dialect statements must be built for.
	Dialect() sqlgen.Dialect
	// Tx runs fn in a transaction, committing when fn returns nil.
	Tx(ctx context.Context, fn func(q Querier) error) error
	// Lock runs fn in a transaction that holds the database-wide migration lock, so that servers
	// starting at once apply schema changes one at a time.
	Lock(ctx context.Context, fn func(q Querier) error) error
	// Ping checks the database answers.
	Ping(ctx context.Context) error
	Close() error
}

// Open opens the database named by url: "sqlite:PATH" or "postgres://…" (also "postgresql://…").
func Open(ctx context.Context, url string) (Store, error) {
	switch {
	case strings.HasPrefix(url, "sqlite:"):
		return OpenSQLite(ctx, strings.TrimPrefix(url, "sqlite:"))
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return OpenPostgres(ctx, url)
	}
	return nil, fmt.Errorf("database url %q: want sqlite:PATH or postgres://…", url)
}

// QueryOne runs s and reports whether it returned a row; fn sees that row.
func QueryOne(ctx context.Context, q Querier, s sqlgen.Stmt, fn func(row []any) error) (bool, error) {
	found := false
	err := q.Query(ctx, s, func(row []any) error {
		if found {
			return nil
		}
		found = true
		return fn(row)
	})
	return found, err
}

// PoolStats is a snapshot of a store's connections, for the metrics endpoint.
type PoolStats struct {
	Acquired, Idle, Total, Max int64
	Acquires, EmptyAcquires    int64
	AcquireWait                time.Duration
}

// Stats reports st's connection pool, when its driver keeps one.
func Stats(st Store) (PoolStats, bool) {
	s, ok := st.(interface{ PoolStats() PoolStats })
	if !ok {
		return PoolStats{}, false
	}
	return s.PoolStats(), true
}
