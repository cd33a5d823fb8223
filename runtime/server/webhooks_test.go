package server_test

// Webhooks (README "Webhooks"): signed deliveries of the change feed's events to a real receiver,
// retries, order, the owner's permissions, SSRF refusal, and an endpoint disabled after a day of
// failures.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
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
	// d under RECORDS_TIMING=strict; in make test at least 20 s (servertest.Budget): a wait for an
	// event, which only a delivery that never comes should exhaust.
	deadline := time.Now().Add(servertest.Budget(d, 20*time.Second))
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
			// Within a second under RECORDS_TIMING=strict; 10 s in make test (servertest.Budget; measured
			// 0.1–0.4 s alone, 1.3 s in a make test on a loaded machine).
			if d, bound := got[before].at.Sub(start), servertest.Budget(time.Second, 10*time.Second); d > bound {
				t.Errorf("the update's delivery arrived %v after the write (bound %v)", d, bound)
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
			// The same over the admin API: 422 naming the url.
			strictAdmin := strict.NewKey(strict.Member, auth.KeyOptions{Access: auth.AccessAdmin})
			for _, u := range []string{"http://127.0.0.1:9/x", "http://169.254.169.254/latest/meta-data", "http://[::1]/x", "http://10.0.0.8/hook"} {
				res := strict.DoKey(strictAdmin, "POST", "/v1/admin/webhooks", map[string]any{"url": u})
				strict.Expect(res, 422, "validation_failed")
				if errs, _ := res.Body["error"].(map[string]any)["details"].(map[string]any)["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["field"] != "url" {
					t.Errorf("webhook to %s: %s; want one error naming url", u, res.Raw)
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

// ownershipRow is one request of the webhook ownership matrix on an endpoint the owner made, and who
// besides the owner (who may make every one) may make it: a manager whose role is narrower than the
// owner's, one with the owner's role, and one whose role is broader.
type ownershipRow struct {
	name                    string
	body                    func(rc *hookReceiver, owner string) any
	narrower, same, broader bool
}

// webhookOwnershipRows are the rows of the matrix by route label; every admin webhook route of the table
// must have at least one, so a new webhook action says who may take it before it ships.
var webhookOwnershipRows = map[string][]ownershipRow{
	"admin.webhooks.list": {{name: "list", narrower: true, same: true, broader: true}},
	"admin.webhooks.get":  {{name: "get", narrower: true, same: true, broader: true}},
	"admin.webhooks.create": {{name: "create one the owner owns", narrower: false, same: false, broader: false,
		body: func(rc *hookReceiver, owner string) any {
			return map[string]any{"url": rc.URL + "/made-for", "member_id": owner}
		}}},
	"admin.webhooks.update": {
		{name: "disable, describe and filter", narrower: true, same: true, broader: true,
			body: func(*hookReceiver, string) any {
				return map[string]any{"description": "changed", "enabled": false, "event_types": []string{"companies.created"}, "resources": []string{"companies"}}
			}},
		{name: "enable", narrower: true, same: true, broader: true,
			body: func(*hookReceiver, string) any { return map[string]any{"enabled": true} }},
		{name: "point at a new url", narrower: false, same: false, broader: false,
			body: func(rc *hookReceiver, _ string) any { return map[string]any{"url": rc.URL + "/elsewhere"} }},
	},
	"admin.webhooks.delete": {{name: "delete", narrower: true, same: true, broader: true}},
	"admin.webhooks.rotate_secret": {{name: "rotate the secret", narrower: false, same: false, broader: false,
		body: func(*hookReceiver, string) any { return map[string]any{"overlap": "0s"} }}},
	"admin.webhooks.deliveries": {{name: "read the delivery log", narrower: false, same: false, broader: false}},
	"admin.webhooks.replay": {{name: "replay", narrower: false, same: false, broader: false,
		body: func(*hookReceiver, string) any { return map[string]any{"after": 0} }}},
}

// endpointSecret reads endpoint id's URL and signing secret from the database.
func endpointSecret(t *testing.T, e *servertest.Env, id string) (url, secret string) {
	t.Helper()
	st := e.Server.Backend().Store
	found, err := store.QueryOne(store.WithWorkspace(context.Background(), e.Workspace), st,
		st.Dialect().Bind("SELECT url, secret FROM webhook_endpoints WHERE workspace_id = ? AND id = ?", e.Workspace, id), func(row []any) error {
			url, secret = store.Text(row[0]), store.Text(row[1])
			return nil
		})
	if err != nil || !found {
		t.Fatalf("endpoint %s: found %v, %v", id, found, err)
	}
	return url, secret
}

// TestAdminWebhookOwnershipMatrix: every admin webhook route of the route table, on an endpoint owned by
// a manager, from its owner and from three other managers — a narrower role (reads deals only when they
// own them, amounts hidden), the owner's role, and a broader one (admin). Allowed: 2xx. Refused: 403
// permission_denied in the envelope, no audit entry, and the endpoint's URL, secret, settings and
// deliveries as they were. A non-owner lists, reads (never the secret), disables, enables, describes,
// filters and deletes; only the owner makes an endpoint owned by them, points it at a new URL, rotates its
// secret, replays to it or reads its delivery log.
func TestAdminWebhookOwnershipMatrix(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			be := e.Server.Backend()
			const roles = `version: 1
roles:
  manager:
    label: Manager
    permissions: [api.access, api.manage]
    resources: {"*": write}
    record_rules: {deals: department}
  lead:
    label: Lead
    permissions: [api.access, api.manage]
    resources: {"*": read, deals: write}
    record_rules: {deals: owned}
    field_rules: {deals: {amount: hidden}}
`
			if _, err := be.Members.PutRoles(ctx, e.Workspace, "roles.yaml", []byte(roles), true); err != nil {
				t.Fatal(err)
			}
			owner := e.NewMember("owner@hooks.example", "manager", "")
			actors := []struct {
				name, key string
				may       func(ownershipRow) bool
			}{
				{"owner", e.NewKey(owner, auth.KeyOptions{Access: auth.AccessAdmin}), func(ownershipRow) bool { return true }},
				{"narrower manager", e.NewKey(e.NewMember("lead@hooks.example", "lead", ""), auth.KeyOptions{Access: auth.AccessAdmin}), func(r ownershipRow) bool { return r.narrower }},
				{"same-role manager", e.NewKey(e.NewMember("peer@hooks.example", "manager", ""), auth.KeyOptions{Access: auth.AccessAdmin}), func(r ownershipRow) bool { return r.same }},
				{"broader manager", e.NewKey(e.Member, auth.KeyOptions{Access: auth.AccessAdmin}), func(r ownershipRow) bool { return r.broader }},
			}
			rc := newHookReceiver(t, time.Now)
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "In the feed"}), 201, "")

			var routes []route.Route
			for _, rt := range route.Fixed() {
				if rt.Endpoint == route.Admin && strings.HasPrefix(rt.Label, "admin.webhooks.") {
					routes = append(routes, rt)
				}
			}
			if len(routes) < 8 {
				t.Fatalf("%d admin webhook routes in the table", len(routes))
			}
			labels := map[string]bool{}
			for _, rt := range routes {
				labels[rt.Label] = true
				rows := webhookOwnershipRows[rt.Label]
				if len(rows) == 0 {
					t.Errorf("%s %s (%s): no row in the ownership matrix; say who besides the owner may take this action", rt.Method, rt.Path, rt.Label)
				}
				for _, row := range rows {
					for _, a := range actors {
						cell := fmt.Sprintf("%s (%s) by the %s", row.name, rt.Label, a.name)
						ep := newEndpoint(t, e, owner, rc, dispatch.Input{Description: ptr("owned")})
						url0, secret0 := endpointSecret(t, e, ep.ID)
						before, err := be.Webhooks.Get(ctx, e.Workspace, ep.ID)
						if err != nil {
							t.Fatal(err)
						}
						eps0, _ := be.Webhooks.List(ctx, e.Workspace)
						var body any
						if row.body != nil {
							body = row.body(rc, owner)
						}
						sent := time.Now()
						r := e.DoKey(a.key, rt.Method, strings.Replace(rt.Path, ":id", ep.ID, 1), body)
						if a.may(row) {
							if r.Status < 200 || r.Status > 299 {
								t.Errorf("%s: %d %s, want it allowed", cell, r.Status, r.Raw)
							}
							if a.name != "owner" && strings.Contains(string(r.Raw), "secret") {
								t.Errorf("%s: the answer names a secret: %s", cell, r.Raw)
							}
							continue
						}
						if r.Status != 403 || r.Code() != "permission_denied" {
							t.Errorf("%s: %d %s, want 403 permission_denied", cell, r.Status, r.Raw)
						}
						if _, audited := adminAuditOf(t, e, e.Workspace, r.Header.Get("X-Request-Id")); audited {
							t.Errorf("%s: the refused request was audited", cell)
						}
						if url, secret := endpointSecret(t, e, ep.ID); url != url0 || secret != secret0 {
							t.Errorf("%s: the refused request changed the endpoint's url or secret (url %s, was %s)", cell, url, url0)
						}
						if after, err := be.Webhooks.Get(ctx, e.Workspace, ep.ID); err != nil || !after.UpdatedAt.Equal(before.UpdatedAt) || after.Description != before.Description || after.Enabled != before.Enabled {
							t.Errorf("%s: the refused request changed the endpoint: %+v, was %+v (%v)", cell, after, before, err)
						}
						if ds, err := be.Webhooks.Deliveries(ctx, e.Workspace, ep.ID, "", 10); err != nil || len(eventsSince(t, ds, sent)) != 0 {
							// Only events written from the request on count: an earlier write's event that the
							// sequencer numbers after the endpoint exists is delivered to it, rightly (seen under load).
							t.Errorf("%s: the refused request queued deliveries: %+v (%v)", cell, ds, err)
						}
						if eps, _ := be.Webhooks.List(ctx, e.Workspace); len(eps) != len(eps0) {
							t.Errorf("%s: the refused request made an endpoint (%d, were %d)", cell, len(eps), len(eps0))
						}
					}
				}
			}
			for label := range webhookOwnershipRows {
				if !labels[label] {
					t.Errorf("the matrix has rows for %s, which is no admin webhook route of the table", label)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// eventsSince returns the deliveries of ds whose event was written at or after t (event ids are UUIDv7:
// their first 48 bits are the write's Unix milliseconds).
func eventsSince(t *testing.T, ds []dispatch.Delivery, since time.Time) []dispatch.Delivery {
	t.Helper()
	var out []dispatch.Delivery
	for _, d := range ds {
		id, err := uuid.Parse(d.EventID)
		if err != nil || id.Version() != 7 {
			t.Fatalf("event id %q is not a UUIDv7 (%v)", d.EventID, err)
		}
		sec, nsec := id.Time().UnixTime()
		if !time.Unix(sec, nsec).Before(since.Truncate(time.Millisecond)) {
			out = append(out, d)
		}
	}
	return out
}
