package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/webhooks"
)

// TestLagStats: nearest-rank percentiles of lags, each write paired with its own arrival, unarrived
// writes left out.
func TestLagStats(t *testing.T) {
	var ls []time.Duration
	for i := 100; i >= 1; i-- {
		ls = append(ls, time.Duration(i)*time.Millisecond)
	}
	s := lagsOf(ls)
	if s.n != 100 || s.p50 != 51*time.Millisecond || s.p90 != 91*time.Millisecond || s.p99 != 100*time.Millisecond || s.max != 100*time.Millisecond {
		t.Errorf("lagsOf: %+v", s)
	}
	if lagsOf(nil) != (lagStats{}) {
		t.Error("no lags: zero stats")
	}
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ws := []written{{"a", t0}, {"b", t0.Add(time.Second)}, {"c", t0.Add(2 * time.Second)}}
	by := map[string]arrival{
		"a": {at: t0.Add(30 * time.Millisecond), createdAt: t0.Add(-5 * time.Millisecond)},
		"b": {at: t0.Add(time.Second - time.Millisecond)}, // before the answer was read: negative, kept
	}
	answer, created := lags(ws, by)
	if len(answer) != 2 || answer[0] != 30*time.Millisecond || answer[1] != -time.Millisecond {
		t.Errorf("lags after the answer: %v", answer)
	}
	if len(created) != 1 || created[0] != 35*time.Millisecond {
		t.Errorf("lags after created_at: %v", created)
	}
	first, last := span([]arrival{by["b"], by["a"]})
	if !first.Equal(by["a"].at) || !last.Equal(by["b"].at) {
		t.Errorf("span %s – %s", first, last)
	}
}

// TestPaceSchedule: an open-loop schedule is evenly spaced from its start, rate × duration sends.
func TestPaceSchedule(t *testing.T) {
	t0 := time.Now()
	s := paceSchedule(t0, 500, 5*time.Second)
	if len(s) != 2500 || !s[0].Equal(t0) || s[1].Sub(s[0]) != 2*time.Millisecond || s[2499].Sub(t0) != 4998*time.Millisecond {
		t.Errorf("%d sends, first %s, gap %s, last at %s", len(s), s[0].Sub(t0), s[1].Sub(s[0]), s[len(s)-1].Sub(t0))
	}
	if paceSchedule(t0, 0, time.Second) != nil {
		t.Error("rate 0: no sends")
	}
}

