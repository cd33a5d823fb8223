package cluster_test

// TestWebhooksSurviveKills: two replicas SIGKILLed at random moments during writes and webhook
// deliveries; the feed and a separate receiver program checked against the database.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// hookLease is the replicas' webhook_lease: a killed replica's leased deliveries go to the other
// replica this long after they were leased. The default (a minute) would hold the endpoint's later
// events that long after each kill that lands mid-delivery.
const hookLease = 3 * time.Second

// hookPause is each client's pause between two writes: 4 clients write about a dozen events a second,
// what the endpoint's deliveries (one at a time, in order) keep up with on a loaded machine, so that the
// kills land during deliveries as well as writes rather than during a backlog drained afterwards.
const hookPause = 300 * time.Millisecond

// hookReceiverDelay is how long the receiver waits before each answer.
const hookReceiverDelay = 20 * time.Millisecond

// hookSettle bounds the wait, after the last kill, for every event to be numbered and delivered.
const hookSettle = 60 * time.Second

// hookAimWait bounds the wait, at a kill point aimed at a delivery, for a replica to be delivering:
// generous, since the clients write a dozen events a second and each is delivered at once.
const hookAimWait = 15 * time.Second

// TestWebhooksSurviveKills is the kill test of issue 22 on PostgreSQL with two replicas: clients write
// creates and updates with Idempotency-Keys through both replicas while the test SIGKILLs a replica at
// random moments (12 kill points; 100 with -cluster.long or CLUSTER_LONG=1) and restarts it (a replica
// that does not start again fails the test); every other kill point waits for a replica delivering and
// kills it or the other one, and at least one kill must land mid-delivery. Each replica's dispatcher
// delivers the workspace's events to tools/webhookrecv, run as its own program. A write whose attempt
// went unanswered is retried with its key until a definitive answer, or (at random) given up: it is
// then unacknowledged, and the database says whether it committed. Then,
// once every event is numbered and delivered: the feed (GET /v1/events) holds exactly one event per
// acknowledged or committed write and none for a write that rolled back; every event reached the
// receiver, verified, at least once, first in sequence order. Duplicates (at-least-once) and the
// delivery lag are reported.
func TestWebhooksSurviveKills(t *testing.T) {
	t.Parallel() // its replicas, database, Redis keys and ports are its own
	if testing.Short() {
		t.Skip("starts two recordsd processes and a receiver; not in -short")
	}
	start := time.Now()
	kills := 12
	if *long {
		kills = 100
	}
	c := startCluster(t, 2, "RECORDS_WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true", "RECORDS_WEBHOOK_LEASE="+hookLease.String())
	h := &hookRun{c: c, t: t, stop: make(chan struct{})}
	h.tn = c.newTenant(t, "webhooks")
	ctx := context.Background()
	st, err := store.Open(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h.st = st
	h.wctx = store.WithWorkspace(ctx, h.tn.ws)

	// The endpoint, made as recordsctl would make it, names the receiver's address before the receiver
	// listens: its secret is what the receiver verifies with.
	cat, _, err := server.LoadDefinitions(os.DirFS(servertest.DefinitionsDir()))
	if err != nil {
		t.Fatal(err)
	}
	addr, err := proc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	hookURL := "http://" + addr + "/hooks"
	ep, err := dispatch.NewRegistry(st, cat, true).Create(h.wctx, h.tn.ws, h.tn.member, dispatch.Input{URL: &hookURL})
	if err != nil {
		t.Fatal(err)
	}
	h.endpoint = ep.ID
	h.before = h.eventIDs()
	h.recv = startReceiver(t, addr, ep.Secret)
	setup := time.Since(start)

	var wg sync.WaitGroup
	const workers = 4
	for w := range workers {
		wg.Go(func() { h.worker(w) })
	}
	time.Sleep(300 * time.Millisecond)
	killing := time.Now()
	var restarts []time.Duration
	leasedAtKill, killedMidDelivery, aimed := 0, 0, 0
	for k := range kills {
		time.Sleep(time.Duration(200+mrand.IntN(900)) * time.Millisecond)
		victim := c.replicas[mrand.IntN(len(c.replicas))]
		if k%2 == 0 {
			// Every other kill point waits for a delivery in flight: a replica holding the endpoint's
			// lease with deliveries pending, which it is sending. Half of them kill that replica, so
			// that kills land mid-delivery, the other half the other one.
			aimed++
			if holder, found := h.waitDelivering(hookAimWait); !found {
				t.Errorf("kill point %d: no replica was delivering within %v", k, hookAimWait)
			} else if victim = holder; k%4 == 2 {
				victim = c.replicas[(holder.index+1)%len(c.replicas)]
			}
		}
		if n := h.delivering(victim); n > 0 {
			leasedAtKill += n
			killedMidDelivery++
		}
		victim.Signal(syscall.SIGKILL)
		h.kills.Add(1)
		t0 := time.Now()
		err := victim.Start(ctx)
		for retry := 0; err != nil && retry < 3; retry++ {
			// A replica that does not start again fails the test; it is started again (three times at
			// most) only so that the rest of the run still checks what it can.
			t.Errorf("kill %d: replica %d did not start: %v; starting it again", k, victim.index, err)
			time.Sleep(time.Second)
			err = victim.Start(ctx)
		}
		if err != nil {
			close(h.stop)
			wg.Wait()
			t.Fatalf("kill %d: restart replica %d: %v", k, victim.index, err)
		}
		restarts = append(restarts, time.Since(t0))
		if k%25 == 24 && k+1 < kills {
			t.Logf("%d of %d kill points, %v", k+1, kills, time.Since(killing).Round(time.Second))
		}
	}
	close(h.stop)
	wg.Wait()
	writing := time.Since(killing)
	slices.Sort(restarts)
	t.Logf("setup %v; %d SIGKILLs in %v (restart p50 %v, max %v); %d kills landed on a replica delivering (%d of its pending deliveries leased in all; %d kill points aimed); %d requests sent",
		setup.Round(time.Millisecond), kills, writing.Round(time.Millisecond), percentile(restarts, 50).Round(time.Millisecond),
		restarts[len(restarts)-1].Round(time.Millisecond), killedMidDelivery, leasedAtKill, aimed, h.sent.Load())
	if killedMidDelivery == 0 {
		t.Errorf("no kill landed on a replica delivering: the test did not kill mid-delivery")
	}

	settled := time.Now()
	if !h.settle() {
		h.dumpUndelivered()
	}
	t.Logf("every event numbered and delivered %v after the last write", time.Since(settled).Round(time.Millisecond))
	feed := h.readFeed()
	h.checkWrites(feed)
	h.checkReceived(feed)
	t.Logf("webhooks kill test (%s form) took %v", map[bool]string{false: "short", true: "long"}[*long], time.Since(start).Round(time.Millisecond))
}

// hookRun is the state of TestWebhooksSurviveKills.
type hookRun struct {
	c        *cluster
	t        *testing.T
	tn       tenant
	st       store.Store     // the test's own connection, for the checks against the database
	wctx     context.Context // scoped to the tenant's workspace (row-level security)
	endpoint string
	before   map[string]bool // events of the workspace before the endpoint existed (none expected)
	recv     *receiver
	stop     chan struct{}
	kills    atomic.Int64
	sent     atomic.Int64

	mu     sync.Mutex
	chains []*hookChain
}

// hookChain is a record's writes: a create, then one to three updates, each sent once the one before
// is acknowledged. A write given up ends its chain.
type hookChain struct {
	name string
	id   string // from the create's answer
	ops  []*hookOp
}

// hookOp is one idempotent write.
type hookOp struct {
	kind string // "create" or "update"
	n    int    // an update's number: it sets description "update n"
	key  string
	body map[string]any
	// acked: a 2xx came back. abandoned: an attempt went unanswered and the client gave up (it may have
	// committed). Neither: never sent.
	acked, abandoned          bool
	attempts, unanswered, off int // off: 503 answers
}

func (o *hookOp) sentOnce() bool { return o.attempts > 0 }

func (h *hookRun) worker(w int) {
	for n := 0; ; n++ {
		select {
		case <-h.stop:
			return
		default:
		}
		ch := &hookChain{name: fmt.Sprintf("Hook %s w%d-%d", h.c.runID, w, n)}
		key := func(j int) string { return fmt.Sprintf("hook-%s-w%d-%d-%d", h.c.runID, w, n, j) }
		ch.ops = append(ch.ops, &hookOp{kind: "create", key: key(0), body: map[string]any{"name": ch.name, "employee_count": 0}})
		for j := 1; j <= 1+mrand.IntN(3); j++ {
			ch.ops = append(ch.ops, &hookOp{kind: "update", n: j, key: key(j), body: map[string]any{"employee_count": j, "description": fmt.Sprintf("update %d", j)}})
		}
		h.mu.Lock()
		h.chains = append(h.chains, ch)
		h.mu.Unlock()
		for _, o := range ch.ops {
			time.Sleep(hookPause)
			if h.send(ch, o); !o.acked {
				break
			}
		}
	}
}

// send sends o, round-robin over the replicas, until a definitive answer; after an unanswered attempt
// (its replica was killed) it gives up half the time, leaving o unacknowledged.
func (h *hookRun) send(ch *hookChain, o *hookOp) {
	t := h.t
	method, path, want := "POST", "/v1/companies", 201
	if o.kind == "update" {
		method, path, want = "PATCH", "/v1/companies/"+ch.id, 200
	}
	first := time.Now()
	for {
		if time.Since(first) > time.Minute {
			t.Errorf("%s %s: no definitive answer within a minute (%d attempts)", o.kind, o.key, o.attempts)
			o.abandoned = true
			return
		}
		o.attempts++
		h.sent.Add(1)
		r, err := h.c.call(t, h.c.next(), h.tn.key, method, path, o.body, "Idempotency-Key", o.key)
		switch {
		case err != nil:
			o.unanswered++
			if mrand.IntN(2) == 0 {
				o.abandoned = true
				return
			}
			time.Sleep(20 * time.Millisecond)
		case r.Status == 503:
			o.off++
			time.Sleep(50 * time.Millisecond)
		case r.Status == 409 && r.code() == "idempotency_key_in_use":
			// A killed replica's claim, until it counts as dead (idempotency.DeadAfter).
			if o.unanswered == 0 && o.off == 0 {
				t.Errorf("%s %s: 409 idempotency_key_in_use though no earlier attempt went unanswered", o.kind, o.key)
			}
			time.Sleep(100 * time.Millisecond)
		case r.Status == want:
			o.acked = true
			d := r.data()
			if o.kind == "create" {
				ch.id, _ = d["id"].(string)
				if d["name"] != ch.name || ch.id == "" {
					t.Errorf("create %s answered %v", o.key, r)
				}
			} else if d["id"] != ch.id || d["description"] != o.body["description"] {
				t.Errorf("update %s answered %v", o.key, r)
			}
			return
		default:
			t.Errorf("%s %s: %v", o.kind, o.key, r)
			o.abandoned = true
			return
		}
	}
}

// count runs a count query in the tenant's workspace.
func (h *hookRun) count(query string, args ...any) int {
	var n int
	if _, err := store.QueryOne(h.wctx, h.st, h.st.Dialect().Bind(query, args...), func(row []any) error {
		n = int(store.Int(row[0]))
		return nil
	}); err != nil {
		h.t.Errorf("%s: %v", query, err)
	}
	return n
}

// leaseHolders maps the process id of each replica holding an endpoint's lease now to the number of
// that endpoint's pending deliveries, which it is sending (a replica leases an endpoint and sends its
// pending deliveries in order). The lease names the replica's server_instances row, which has its pid.
func (h *hookRun) leaseHolders() map[int]int {
	out := map[int]int{}
	if err := h.st.Query(h.wctx, h.st.Dialect().Bind(`SELECT i.pid, count(*) FROM webhook_deliveries d
JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN server_instances i ON i.id = e.lease_owner
WHERE d.workspace_id = ? AND d.state = 'pending' AND e.lease_until > ? GROUP BY i.pid`, h.tn.ws, time.Now().UTC()), func(row []any) error {
		out[int(store.Int(row[0]))] = int(store.Int(row[1]))
		return nil
	}); err != nil {
		h.t.Errorf("read the webhook leases: %v", err)
	}
	return out
}

// delivering returns how many pending deliveries r holds the lease of now (0: it is not delivering).
func (h *hookRun) delivering(r *replica) int { return h.leaseHolders()[r.Pid()] }

// waitDelivering waits (at most wait) until a replica is delivering and returns it, or nil and false.
// A lease a killed process left (until it passes) names no running replica and is not waited for.
func (h *hookRun) waitDelivering(wait time.Duration) (*replica, bool) {
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		holders := h.leaseHolders()
		for _, r := range h.c.replicas {
			if holders[r.Pid()] > 0 {
				return r, true
			}
		}
	}
	return nil, false
}

