package main

// The change feed and webhooks of issue 22, measured:
//
//   - create_events_off: the create phase gains a fourth target, the same POST /v1/companies sent to a
//     second recordsd started with --events=false, in the same interleaved rounds; the per-round ratio of
//     the default server (outbox on) over it is what the outbox costs a create (target ≥ 0.9×).
//   - deliveries: after every other phase, the bench's other servers are stopped (their dispatchers
//     would lease deliveries too, and refuse the loopback receiver), a receiver listens in this process
//     and verifies every request with runtime/webhooks.Verify, an endpoint of the bench workspace for
//     companies.created is made through runtime/dispatch.Registry, and a recordsd started with
//     --webhook-allow-private-addresses takes (a) a closed-loop burst of creates as fast as it answers
//     them, for up to 3 s, and (b) creates paced open-loop at 50, then 500 a second for 5 s, each run with
//     an endpoint of its own. Every acknowledged
//     create must arrive, signed; the lag of an event is its arrival at the receiver minus the moment the
//     create's answer was read.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/spec"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/store"
	"github.com/workspace-records/records/runtime/webhooks"
)

// deliveryReport is what the delivery phases measured on one backend.
type deliveryReport struct {
	burstC     int           // concurrency of the burst
	burst      burstRun      // (a) creates as fast as the API takes them
	paced      []pacedRun    // (b) creates at steady rates (pacedRates)
	duplicates int           // deliveries of an event already received (both phases)
	rejected   int           // requests whose signature did not verify
	firstErr   string        // why the first one was rejected
	wait       time.Duration // how long the harness waited for the last event at most
}

// burstRun is the throughput phase.
type burstRun struct {
	writes    int           // creates acknowledged (201)
	writeFor  time.Duration // time the creates were sent for
	delivered int           // of those, events received
	span      time.Duration // first to last arrival
	drain     time.Duration // last create answered to last event arrived
}

// writeRate is creates per second the API took.
func (r burstRun) writeRate() float64 { return perSecond(r.writes, r.writeFor) }

// deliveryRate is distinct events per second the receiver got, first arrival to last.
func (r burstRun) deliveryRate() float64 { return perSecond(r.delivered, r.span) }

// pacedRun is the lag phase.
type pacedRun struct {
	rate      float64       // writes per second asked
	duration  time.Duration // for how long
	writes    int           // creates acknowledged
	sentFor   time.Duration // first send to last answer
	late      int           // sends that started more than 10 ms after their due time
	delivered int
	lag       lagStats // arrival − the create's answer
	lagDB     lagStats // arrival − the event's created_at
}

// achieved is the write rate the paced phase kept: acknowledged creates over the time from the first
// send to the last answer, or over the asked duration when that was shorter.
func (r pacedRun) achieved() float64 { return perSecond(r.writes, max(r.duration, r.sentFor)) }

