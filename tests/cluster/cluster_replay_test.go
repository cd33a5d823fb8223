package cluster_test

// TestCluster "idempotency": the same Idempotency-Key sent to every replica at once.

import (
	"sync"
	"testing"
)

// One Idempotency-Key, one record, whichever replicas the repeats reach: sequential repeats on the other
// replicas replay the first response byte for byte with Idempotent-Replayed: true; concurrent identical
// requests across the replicas make one record, the others replaying it or being told it is in use.
func (c *cluster) testIdempotency(t *testing.T) {
	tn := c.newTenant(t, "idempotency")
	name := "Idempotent sequential " + c.runID
	key := "seq-" + c.runID
	first := c.do(t, 0, tn.key, "POST", "/v1/companies", map[string]any{"name": name, "industry": "software"}, "Idempotency-Key", key)
	if first.Status != 201 || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first request: %v (Idempotent-Replayed %q)", first, first.Header.Get("Idempotent-Replayed"))
	}
	for i := 1; i < len(c.replicas); i++ {
		// The same JSON with members reordered and spaced differently is the same request.
		r := c.do(t, i, tn.key, "POST", "/v1/companies", `{ "industry" : "software", "name" : "`+name+`" }`, "Idempotency-Key", key)
		c.checkReplay(t, r, first)
	}
	if r := c.do(t, 2, tn.key, "POST", "/v1/companies", map[string]any{"name": name + " changed"}, "Idempotency-Key", key); r.Status != 422 || r.code() != "idempotency_key_reused" {
		t.Errorf("same key, other body: %v; want 422 idempotency_key_reused", r)
	}
	if n := c.countNamed(t, tn, name); n != 1 {
		t.Errorf("%d records named %q, want 1", n, name)
	}

	// Concurrent: the same request released at once on every replica.
	m := c.scale.concurrent
	name = "Idempotent concurrent " + c.runID
	key = "conc-" + c.runID
	body := map[string]any{"name": name}
	out := make([]*response, m)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := range m {
		wg.Go(func() {
			<-release
			r, err := c.call(t, i%len(c.replicas), tn.key, "POST", "/v1/companies", body, "Idempotency-Key", key)
			if err != nil {
				t.Error(err)
				return
			}
			out[i] = r
		})
	}
	close(release)
	wg.Wait()
	var fresh *response
	var replays, inUse int
	for _, r := range out {
		switch {
		case r == nil:
		case r.Status == 201 && r.Header.Get("Idempotent-Replayed") == "":
			if fresh != nil {
				t.Errorf("two fresh 201s for one key: %v and %v", fresh, r)
			}
			fresh = r
		case r.Status == 201 && r.Header.Get("Idempotent-Replayed") == "true":
			replays++
		case r.Status == 409 && r.code() == "idempotency_key_in_use":
			inUse++
		default:
			t.Errorf("unexpected answer %v", r)
		}
	}
	if fresh == nil {
		t.Fatalf("no fresh 201 among %d concurrent requests", m)
	}
	for _, r := range out {
		if r != nil && r.Header.Get("Idempotent-Replayed") == "true" {
			c.checkReplay(t, r, fresh)
		}
	}
	for i := range c.replicas {
		c.checkReplay(t, c.do(t, i, tn.key, "POST", "/v1/companies", body, "Idempotency-Key", key), fresh)
	}
	t.Logf("%d concurrent identical POSTs over 3 replicas: 1 × 201 (replica %d), %d × 201 replayed, %d × 409 idempotency_key_in_use", m, fresh.Replica, replays, inUse)
	if n := c.countNamed(t, tn, name); n != 1 {
		t.Errorf("%d records named %q, want 1", n, name)
	}
}

// checkReplay asserts r replays first: 201, Idempotent-Replayed: true, the same body bytes and Location,
// its own request id.
func (c *cluster) checkReplay(t *testing.T, r, first *response) {
	t.Helper()
	if r.Status != first.Status || r.Header.Get("Idempotent-Replayed") != "true" || string(r.Raw) != string(first.Raw) || r.Header.Get("Location") != first.Header.Get("Location") {
		t.Errorf("not a replay of replica %d's answer: %v (Idempotent-Replayed %q, Location %q)\nfirst: %v", first.Replica, r, r.Header.Get("Idempotent-Replayed"), r.Header.Get("Location"), first)
	}
	if r.Header.Get("X-Request-Id") == first.Header.Get("X-Request-Id") {
		t.Errorf("replay carries the first request's X-Request-Id")
	}
}

// countNamed counts a tenant's companies named name through the API (round-robin).
func (c *cluster) countNamed(t *testing.T, tn tenant, name string) int {
	t.Helper()
	r := c.do(t, c.next(), tn.key, "GET", "/v1/companies?page_size=100&"+filterQuery("name", "eq", name), nil)
	if r.Status != 200 {
		t.Fatalf("list: %v", r)
	}
	return len(r.list())
}
