package customfields

import "time"

// SetClock makes r read the time from now (tests of MaxAge and IdleAfter).
func SetClock(r *Registry, now func() time.Time) { r.now = now }

// Cached reports whether r holds a snapshot of workspace.
func Cached(r *Registry, workspace string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cache[workspace] != nil
}
