package main

import (
	"io"
	"sync"
)

// logWriter hands log lines to a goroutine that writes them to w, so that a request's access-log line
// costs no write system call of its own: lines written while a write is under way are coalesced into
// the next one. A line is written as soon as the goroutine runs (there is no timer to wait for); Close
// writes what is left. Past maxPending bytes waiting, Write blocks until the writer catches up, so a
// slow destination slows the server rather than growing its memory.
type logWriter struct {
	w       io.Writer
	mu      sync.Mutex
	cond    *sync.Cond
	pending []byte
	spare   []byte
	closed  bool
	done    chan struct{}
}

const maxPending = 1 << 20

func newLogWriter(w io.Writer) *logWriter {
	l := &logWriter{w: w, done: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	go l.run()
	return l
}

// Write implements io.Writer; p is copied.
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.pending) > maxPending && !l.closed {
		l.cond.Wait()
	}
	if l.closed {
		return l.w.Write(p)
	}
	l.pending = append(l.pending, p...)
	l.cond.Broadcast()
	return len(p), nil
}

func (l *logWriter) run() {
	defer close(l.done)
	l.mu.Lock()
	for {
		for len(l.pending) == 0 && !l.closed {
			l.cond.Wait()
		}
		if len(l.pending) == 0 {
			l.mu.Unlock()
			return
		}
		batch := l.pending
		l.pending, l.spare = l.spare[:0], nil
		l.cond.Broadcast() // writers waiting for room
		l.mu.Unlock()
		_, _ = l.w.Write(batch)
		l.mu.Lock()
		if l.spare == nil && cap(batch) <= maxPending {
			l.spare = batch[:0]
		}
	}
}

// Close writes the lines still waiting and stops the goroutine; later writes go straight to w.
func (l *logWriter) Close() {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	<-l.done
}
