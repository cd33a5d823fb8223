// Package memo is a bounded memory of values by key, for results that are a pure function of their key
// and costly to compute again (a program's checksum by file identity, a definitions text's validation).
// When it holds its limit, the next Put starts it anew: what it forgets is computed again, never wrong.
package memo

import "sync"

// Map remembers at most Limit values by key; safe for concurrent use. The zero value remembers nothing
// past Limit 0: set Limit.
type Map[K comparable, V any] struct {
	Limit int

	mu sync.Mutex
	m  map[K]V
}

// Get returns the value remembered for k.
func (c *Map[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

// Put remembers v for k, forgetting everything first when the map holds Limit values.
func (c *Map[K, V]) Put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= c.Limit {
		c.m = make(map[K]V)
	}
	c.m[k] = v
}
