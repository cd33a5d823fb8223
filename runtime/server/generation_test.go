package server

import (
	"sync"
	"testing"
	"time"
)

// The reference counting of a generation and of a plugin host shared between generations, alone: a
// generation drains exactly once, after its served reference and every holder's are released, and is
// never held again; a host stops only when the last generation using it has drained.
func TestGenerationReferences(t *testing.T) {
	var drained int
	host := share(nil)
	g := &generation{host: host, drained: func() { drained++; host.release() }}
	g.refs.Store(1)
	next := &generation{host: host.retain()} // a switch whose version the same plugins cover
	next.refs.Store(1)
	if !g.tryAcquire() || !g.tryAcquire() {
		t.Fatal("a served generation could not be held")
	}
	g.release() // the served reference (a switch away from it)
	g.release() // one holder
	if drained != 0 || g.refs.Load() != 1 {
		t.Fatalf("drained %d times with a holder left (refs %d)", drained, g.refs.Load())
	}
	g.release() // the last holder
	if drained != 1 || g.refs.Load() != 0 {
		t.Fatalf("drained %d times, refs %d, after the last release", drained, g.refs.Load())
	}
	if g.tryAcquire() {
		t.Fatal("a drained generation was held again")
	}
	if host.users.Load() != 1 {
		t.Fatalf("the shared host has %d users after the first generation drained, want 1 (the next one)", host.users.Load())
	}
	// Many holders at once (under -race: no lost count).
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if next.tryAcquire() {
				next.release()
			}
		})
	}
	wg.Wait()
	if next.refs.Load() != 1 {
		t.Errorf("refs %d after 64 holders came and went, want 1", next.refs.Load())
	}

	// Releasing a drained generation once more is a bug of its holder: it panics, never drains twice.
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a release past zero did not panic")
			}
		}()
		g.release()
	}()
	if drained != 1 {
		t.Errorf("drained %d times after a release past zero, want 1", drained)
	}
}

// A closed backend's last generation (drained, never replaced) is answered unheld instead of spinning:
// a request that arrives after Close meets retired services, not a busy loop.
func TestAcquireAfterClose(t *testing.T) {
	b := &Backend{}
	g := &generation{host: share(nil), drained: func() {}}
	g.refs.Store(1)
	b.gen.Store(g)
	g.release() // Close drops the served reference
	done := make(chan *generation, 1)
	go func() {
		got, release := b.acquire()
		release()
		done <- got
	}()
	select {
	case got := <-done:
		if got != g || g.refs.Load() != 0 {
			t.Errorf("acquire after close: %p (want %p), refs %d (want 0)", got, g, g.refs.Load())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("acquire spins on a closed backend")
	}
}