// TestReceiver: a signed delivery is kept by record id, a second delivery of the same event counts as a
// duplicate, a forged or unsigned one is answered 401 and counted, and await returns what arrived.
func TestReceiver(t *testing.T) {
	secret, err := webhooks.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	r, err := startReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	r.addSecret(secret)
	post := func(id, record, key string) int {
		body := []byte(`{"id":"` + id + `","type":"companies.created","record_id":"` + record + `","created_at":"2026-11-25T10:00:00.5Z"}`)
		now := time.Now()
		sig, err := webhooks.Sign(key, id, now, body)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", r.url, bytes.NewReader(body))
		req.Header = webhooks.Headers(id, now, sig)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	other, _ := webhooks.NewSecret()
	for _, c := range []struct {
		id, record, key string
		want            int
	}{{"msg_1", "r1", secret, 204}, {"msg_1", "r1", secret, 204}, {"msg_2", "r2", secret, 204}, {"msg_3", "r3", other, 401}} {
		if got := post(c.id, c.record, c.key); got != c.want {
			t.Errorf("%s signed with the right key %v: %d, want %d", c.id, c.key == secret, got, c.want)
		}
	}
	got := r.await(context.Background(), []written{{"r1", time.Now()}, {"r2", time.Now()}, {"r3", time.Now()}}, 100*time.Millisecond)
	if len(got) != 2 || got[0].createdAt.Nanosecond() != 500_000_000 {
		t.Errorf("arrivals %+v", got)
	}
	if r.duplicates != 1 || r.rejected != 1 || !strings.Contains(r.firstErr, "signature") {
		t.Errorf("duplicates %d, rejected %d (%s)", r.duplicates, r.rejected, r.firstErr)
	}
}

// TestFeedTargets: the outbox on/off verdict per concurrency (median of rounds), delivery completeness
// and the 1 s p99 lag at the paced rate, and the report's section.
func TestFeedTargets(t *testing.T) {
	res := func(rate float64, p50 time.Duration) result {
		return result{N: int(rate), Elapsed: time.Second, P50: p50}
	}
	r := &report{backend: "postgres", phases: []phase{
		{op: "create", c: 1, api: res(300, 3*time.Millisecond), off: res(320, 3*time.Millisecond), hasOff: true, vsOff: []float64{0.8, 0.93, 0.95}},
		{op: "create", c: 8, api: res(900, 9*time.Millisecond), off: res(1100, 7*time.Millisecond), hasOff: true, vsOff: []float64{0.82, 0.85, 0.97}},
	}, delivery: &deliveryReport{burstC: 32, duplicates: 2, wait: 2 * time.Minute,
		burst: burstRun{writes: 3000, writeFor: 3 * time.Second, delivered: 3000, span: 12 * time.Second, drain: 9 * time.Second},
		paced: []pacedRun{{rate: 50, duration: 5 * time.Second, writes: 250, delivered: 250, lag: lagStats{n: 250, p50: 20 * time.Millisecond, p99: 90 * time.Millisecond}},
			{rate: 500, duration: 5 * time.Second, writes: 2500, delivered: 2500,
				lag: lagStats{n: 2500, p50: 400 * time.Millisecond, p90: 800 * time.Millisecond, p99: 1200 * time.Millisecond, max: 2 * time.Second}}}}}
	got := map[string]verdict{}
	for _, v := range targets([]*report{r}) {
		got[v.name] = v
	}
	for name, want := range map[string]bool{
		"[postgres] create with the outbox on ≥ 0.9× the outbox off at c=1 (median of rounds)":                                              true,
		"[postgres] create with the outbox on ≥ 0.9× the outbox off at c=8 (median of rounds)":                                              false,
		"[postgres] every acknowledged create's event delivered to the webhook receiver (within 2m0s of its run), every signature verified": true,
		"[postgres] webhook arrives within 1 s of the create at p99 under 50 writes/s":                                                      true,
		"[postgres] webhook arrives within 1 s of the create at p99 under 500 writes/s":                                                     false,
	} {
		if v, ok := got[name]; !ok || v.ok != want {
			t.Errorf("%s: %+v (present %v), want %v", name, v, ok, want)
		}
	}
	if v := got["[postgres] create with the outbox on ≥ 0.9× the outbox off at c=8 (median of rounds)"]; v.got != "0.85× (0.82–0.97) (900 vs 1100 req/s)" {
		t.Errorf("on/off figure %q", v.got)
	}
	r.delivery.paced[1].lag.p99 = 900 * time.Millisecond
	r.delivery.burst.delivered = 2999
	for _, v := range feedTargets(r) {
		if strings.Contains(v.name, "within 1 s") && !v.ok || strings.Contains(v.name, "every acknowledged") && v.ok {
			t.Errorf("%s: %v (%s)", v.name, v.ok, v.got)
		}
	}
	r.delivery.paced[1].sentFor = 6 * time.Second // the API did not keep the rate: no verdict on lag at 500/s
	for _, v := range feedTargets(r) {
		if strings.Contains(v.name, "under 500 writes/s") && v.ok {
			t.Errorf("%s passes at %.0f writes/s", v.name, r.delivery.paced[1].achieved())
		}
	}
	text := renderFeed(r)
	for _, s := range []string{"| create | 8 | 900 | 9.00 ms | – | 1100 | 7.00 ms | – | 0.85× (0.82–0.97) |",
		"| burst, closed loop c=32 | 3000 | 1000/s | 2999 | 250 events/s | 9000.00 ms |", "| paced, open loop 50/s for 5s | 250 | 50/s (0 late) | 250 |", "Duplicates (an event delivered more than once): 2"} {
		if !strings.Contains(text, s) {
			t.Errorf("report lacks %q:\n%s", s, text)
		}
	}
	if renderFeed(&report{}) != "" {
		t.Error("nothing measured: no section")
	}
}