// lagStats are percentiles of delivery lags.
type lagStats struct {
	n                  int
	p50, p90, p99, max time.Duration
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// lagsOf sorts lags and takes their percentiles (nearest rank, as drive's latencies).
func lagsOf(lags []time.Duration) lagStats {
	if len(lags) == 0 {
		return lagStats{}
	}
	s := slices.Clone(lags)
	slices.Sort(s)
	at := func(p int) time.Duration { return s[min(len(s)-1, len(s)*p/100)] }
	return lagStats{n: len(s), p50: at(50), p90: at(90), p99: at(99), max: s[len(s)-1]}
}

// written is one acknowledged create: the record's id and when its answer was read.
type written struct {
	id string
	at time.Time
}

// arrival is the first delivery of a record's created event.
type arrival struct {
	at        time.Time // when the request reached the receiver's handler
	createdAt time.Time // the event's created_at
}

// receiver is the webhook receiver: every request is verified with the endpoint's secret; the first
// delivery of each event is kept by record id, later ones are counted as duplicates.
type receiver struct {
	srv     *http.Server
	url     string
	secrets []string

	mu         sync.Mutex
	byRecord   map[string]arrival
	events     map[string]int // event id → deliveries
	duplicates int
	rejected   int
	firstErr   string
}

// startReceiver listens on a loopback port; its URL is known before the endpoint's secret is (add it
// with addSecret before the first delivery).
func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/hooks", byRecord: map[string]arrival{}, events: map[string]int{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

// addSecret trusts the secret of one more endpoint (a delivery of an endpoint already deleted may
// still be in flight).
func (r *receiver) addSecret(s string) {
	r.mu.Lock()
	r.secrets = append(slices.Clone(r.secrets), s)
	r.mu.Unlock()
}

func (r *receiver) close() { r.srv.Close() }

// ServeHTTP verifies a delivery and records it.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	secrets := r.secrets
	r.mu.Unlock()
	var ev struct {
		ID        string  `json:"id"`
		Type      string  `json:"type"`
		RecordID  *string `json:"record_id"`
		CreatedAt string  `json:"created_at"`
	}
	if err = webhooks.Verify(secrets, req.Header, body, at, 0); err == nil {
		err = json.Unmarshal(body, &ev)
	}
	if err == nil && (ev.ID == "" || ev.RecordID == nil || req.Header.Get(webhooks.HeaderID) != ev.ID) {
		err = fmt.Errorf("payload %.200s: no event id and record id, or webhook-id %q is not the event's", body, req.Header.Get(webhooks.HeaderID))
	}
	if err != nil {
		r.mu.Lock()
		r.rejected++
		if r.firstErr == "" {
			r.firstErr = err.Error()
		}
		r.mu.Unlock()
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	created, _ := time.Parse(time.RFC3339Nano, ev.CreatedAt)
	r.mu.Lock()
	r.events[ev.ID]++
	if r.events[ev.ID] > 1 {
		r.duplicates++
	} else if _, ok := r.byRecord[*ev.RecordID]; !ok {
		r.byRecord[*ev.RecordID] = arrival{at: at, createdAt: created}
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// await waits until the events of every write have arrived, or timeout passes, and returns the arrivals
// of those that did (in the order of ws).
func (r *receiver) await(ctx context.Context, ws []written, timeout time.Duration) []arrival {
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		out := make([]arrival, 0, len(ws))
		for _, w := range ws {
			if a, ok := r.byRecord[w.id]; ok {
				out = append(out, a)
			}
		}
		r.mu.Unlock()
		if len(out) == len(ws) || time.Now().After(deadline) || ctx.Err() != nil {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lags pairs each write with its arrival: arrival − answer, and arrival − the event's created_at.
func lags(ws []written, byRecord map[string]arrival) (answer, created []time.Duration) {
	for _, w := range ws {
		a, ok := byRecord[w.id]
		if !ok {
			continue
		}
		answer = append(answer, a.at.Sub(w.at))
		if !a.createdAt.IsZero() {
			created = append(created, a.at.Sub(a.createdAt))
		}
	}
	return answer, created
}

// span is the first and last arrival of as.
func span(as []arrival) (first, last time.Time) {
	for i, a := range as {
		if i == 0 || a.at.Before(first) {
			first = a.at
		}
		if a.at.After(last) {
			last = a.at
		}
	}
	return first, last
}

// paceSchedule is the due time of every send of an open-loop run at rate a second for d.
func paceSchedule(start time.Time, rate float64, d time.Duration) []time.Time {
	if rate <= 0 {
		return nil
	}
	n := int(rate * d.Seconds())
	out := make([]time.Time, n)
	for i := range out {
		out[i] = start.Add(time.Duration(float64(i) * float64(time.Second) / rate))
	}
	return out
}

// createOn posts one company to the server at addr and returns its id and when the answer was read.
func (b *bench) createOn(ctx context.Context, client *http.Client, addr string, rnd *mrand.Rand) (written, error) {
	req, err := b.apiReq("POST", "/v1/companies", companyBody(rnd, true), true)
	if err != nil {
		return written{}, err
	}
	req.URL.Host = addr
	res, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return written{}, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	at := time.Now()
	if err != nil {
		return written{}, err
	}
	if res.StatusCode != http.StatusCreated {
		return written{}, fmt.Errorf("POST /v1/companies: %d %.300s", res.StatusCode, body)
	}
	var rec struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &rec); err != nil || rec.Data.ID == "" {
		return written{}, fmt.Errorf("POST /v1/companies: no id in %.300s", body)
	}
	return written{rec.Data.ID, at}, nil
}

// openRegistry opens the bench's database as recordsd does and returns its webhook endpoints.
func (b *bench) openRegistry(ctx context.Context) (*dispatch.Registry, func(), error) {
	set, errs := spec.Load(os.DirFS(b.o.defs))
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("definitions: %w", errs)
	}
	cat, errs := model.Compile(set)
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("definitions: %w", errs)
	}
	st, err := store.Open(ctx, b.dsn)
	if err != nil {
		return nil, nil, err
	}
	return dispatch.NewRegistry(st, cat, true), func() { st.Close() }, nil
}

// runDeliveries is the delivery phase (see the top of this file). The servers of the earlier phases
// must be stopped. Each run has an endpoint of its own, deleted (with whatever it has not delivered)
// after it, so that a backlog one run leaves does not delay the next.
func (b *bench) runDeliveries(ctx context.Context) error {
	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	defer rcv.close()
	reg, closeReg, err := b.openRegistry(ctx)
	if err != nil {
		return err
	}
	defer closeReg()
	api, err := startRecordsd(ctx, b.o, b.dsn, b.secret, "--webhook-allow-private-addresses")
	if err != nil {
		return err
	}
	defer api.stop()
	wctx := store.WithWorkspace(ctx, b.workspace)
	// endpoint makes a fresh endpoint for companies.created and returns how to delete it.
	endpoint := func() (func(), error) {
		types, resources := []string{"companies.created"}, []string{"companies"}
		ep, err := reg.Create(wctx, b.workspace, b.member, dispatch.Input{URL: &rcv.url, EventTypes: &types, Resources: &resources})
		if err != nil {
			return nil, fmt.Errorf("create webhook endpoint: %w", err)
		}
		rcv.addSecret(ep.Secret)
		return func() {
			if err := reg.Delete(context.WithoutCancel(wctx), b.workspace, ep.ID); err != nil {
				fmt.Fprintln(os.Stderr, "delete webhook endpoint:", err)
			}
		}, nil
	}
	dr := &deliveryReport{burstC: slices.Max(b.o.conc), wait: deliveryWait}

	// (a) Throughput: closed-loop creates for a few seconds, then every event must arrive.
	drop, err := endpoint()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s %-16s c=%-3d", b.backend, "deliveries burst", dr.burstC)
	client := httpClient(dr.burstC)
	var mu sync.Mutex
	var burst []written
	t0 := time.Now()
	r := drive(ctx, dr.burstC, 0, min(b.o.duration, burstFor), func(ctx context.Context, rnd *mrand.Rand) error {
		w, err := b.createOn(ctx, client, api.addr, rnd)
		if err == nil {
			mu.Lock()
			burst = append(burst, w)
			mu.Unlock()
		}
		return err
	})
	dr.burst.writeFor = time.Since(t0)
	client.CloseIdleConnections()
	if r.Errors > 0 {
		drop()
		return fmt.Errorf("deliveries burst: %d errors, first: %s\nrecordsd log:\n%s", r.Errors, r.FirstErr, api.Log.Tail())
	}
	dr.burst.writes = len(burst)
	got := rcv.await(ctx, burst, deliveryWait)
	drop()
	dr.burst.delivered = len(got)
	first, last := span(got)
	dr.burst.span = last.Sub(first)
	if n := len(burst); n > 0 && len(got) == n {
		lastWrite := burst[0].at
		for _, w := range burst {
			lastWrite = later(lastWrite, w.at)
		}
		dr.burst.drain = last.Sub(lastWrite)
	}
	fmt.Fprintf(os.Stderr, " writes %6.0f/s  delivered %d/%d at %6.0f/s, drained %s after the last write\n",
		dr.burst.writeRate(), dr.burst.delivered, dr.burst.writes, dr.burst.deliveryRate(), dr.burst.drain.Round(time.Millisecond))

	// (b) Lag at steady rates, a light one first: open loop, each create sent at its due time on its
	// own goroutine.
	for _, rate := range pacedRates {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		drop, err := endpoint()
		if err != nil {
			return err
		}
		p := pacedRun{rate: rate, duration: lagDuration}
		fmt.Fprintf(os.Stderr, "%s %-16s %4.0f/s", b.backend, "deliveries lag", rate)
		paced, late, sentFor, err := b.pace(ctx, api.addr, rate, lagDuration)
		if err != nil {
			drop()
			return fmt.Errorf("deliveries lag: %w\nrecordsd log:\n%s", err, api.Log.Tail())
		}
		p.writes, p.late, p.sentFor = len(paced), late, sentFor
		p.delivered = len(rcv.await(ctx, paced, deliveryWait))
		drop()
		rcv.mu.Lock()
		answer, created := lags(paced, rcv.byRecord)
		rcv.mu.Unlock()
		p.lag, p.lagDB = lagsOf(answer), lagsOf(created)
		fmt.Fprintf(os.Stderr, " writes %d (%.0f/s, %d late)  delivered %d  lag p50 %s p99 %s max %s\n",
			p.writes, p.achieved(), late, p.delivered, ms(p.lag.p50), ms(p.lag.p99), ms(p.lag.max))
		dr.paced = append(dr.paced, p)
	}
	rcv.mu.Lock()
	dr.duplicates, dr.rejected, dr.firstErr = rcv.duplicates, rcv.rejected, rcv.firstErr
	rcv.mu.Unlock()
	fmt.Fprintf(os.Stderr, "%s deliveries: %d duplicates, %d rejected\n", b.backend, dr.duplicates, dr.rejected)
	b.rep.delivery = dr
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// pacedRates are the lag runs' rates: a light load, then the "lag p50/p99 at 500 writes/s"
// (lagRate, the one with a verdict).
var pacedRates = []float64{50, lagRate}

// The lag runs' length and the verdict's rate, the burst's length at most, and how long the harness
// waits for the last event of a run (what has not arrived by then counts as not delivered).
const (
	lagRate      = 500.0
	lagDuration  = 5 * time.Second
	burstFor     = 3 * time.Second
	deliveryWait = 2 * time.Minute
	// maxInFlight bounds the paced phase's open requests; a send that finds them all open waits (and
	// counts as late when it starts more than lateBy after its due time).
	maxInFlight = 256
	lateBy      = 10 * time.Millisecond
)

// pace sends creates to addr at rate a second for d, open loop, and returns the acknowledged ones, how
// many started late, and the time from the first send to the last answer.
func (b *bench) pace(ctx context.Context, addr string, rate float64, d time.Duration) ([]written, int, time.Duration, error) {
	client := httpClient(maxInFlight)
	defer client.CloseIdleConnections()
	sem := make(chan struct{}, maxInFlight)
	var mu sync.Mutex
	var out []written
	var firstErr error
	late := 0
	var wg sync.WaitGroup
	start := time.Now().Add(50 * time.Millisecond)
	for i, due := range paceSchedule(start, rate, d) {
		time.Sleep(time.Until(due))
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		if time.Since(due) > lateBy {
			late++
		}
		wg.Go(func() {
			defer func() { <-sem }()
			rnd := mrand.New(mrand.NewPCG(uint64(i)+1, uint64(start.UnixNano())))
			w, err := b.createOn(ctx, client, addr, rnd)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			out = append(out, w)
		})
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return nil, 0, 0, errors.Join(errors.New("paced creates"), firstErr)
	}
	var end time.Time
	for _, w := range out {
		end = later(end, w.at)
	}
	return out, late, end.Sub(start), nil
}

// renderFeed is the report's change feed section of one backend: creates with the outbox on and off,
// then the delivery phases ("" when neither ran).
func renderFeed(r *report) string {
	var b strings.Builder
	var off []phase
	for _, p := range r.phases {
		if p.hasOff {
			off = append(off, p)
		}
	}
	if len(off) > 0 {
		b.WriteString("\nChange feed (issue 22): create with the outbox on (the default) and on a second recordsd started with `--events=false` (same rounds):\n\n")
		b.WriteString("| operation | c | events on req/s | p50 | p99 | events off req/s | p50 | p99 | outbox on/off |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, p := range off {
			fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %.0f | %s | %s | %s |\n", p.op, p.c, p.api.Rate(), ms(p.api.P50), ms(p.api.P99),
				p.off.Rate(), ms(p.off.P50), ms(p.off.P99), spread(p.vsOff))
		}
	}
	if d := r.delivery; d != nil {
		fmt.Fprintf(&b, "\nWebhook deliveries (issue 22): one endpoint of the workspace for `companies.created`, a receiver in the harness verifying every signature, "+
			"a recordsd started with `--webhook-allow-private-addresses` (the bench's other servers stopped); lag is the arrival at the receiver minus the moment the create's answer was read "+
			"(the event's `created_at` in brackets):\n\n")
		b.WriteString("| phase | writes | write rate | delivered | delivery rate | drain after last write | lag p50 | lag p90 | lag p99 | lag max |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		u := d.burst
		fmt.Fprintf(&b, "| burst, closed loop c=%d | %d | %.0f/s | %d | %.0f events/s | %s | – | – | – | – |\n", d.burstC, u.writes, u.writeRate(),
			u.delivered, u.deliveryRate(), ms(u.drain))
		for _, p := range d.paced {
			fmt.Fprintf(&b, "| paced, open loop %.0f/s for %s | %d | %.0f/s (%d late) | %d | – | – | %s (%s) | %s (%s) | %s (%s) | %s (%s) |\n",
				p.rate, p.duration, p.writes, p.achieved(), p.late, p.delivered,
				ms(p.lag.p50), ms(p.lagDB.p50), ms(p.lag.p90), ms(p.lagDB.p90), ms(p.lag.p99), ms(p.lagDB.p99), ms(p.lag.max), ms(p.lagDB.max))
		}
		fmt.Fprintf(&b, "\nDuplicates (an event delivered more than once): %d; requests whose signature did not verify: %d", d.duplicates, d.rejected)
		if d.firstErr != "" {
			fmt.Fprintf(&b, " (first: %s)", d.firstErr)
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// feedTargets are issue 22's verdicts on one backend: the outbox costs a create at most 10% at every
// concurrency, every acknowledged create's event arrives signed, and the lag at the paced rate is within
// 1 s at p99.
func feedTargets(r *report) []verdict {
	tag := "[" + r.backend + "] "
	var out []verdict
	for _, p := range r.phases {
		if p.hasOff {
			x := medianOf(p.vsOff)
			out = append(out, verdict{tag + fmt.Sprintf("create with the outbox on ≥ 0.9× the outbox off at c=%d (median of rounds)", p.c),
				fmt.Sprintf("%s (%.0f vs %.0f req/s)", spread(p.vsOff), p.api.Rate(), p.off.Rate()), x >= 0.9})
		}
	}
	d := r.delivery
	if d == nil {
		return out
	}
	writes, delivered := d.burst.writes, d.burst.delivered
	for _, p := range d.paced {
		writes, delivered = writes+p.writes, delivered+p.delivered
	}
	out = append(out, verdict{tag + fmt.Sprintf("every acknowledged create's event delivered to the webhook receiver (within %s of its run), every signature verified", d.wait),
		fmt.Sprintf("%d of %d delivered, %d rejected, %d duplicates", delivered, writes, d.rejected, d.duplicates),
		writes > 0 && delivered == writes && d.rejected == 0})
	for _, p := range d.paced {
		ok := p.writes > 0 && p.delivered == p.writes && p.lag.p99 <= time.Second && p.achieved() >= 0.9*p.rate
		out = append(out, verdict{tag + fmt.Sprintf("webhook arrives within 1 s of the create at p99 under %.0f writes/s", p.rate),
			fmt.Sprintf("p99 %s, p50 %s (%.0f writes/s kept, %d of %d delivered)", ms(p.lag.p99), ms(p.lag.p50), p.achieved(), p.delivered, p.writes), ok})
	}
	return out
}
