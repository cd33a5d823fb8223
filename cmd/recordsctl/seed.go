package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server"
)

// seedChunk is how many records one seed transaction writes: on SQLite, whose commit writes every
// page the transaction changed (18 indexes' worth on companies), 10,000 take 15% less CPU than 5,000
// (20,000 no less); PostgreSQL gains nothing past a few thousand.
func seedChunk(d sqlgen.Dialect) int {
	if d.Kind() == sqlgen.SQLite {
		return 10000
	}
	return 5000
}

// seedWorkers is how many chunks are validated and written at once: while one is written, the next is
// validated (SQLite takes one writer at a time; PostgreSQL writes two at once).
const seedWorkers = 2

// load writes count records of c by a, in chunks of chunk bodies made in order by bodiesOf, each
// validated and written in a transaction of its own by one of seedWorkers workers; progress is told
// how many are written. It returns how many were written (whole chunks) and the first error.
func load(ctx context.Context, s *records.Service, a records.Actor, c *records.Collection, count, chunk int, bodiesOf func(n int) []map[string]any, progress func(int)) (int, error) {
	// Bodies and rows are short-lived garbage: collect less often (the heap stays a few chunks).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan []map[string]any)
	go func() {
		defer close(chunks)
		for n := 0; n < count; {
			bodies := bodiesOf(min(chunk, count-n))
			n += len(bodies)
			select {
			case chunks <- bodies:
			case <-ctx.Done():
				return
			}
		}
	}()
	var (
		mu    sync.Mutex
		done  int
		first error
		wg    sync.WaitGroup
	)
	for range seedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for bodies := range chunks {
				l, err := s.PrepareLoad(a, c, bodies)
				if err == nil {
					_, err = s.WriteLoad(ctx, l)
				}
				mu.Lock()
				if err != nil && first == nil {
					first = err
					cancel()
				}
				if err == nil {
					done += len(bodies)
					progress(done)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	for range chunks { // the maker stops at the cancel
	}
	return done, first
}

func cmdSeed(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	res := fs.String("resource", "", "resource name")
	count := fs.Int("count", 0, "how many records")
	modelID := fs.String("model-id", "", "data model id (data_model_records)")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (same seed, same data)")
	batch := fs.Int("batch", 0, "records per transaction (default 5000 on PostgreSQL, 10000 on SQLite)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "seed --workspace W --resource R --count N"), required("workspace", *ws), required("resource", *res)); err != nil {
			return err
		}
		if *count < 1 || *count > 100_000_000 {
			return errors.New("--count must be between 1 and 100000000")
		}
		if *batch < 0 || *batch > 1_000_000 {
			return errors.New("--batch must be between 1 and 1000000")
		}
		return withBackendFor(e, cfg, server.AdminOptions{Schemas: true}, func(b *server.Backend) error {
			r, err := resourceOf(b, *res)
			if err != nil {
				return err
			}
			a := records.Actor{Workspace: strings.ToLower(*ws), Synthetic: true}
			if err := workspaceExists(b, e.ctx, a.Workspace); err != nil {
				return err
			}
			mid := strings.ToLower(*modelID)
			c, err := b.Current().Records.Collection(e.ctx, a, r, mid)
			if err != nil {
				return err
			}
			refs, err := loadRefs(e, b, a.Workspace, r)
			if err != nil {
				return err
			}
			fs := c.Fields
			custom := make([]*model.Field, len(fs.Defs))
			for i, d := range fs.Defs {
				custom[i] = fs.Field(d)
			}
			bar := newProgress(e.stderr, r.Name, *count)
			gen := sample.New(*seed)
			gen.SetLookup(b.SampleLookup(e.ctx, a))
			now := time.Now()
			bodiesOf := func(n int) []map[string]any {
				bodies := make([]map[string]any, n)
				for i := range bodies {
					bodies[i] = gen.Body(r, refs, now)
					gen.Custom(r, custom, bodies[i], refs, now)
				}
				return bodies
			}
			chunk := *batch
			if chunk == 0 {
				chunk = seedChunk(b.Store.Dialect())
			}
			done, err := load(e.ctx, b.Current().Records, a, c, *count, chunk, bodiesOf, bar.set)
			if err != nil {
				bar.finish()
				return fmt.Errorf("after %d records: %w", done, err)
			}
			bar.finish()
			return e.emit(map[string]any{"created": done}, fmt.Sprintf("created %d %s", done, r.Name))
		})
	}
}

// loadRefs reads up to 1000 existing ids of every resource that r references.
func loadRefs(e *env, b *server.Backend, workspace string, r *model.Resource) (sample.Refs, error) {
	cache := map[string][]string{}
	for _, f := range r.Declared() {
		t, ok := b.Current().Catalog.Resource(f.Target)
		if f.Type != model.Reference || !ok || t.ModelScoped {
			continue
		}
		if _, done := cache[t.Name]; done {
			continue
		}
		ids, err := b.Current().Records.IDs(e.ctx, workspace, t, "", 1000)
		if err != nil {
			return nil, err
		}
		cache[t.Name] = ids
	}
	return func(resource string) []string { return cache[resource] }, nil
}

// progress draws a one-line progress bar on a terminal-like writer.
type progress struct {
	w       io.Writer
	label   string
	total   int
	start   time.Time
	lastOut time.Time
}

func newProgress(w io.Writer, label string, total int) *progress {
	p := &progress{w: w, label: label, total: total, start: time.Now()}
	p.draw(0)
	return p
}

func (p *progress) set(n int) {
	if time.Since(p.lastOut) < 100*time.Millisecond && n < p.total {
		return
	}
	p.draw(n)
}

func (p *progress) draw(n int) {
	p.lastOut = time.Now()
	const width = 30
	filled := width * n / max(p.total, 1)
	rate := float64(n) / max(time.Since(p.start).Seconds(), 1e-9)
	fmt.Fprintf(p.w, "\rseeding %s [%s%s] %3d%% %d/%d %.0f rec/s", p.label, strings.Repeat("=", filled), strings.Repeat(" ", width-filled), 100*n/max(p.total, 1), n, p.total, rate)
}

func (p *progress) finish() { fmt.Fprintln(p.w) }
