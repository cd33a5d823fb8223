package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// result is one phase: one operation on one target at one concurrency.
type result struct {
	N        int
	Errors   int
	FirstErr string
	Elapsed  time.Duration
	P50, P99 time.Duration
}

// Rate is completed operations per second.
func (r result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.N) / r.Elapsed.Seconds()
}

// worker does one operation; rnd is the worker's own random source.
type worker func(ctx context.Context, rnd *rand.Rand) error

// drive runs c closed-loop workers: warm-up first (not recorded), then duration of measured work.
// Latencies are kept per worker and merged at the end, so measuring costs no lock on the hot path.
func drive(ctx context.Context, c int, warmup, duration time.Duration, op worker) result {
	var measuring atomic.Bool
	start := time.Now()
	stopAt := start.Add(warmup + duration)
	lat := make([][]time.Duration, c)
	errs := make([]int, c)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	var begin time.Time
	var beginOnce sync.Once
	go func() {
		time.Sleep(warmup)
		beginOnce.Do(func() { begin = time.Now() })
		measuring.Store(true)
	}()
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w)+1, uint64(time.Now().UnixNano())))
			mine := make([]time.Duration, 0, 1<<14)
			for {
				t0 := time.Now()
				if t0.After(stopAt) || ctx.Err() != nil {
					break
				}
				err := op(ctx, rnd)
				d := time.Since(t0)
				if !measuring.Load() {
					continue
				}
				if err != nil {
					errs[w]++
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				mine = append(mine, d)
			}
			lat[w] = mine
		}()
	}
	wg.Wait()
	end := time.Now()
	beginOnce.Do(func() { begin = end })
	all := slices.Concat(lat...)
	slices.Sort(all)
	r := result{N: len(all), Elapsed: end.Sub(begin)}
	for _, e := range errs {
		r.Errors += e
	}
	if s, ok := firstErr.Load().(string); ok {
		r.FirstErr = s
	}
	if len(all) > 0 {
		r.P50 = all[len(all)/2]
		r.P99 = all[min(len(all)-1, len(all)*99/100)]
	}
	return r
}

// httpClient keeps one connection per worker alive, as a real client pool would.
func httpClient(c int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: c * 2, MaxIdleConnsPerHost: c * 2, IdleConnTimeout: time.Minute, DisableCompression: true,
	}}
}

// call sends req and checks the status, reading the whole body.
func call(client *http.Client, req *http.Request, want int) error {
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		if len(body) > 300 {
			body = body[:300]
		}
		return fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, res.StatusCode, body)
	}
	return nil
}