func (h *hookRun) eventIDs() map[string]bool {
	out := map[string]bool{}
	if err := h.st.Query(h.wctx, h.st.Dialect().Bind("SELECT id FROM events WHERE workspace_id = ?", h.tn.ws), func(row []any) error {
		out[store.UUIDText(row[0])] = true
		return nil
	}); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// settle waits (at most hookSettle) until every event of the workspace is numbered and has a delivered
// delivery to the endpoint.
func (h *hookRun) settle() bool {
	deadline := time.Now().Add(hookSettle)
	for {
		unnumbered := h.count("SELECT count(*) FROM event_queue WHERE workspace_id = ?", h.tn.ws)
		undelivered := h.count(`SELECT count(*) FROM event_numbers e WHERE e.workspace_id = ? AND NOT EXISTS
  (SELECT 1 FROM webhook_deliveries d WHERE d.workspace_id = e.workspace_id AND d.endpoint_id = ? AND d.event_id = e.event_id AND d.state = 'delivered')`, h.tn.ws, h.endpoint)
		if unnumbered == 0 && undelivered <= len(h.before) {
			return true
		}
		if time.Now().After(deadline) {
			h.t.Errorf("%v after the last write: %d events unnumbered, %d numbered without a delivered delivery", hookSettle, unnumbered, undelivered)
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// dumpUndelivered logs, for a failure's report, the events without a delivered delivery and their
// deliveries.
func (h *hookRun) dumpUndelivered() {
	n := 0
	_ = h.st.Query(h.wctx, h.st.Dialect().Bind(`SELECT e.id, n.seq, e.type, d.id, d.state, d.attempts, d.next_at, w.lease_owner, w.lease_until, d.last_outcome, d.last_error
FROM events e LEFT JOIN event_numbers n ON n.workspace_id = e.workspace_id AND n.event_id = e.id
LEFT JOIN webhook_deliveries d ON d.workspace_id = e.workspace_id AND d.event_id = e.id
LEFT JOIN webhook_endpoints w ON w.id = d.endpoint_id
WHERE e.workspace_id = ? AND NOT EXISTS (SELECT 1 FROM webhook_deliveries x WHERE x.workspace_id = e.workspace_id AND x.event_id = e.id AND x.state = 'delivered')
ORDER BY n.seq NULLS FIRST LIMIT 20`, h.tn.ws), func(row []any) error {
		n++
		h.t.Logf("undelivered: event %s seq %v %s; delivery %v state %v attempts %v next_at %v lease %v until %v; last %v %v",
			store.UUIDText(row[0]), row[1], store.Text(row[2]), row[3], row[4], row[5], row[6], row[7], row[8], row[9], row[10])
		return nil
	})
	h.t.Logf("(%d rows shown; now %v)", n, time.Now().UTC())
}

// hookEvent is one event of the feed, or of a webhook's body.
type hookEvent struct {
	ID        string         `json:"id"`
	Sequence  int64          `json:"sequence"`
	Type      string         `json:"type"`
	RecordID  *string        `json:"record_id"`
	Data      map[string]any `json:"data"`
	CreatedAt time.Time      `json:"created_at"`
}

// readFeed reads the whole feed through GET /v1/events, page by page, alternating the replicas, and
// checks its sequences are 1..N.
func (h *hookRun) readFeed() []hookEvent {
	t := h.t
	var all []hookEvent
	cursor := "start"
	for page := 0; ; page++ {
		r := h.c.do(t, page%len(h.c.replicas), h.tn.key, "GET", "/v1/events?limit=97&cursor="+cursor, nil)
		if r.Status != 200 {
			t.Fatalf("GET /v1/events: %v", r)
		}
		var p struct {
			Data []hookEvent `json:"data"`
			Meta struct {
				NextCursor string `json:"next_cursor"`
				HasMore    bool   `json:"has_more"`
			} `json:"meta"`
		}
		if err := json.Unmarshal(r.Raw, &p); err != nil || p.Meta.NextCursor == "" {
			t.Fatalf("GET /v1/events: %v: %.300s", err, r.Raw)
		}
		all = append(all, p.Data...)
		if !p.Meta.HasMore {
			break
		}
		cursor = p.Meta.NextCursor
	}
	gaps := 0
	for i, e := range all {
		if e.Sequence != int64(i+1) {
			if gaps++; gaps <= 10 {
				t.Errorf("event %d of the feed (%s %s) has sequence %d, want %d", i, e.Type, e.ID, e.Sequence, i+1)
			}
		}
	}
	if n := h.count("SELECT count(*) FROM events WHERE workspace_id = ?", h.tn.ws); n != len(all) {
		t.Errorf("the feed holds %d events, the events table %d", len(all), n)
	}
	return all
}

// checkWrites compares the feed with the writes and the database: one companies.created event per
// record stored, one companies.updated event (by its description) per update acknowledged or
// committed, and no other event of a company.
func (h *hookRun) checkWrites(feed []hookEvent) {
	t := h.t
	type row struct{ id, description string }
	stored := map[string]row{} // name -> record
	if err := h.st.Query(h.wctx, h.st.Dialect().Bind("SELECT name, id, description FROM rec_companies WHERE workspace_id = ? AND name LIKE ?", h.tn.ws, "Hook "+h.c.runID+" %"), func(r []any) error {
		stored[store.Text(r[0])] = row{id: store.UUIDText(r[1]), description: store.Text(r[2])}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	type key struct{ record, typ, description string }
	got := map[key]int{}
	other := map[string]int{}
	for _, e := range feed {
		if e.RecordID == nil || !strings.HasPrefix(e.Type, "companies.") {
			other[e.Type]++
			continue
		}
		d, _ := e.Data["description"].(string)
		if e.Type == "companies.created" {
			d = ""
		}
		got[key{*e.RecordID, e.Type, d}]++
	}
	want := map[key]int{}
	var acked, committedUnacked, rolledBack, unsent int
	for _, ch := range h.chains {
		rec, exists := stored[ch.name]
		for _, o := range ch.ops {
			if !o.sentOnce() {
				unsent++
				continue
			}
			committed := o.acked
			if o.kind == "create" {
				if o.acked && (!exists || rec.id != ch.id) {
					t.Errorf("acknowledged create %s (record %s) is stored as %+v", o.key, ch.id, rec)
				}
				committed = exists
			} else if o.abandoned {
				// The chain ends with it: the record shows it when it committed.
				committed = rec.description == o.body["description"]
			}
			switch {
			case o.acked:
				acked++
			case committed:
				committedUnacked++
			default:
				rolledBack++
			}
			if !exists {
				continue // no record, so no event of it can be told apart: counted below
			}
			k := key{rec.id, "companies.created", ""}
			if o.kind == "update" {
				k = key{rec.id, "companies.updated", o.body["description"].(string)}
			}
			if committed {
				want[k]++
			} else {
				want[k] += 0 // listed: an event of it is one too many
			}
		}
	}
	if len(stored) > len(h.chains) {
		t.Errorf("%d records stored for %d chains", len(stored), len(h.chains))
	}
	bad := 0
	for k, n := range want {
		if got[k] != n {
			if bad++; bad <= 20 {
				t.Errorf("record %s: %d %s events (%q), want %d", k.record, got[k], k.typ, k.description, n)
			}
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			if bad++; bad <= 20 {
				t.Errorf("record %s: %d %s events (%q) of no write this test acknowledged or the database holds", k.record, n, k.typ, k.description)
			}
		}
	}
	if bad > 20 {
		t.Errorf("%d (record, event) counts wrong in all", bad)
	}
	if len(other) > 0 {
		t.Errorf("events of no company write: %v", other)
	}
	t.Logf("%d chains, %d records; writes: %d acknowledged, %d unacknowledged but committed, %d unacknowledged and rolled back (no event), %d never sent; feed: %d events",
		len(h.chains), len(stored), acked, committedUnacked, rolledBack, unsent, len(feed))
}

// checkReceived checks the receiver's lines against the feed: each verified, every event (apart from
// those older than the endpoint) received at least once, the first receipts in sequence order; and
// reports duplicates and the delivery lag.
func (h *hookRun) checkReceived(feed []hookEvent) {
	t := h.t
	lines := h.recv.lines(t)
	firstAt := map[string]time.Time{}
	ids := map[string]int{} // webhook-id -> lines
	var order []string      // event ids in the order of their first receipt
	unverified := 0
	for i, l := range lines {
		if !l.Verified || l.Status != 200 {
			if unverified++; unverified <= 10 {
				t.Errorf("receiver line %d: webhook %s verified %v status %d: %s", i, l.WebhookID, l.Verified, l.Status, l.Error)
			}
			continue
		}
		ids[l.WebhookID]++
		if l.Body.ID == "" || l.Body.ID != l.WebhookID {
			t.Errorf("receiver line %d: webhook-id %s for event %q", i, l.WebhookID, l.Body.ID)
		}
		if _, ok := firstAt[l.Body.ID]; !ok {
			firstAt[l.Body.ID] = l.ReceivedAt
			order = append(order, l.Body.ID)
		}
	}
	seqOf := map[string]int64{}
	var lags []time.Duration
	missing := 0
	for _, e := range feed {
		seqOf[e.ID] = e.Sequence
		if h.before[e.ID] {
			continue
		}
		at, ok := firstAt[e.ID]
		if !ok {
			if missing++; missing <= 20 {
				t.Errorf("event %d (%s %s) never reached the receiver", e.Sequence, e.Type, e.ID)
			}
			continue
		}
		lags = append(lags, at.Sub(e.CreatedAt))
	}
	if missing > 20 {
		t.Errorf("%d events never reached the receiver", missing)
	}
	var last int64
	for _, id := range order {
		s, ok := seqOf[id]
		if !ok {
			t.Errorf("the receiver got event %s, which is not in the feed", id)
			continue
		}
		if s < last {
			t.Errorf("event %d first reached the receiver after event %d: the endpoint's order is broken", s, last)
		}
		last = max(last, s)
	}
	dupIDs, dupLines := 0, 0
	for _, n := range ids {
		if n > 1 {
			dupIDs++
			dupLines += n - 1
		}
	}
	slices.Sort(lags)
	var maxLag time.Duration
	if len(lags) > 0 {
		maxLag = lags[len(lags)-1]
	}
	var deliveries, attempts int
	states, outcomes := map[string]int{}, map[string]int{}
	_ = h.st.Query(h.wctx, h.st.Dialect().Bind("SELECT state, count(*) FROM webhook_deliveries WHERE workspace_id = ? GROUP BY state", h.tn.ws), func(r []any) error {
		states[store.Text(r[0])] = int(store.Int(r[1]))
		deliveries += int(store.Int(r[1]))
		return nil
	})
	_ = h.st.Query(h.wctx, h.st.Dialect().Bind("SELECT outcome, count(*) FROM webhook_attempts WHERE workspace_id = ? GROUP BY outcome", h.tn.ws), func(r []any) error {
		outcomes[store.Text(r[0])] = int(store.Int(r[1]))
		attempts += int(store.Int(r[1]))
		return nil
	})
	if deliveries != len(feed)-len(h.before) || states[dispatch.StateDelivered] != deliveries {
		t.Errorf("%d deliveries %v for %d events", deliveries, states, len(feed)-len(h.before))
	}
	t.Logf("receiver: %d requests for %d events (%d before the endpoint); %d duplicate deliveries (%d events received more than once); %d attempts logged %v, so %d requests made by a replica killed before it logged them; delivery lag p50 %v, p99 %v, max %v",
		len(lines), len(firstAt), len(h.before), dupLines, dupIDs, attempts, outcomes, len(lines)-attempts,
		percentile(lags, 50).Round(time.Millisecond), percentile(lags, 99).Round(time.Millisecond), maxLag.Round(time.Millisecond))
}

// receiver is tools/webhookrecv, run as its own program.
type receiver struct {
	cmd *exec.Cmd
	out string // its JSON lines
	log *proc.Buffer
}

// receivedLine is one line of the receiver's output.
type receivedLine struct {
	WebhookID  string    `json:"webhook_id"`
	Verified   bool      `json:"verified"`
	Error      string    `json:"error"`
	Status     int       `json:"status"`
	Body       hookEvent `json:"body"`
	ReceivedAt time.Time `json:"received_at"`
}

// startReceiver builds tools/webhookrecv (unless RECORDS_TEST_BIN holds it) and starts it on addr,
// verifying with secret; it stops at the end of the test.
func startReceiver(t *testing.T, addr, secret string) *receiver {
	t.Helper()
	bin := filepath.Join(binDir, "webhookrecv")
	if _, err := os.Stat(bin); err != nil {
		bin = filepath.Join(t.TempDir(), "webhookrecv")
		build := exec.Command("go", "build", "-o", bin, "./tools/webhookrecv")
		build.Dir = servertest.RepoDir()
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build webhookrecv: %v\n%s", err, out)
		}
	}
	r := &receiver{out: filepath.Join(t.TempDir(), "received.jsonl"), log: &proc.Buffer{}}
	// Each answer waits a little, as a real receiver's would: a delivery stays in flight long enough for
	// a kill to land between its receipt and its log.
	r.cmd = exec.Command(bin, "-listen", addr, "-secret", secret, "-out", r.out, "-delay", hookReceiverDelay.String())
	r.cmd.Stderr = r.log
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		if err := r.cmd.Wait(); err != nil {
			t.Errorf("webhookrecv: %v\n%s", err, r.log.Tail())
		}
	})
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- strings.TrimSpace(line)
	}()
	select {
	case line := <-first:
		if line != "listening on http://"+addr {
			t.Fatalf("webhookrecv says %q, want listening on http://%s\n%s", line, addr, r.log.Tail())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("webhookrecv did not listen within 30 s\n%s", r.log.Tail())
	}
	return r
}

// lines reads the receiver's output so far.
func (r *receiver) lines(t *testing.T) []receivedLine {
	t.Helper()
	data, err := os.ReadFile(r.out)
	if err != nil {
		t.Fatal(err)
	}
	var out []receivedLine
	for i, s := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if s == "" {
			continue
		}
		var l receivedLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Errorf("receiver line %d: %v: %.300s", i, err, s)
			continue
		}
		out = append(out, l)
	}
	return out
}
