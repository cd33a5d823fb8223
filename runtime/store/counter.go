package store

import (
	"context"
	"sync/atomic"
)

// Counter counts the statements run with a context that carries it (WithCounter): every Query and
// Exec of either backend, and each statement queued with Later, Check or LaterRows, counts one
// (a transaction's BEGIN and COMMIT, and Copy's bulk statements, do not). The
// HTTP layer gives each request one and logs its count (the access line's "statements"), so that a test
// can show that a request's statements do not grow with its page size.
type Counter struct{ n atomic.Int64 }

type counterKey struct{}

// WithCounter returns ctx carrying c.
func WithCounter(ctx context.Context, c *Counter) context.Context {
	return context.WithValue(ctx, counterKey{}, c)
}

// Count returns the number of statements counted so far.
func (c *Counter) Count() int64 { return c.n.Load() }

// counted notes one statement run with ctx.
func counted(ctx context.Context) {
	if c, ok := ctx.Value(counterKey{}).(*Counter); ok {
		c.n.Add(1)
	}
}
