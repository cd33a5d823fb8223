package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server"
)

// seedChunk is how many records one seed transaction writes.
const seedChunk = 5000

func cmdSeed(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	res := fs.String("resource", "", "resource name")
	count := fs.Int("count", 0, "how many records")
	modelID := fs.String("model-id", "", "data model id (data_model_records)")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (same seed, same data)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "seed --workspace W --resource R --count N"), required("workspace", *ws), required("resource", *res)); err != nil {
			return err
		}
		if *count < 1 || *count > 100_000_000 {
			return errors.New("--count must be between 1 and 100000000")
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
			c, err := b.Records.Collection(e.ctx, a, r, mid)
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
			gen := sample.New(*seed)
			gen.SetLookup(b.SampleLookup(e.ctx, a))
			bar := newProgress(e.stderr, r.Name, *count)
			now := time.Now()
			done := 0
			for done < *count {
				n := min(seedChunk, *count-done)
				bodies := make([]map[string]any, n)
				for i := range bodies {
					bodies[i] = gen.Body(r, refs, now)
					gen.Custom(r, custom, bodies[i], refs, now)
				}
				if _, err := b.Records.Import(e.ctx, a, r, mid, bodies); err != nil {
					bar.finish()
					return fmt.Errorf("after %d records: %w", done, err)
				}
				done += n
				bar.set(done)
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
		t, ok := b.Catalog.Resource(f.Target)
		if f.Type != model.Reference || !ok || t.ModelScoped {
			continue
		}
		if _, done := cache[t.Name]; done {
			continue
		}
		ids, err := b.Records.IDs(e.ctx, workspace, t, "", 1000)
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
