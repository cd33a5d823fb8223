package defset

import (
	"context"
	"time"

	"github.com/workspace-records/records/runtime/store"
)

// PollInterval is how often Watch reads the version served, besides the notifications of PostgreSQL: a
// server misses no change for longer than this (a lost notification, a database without them).
const PollInterval = time.Second

// listener is a store that delivers notifications (PostgreSQL).
type listener interface {
	Listen(ctx context.Context, channel string, ready func(bool), fn func())
}

// Watch calls changed with the version the database serves each time it differs from the one before
// (the first call is with the version at the start, when one is stored), from one goroutine, until ctx
// ends. A failed read is reported to failed and tried again at the next poll.
func Watch(ctx context.Context, st store.Store, every time.Duration, changed func(id string), failed func(error)) {
	if every <= 0 {
		every = PollInterval
	}
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	if l, ok := st.(listener); ok {
		go l.Listen(ctx, Channel, func(bool) { poke() }, poke)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	last := ""
	for {
		id, err := Current(ctx, st, st.Dialect())
		switch {
		case err != nil && ctx.Err() == nil:
			failed(err)
		case err == nil && id != "" && id != last:
			last = id
			changed(id)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
	}
}
