package server_test

// Webhooks (README "Webhooks"): signed deliveries of the change feed's events to a real receiver,
// retries, order, the owner's permissions, SSRF refusal, and an endpoint disabled after a day of
// failures.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/webhooks"
)

// hookReceiver is a real HTTP receiver that verifies every request with its endpoint's secret.
type hookReceiver struct {
	*httptest.Server
	clock    func() time.Time // the dispatcher's: webhook-timestamp is checked against it
	mu       sync.Mutex
	secret   string
	got      []received
	failNext atomic.Int32 // answer 500 to this many requests
	always   atomic.Bool  // answer 500 to every request
}

type received struct {
	id       string
	verified bool
	status   int
	event    map[string]any
	at       time.Time
}

func newHookReceiver(t *testing.T, clock func() time.Time) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{clock: clock}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		secret := rc.secret
		rc.mu.Unlock()
		got := received{id: r.Header.Get("webhook-id"), at: time.Now(), status: http.StatusNoContent}
		got.verified = webhooks.Verify([]string{secret}, r.Header, body, rc.clock(), 0) == nil
		_ = json.Unmarshal(body, &got.event)
		if rc.always.Load() || rc.failNext.Add(-1) >= 0 {
			got.status = http.StatusInternalServerError
		}
		rc.mu.Lock()
		rc.got = append(rc.got, got)
		rc.mu.Unlock()
		w.WriteHeader(got.status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *hookReceiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// await waits up to d for cond on the requests so far.
func (rc *hookReceiver) await(t *testing.T, d time.Duration, what string, cond func([]received) bool) []received {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := rc.requests()
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; received %d requests", what, d, len(got))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// offsetClock is a clock a test moves forward.
type offsetClock struct{ off atomic.Int64 }

func (c *offsetClock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *offsetClock) advance(d time.Duration) { c.off.Add(int64(d)) }

// newEndpoint makes an endpoint of e's workspace owned by member, posting to rc.
func newEndpoint(t *testing.T, e *servertest.Env, member string, rc *hookReceiver, in dispatch.Input) dispatch.Endpoint {
	t.Helper()
	return newEndpointIn(t, e, e.Workspace, member, rc, in)
}

// newEndpointIn makes an endpoint of workspace owned by member, posting to rc.
func newEndpointIn(t *testing.T, e *servertest.Env, workspace, member string, rc *hookReceiver, in dispatch.Input) dispatch.Endpoint {
	t.Helper()
	u := rc.URL
	in.URL = &u
	ep, err := e.Server.Backend().Webhooks.Create(context.Background(), workspace, member, in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("secret %q", ep.Secret)
	}
	rc.mu.Lock()
	rc.secret = ep.Secret
	rc.mu.Unlock()
	return ep
}

// untilDone brings ep's retries forward (retryNow) until done holds for its deliveries (at most 60 s).
func untilDone(t *testing.T, e *servertest.Env, clock *offsetClock, ep dispatch.Endpoint, done func([]dispatch.Delivery) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ds, err := e.Server.Backend().Webhooks.Deliveries(context.Background(), e.Workspace, ep.ID, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if done(ds) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries of %s not done within 60 s: %+v", ep.URL, ds)
		}
		// Only a delivery whose failed attempt is recorded has its next time.
		if len(ds) > 0 && ds[0].State == dispatch.StatePending && len(ds[0].Attempts) > 0 {
			retryNow(t, e, clock, ep)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// retryNow moves the clock to the next attempt of ep's pending delivery and wakes the dispatcher.
func retryNow(t *testing.T, e *servertest.Env, clock *offsetClock, ep dispatch.Endpoint) bool {
	t.Helper()
	ds, err := e.Server.Backend().Webhooks.Deliveries(context.Background(), e.Workspace, ep.ID, dispatch.StatePending, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) == 0 {
		return false
	}
	if wait := ds[len(ds)-1].NextAttempt.Sub(clock.now()); wait > 0 {
		clock.advance(wait + time.Millisecond)
	}
	e.Server.Backend().Dispatcher.Kick()
	return true
}

func TestWebhookDelivery(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			clock := &offsetClock{}
			e := servertest.Start(t, b, servertest.Options{WebhookClock: clock.now})
			rc := newHookReceiver(t, clock.now)
			ep := newEndpoint(t, e, e.Member, rc, dispatch.Input{EventTypes: &[]string{"companies.created", "companies.updated"}})

			// A receiver that answers 500 three times gets the event on the fourth attempt, each signed,
			// with the same webhook-id.
			rc.failNext.Store(3)
			id := e.Do("POST", "/v1/companies", map[string]any{"name": "Hooked"}).Data()["id"].(string)
			// Bring each retry's time (the schedule's 5 s, 5 min, 30 min) until the delivery is done.
			untilDone(t, e, clock, ep, func(ds []dispatch.Delivery) bool { return len(ds) == 1 && ds[0].State == dispatch.StateDelivered })
			got := rc.requests()
			if len(got) != 4 || got[3].status != http.StatusNoContent {
				t.Fatalf("%d requests: %+v", len(got), got)
			}
			for _, r := range got {
				if !r.verified || r.id != got[0].id || r.event["record_id"] != id || r.event["type"] != "companies.created" {
					t.Errorf("request %+v", r)
				}
			}
			ds, err := e.Server.Backend().Webhooks.Deliveries(context.Background(), e.Workspace, ep.ID, "", 10)
			if err != nil || len(ds) != 1 || ds[0].State != dispatch.StateDelivered || len(ds[0].Attempts) != 4 {
				t.Fatalf("deliveries %+v %v", ds, err)
			}
			for i, a := range ds[0].Attempts {
				want := "http_error"
				if i == 3 {
					want = "delivered"
				}
				if a.Outcome != want || a.N != i+1 || a.Status == nil {
					t.Errorf("attempt %d: %+v", i+1, a)
				}
			}

			// Healthy: each write's signed POST arrives within a second, in sequence order; events the
			// endpoint does not take (archive) are not sent.
			before := len(rc.requests())
			start := time.Now()
			e.Expect(e.Do("PATCH", "/v1/companies/"+id, map[string]any{"name": "Hooked 2"}), 200, "")
			e.Expect(e.Do("DELETE", "/v1/companies/"+id, nil), 200, "")
			for i := range 5 {
				e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Burst " + string(rune('a'+i))}), 201, "")
			}
			got = rc.await(t, 5*time.Second, "six deliveries", func(got []received) bool { return len(got) >= before+6 })
			if d := got[before].at.Sub(start); d > time.Second {
				t.Errorf("the update's delivery arrived %v after the write", d)
			}
			var last float64
			for _, r := range got[before:] {
				seq, _ := r.event["sequence"].(float64)
				if !r.verified || seq <= last || r.event["type"] == "companies.archived" {
					t.Errorf("delivery out of order, unverified or not taken: %+v", r)
				}
				last = seq
			}
			time.Sleep(100 * time.Millisecond)
			if n := len(rc.requests()); n != before+6 {
				t.Errorf("%d deliveries, want %d", n, before+6)
			}
		})
	}
}

// The payload is the event as the endpoint's owner may read it; an endpoint cannot name an internal
// address unless the setting allows it; a day of failures disables the endpoint with a notice.
func TestWebhookAccessAndFailure(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			clock := &offsetClock{}
			e := servertest.Start(t, b, servertest.Options{WebhookClock: clock.now})
			// Owned by a member: deals are owned-only, annual_revenue is masked.
			alice := e.NewMember("alice@x.example", "member", "")
			aliceKey := e.NewKey(alice, auth.KeyOptions{Access: "write"})
			rc := newHookReceiver(t, clock.now)
			newEndpoint(t, e, alice, rc, dispatch.Input{Resources: &[]string{"deals", "companies"}})
			e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": "Admin deal"}), 201, "")
			aliceDeal := e.DoKey(aliceKey, "POST", "/v1/deals", map[string]any{"name": "Alice deal"}).Data()["id"].(string)
			co := e.Do("POST", "/v1/companies", map[string]any{"name": "Rich", "annual_revenue": 987654321}).Data()["id"].(string)
			got := rc.await(t, 5*time.Second, "alice's deliveries", func(got []received) bool {
				for _, r := range got {
					if r.event["record_id"] == co {
						return true
					}
				}
				return false
			})
			for _, r := range got {
				raw, _ := json.Marshal(r.event)
				switch {
				case r.event["resource"] == "deals" && r.event["record_id"] != aliceDeal:
					t.Errorf("alice's endpoint received the admin's deal: %s", raw)
				case strings.Contains(string(raw), "987654321"):
					t.Errorf("alice's endpoint received the masked revenue: %s", raw)
				}
			}

			// SSRF: without the setting, an internal address is refused when the endpoint is made.
			strict := servertest.Start(t, b, servertest.Options{RefusePrivateWebhooks: true})
			for _, u := range []string{"http://127.0.0.1:9/x", "http://169.254.169.254/latest", "http://[::1]/", "ftp://example.com/", "http://10.0.0.7/"} {
				_, err := strict.Server.Backend().Webhooks.Create(context.Background(), strict.Workspace, strict.Member, dispatch.Input{URL: &u})
				var fe field.ErrorList
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), "url") {
					t.Errorf("endpoint %s: %v", u, err)
				}
			}

			// A receiver down for a simulated day: every attempt of the schedule fails, the endpoint ends
			// disabled, and a webhook_endpoints.disabled notice is in the feed (for the admin).
			down := newHookReceiver(t, clock.now)
			down.always.Store(true)
			dep := newEndpoint(t, e, e.Member, down, dispatch.Input{EventTypes: &[]string{"contacts.created"}})
			e.Expect(e.Do("POST", "/v1/contacts", map[string]any{"first_name": "Down", "last_name": "Day"}), 201, "")
			start := clock.now()
			untilDone(t, e, clock, dep, func(ds []dispatch.Delivery) bool { return len(ds) == 1 && ds[0].State == dispatch.StateFailed })
			if got := len(down.requests()); got != webhooks.MaxAttempts {
				t.Errorf("the receiver got %d attempts, want %d", got, webhooks.MaxAttempts)
			}
			if span := clock.now().Sub(start); span < 20*time.Hour || span > 40*time.Hour {
				t.Errorf("the schedule spanned %v, want about a day", span)
			}
			after, err := e.Server.Backend().Webhooks.Get(context.Background(), e.Workspace, dep.ID)
			if err != nil || after.Enabled || !strings.Contains(after.DisabledReason, "failed") {
				t.Errorf("endpoint after a day of failures: %+v %v", after, err)
			}
			notice := awaitEvent(t, e, "&type=webhook_endpoints.disabled", dep.ID, "webhook_endpoints.disabled")
			if len(notice) != 1 {
				t.Errorf("notices %v", notice)
			}
			// Alice does not manage the API and does not own the endpoint: she does not see the notice.
			if got, _ := feed(t, e, aliceKey, "start", "&type=webhook_endpoints.disabled", 10); len(got) != 0 {
				t.Errorf("alice reads another member's endpoint notice: %v", got)
			}
		})
	}
}
