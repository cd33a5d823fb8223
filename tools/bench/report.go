package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// render prints the run as Markdown: one table per backend, the row-level security comparison, then
// the targets with their verdicts.
func render(o options, reps []*report, cpus int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Workspace Records benchmark, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "%d cores shared by the load generator, recordsd, the floor server and the database; concurrencies %v. "+
		"Each phase runs %d rounds; a round runs every target (API, floor, raw SQL and, for list reads on PostgreSQL, the API as the superuser) for %s, "+
		"in an order that rotates from round to round, after %s of warm-up (%s before later slices). Rates are over all rounds; "+
		"a ratio is the median of the rounds' ratios, with their range in brackets.\n\n",
		cpus, o.conc, o.repeats, o.duration/time.Duration(max(o.repeats, 1)), o.warmup, settle)
	for _, r := range reps {
		fmt.Fprintf(&b, "## %s: %d companies in one workspace\n\n", r.backend, r.rows)
		if r.backend == "postgres" {
			fmt.Fprintf(&b, "- configuration: recordsd and recordsctl connect as `%s`, which owns the database and is neither a superuser nor BYPASSRLS (row-level security forced on every tenant table, the LEAKPROOF step applied); the floor and raw SQL connect as the superuser; %d pool connections each; TLS %s\n", benchRole, r.pool, r.tls)
		} else {
			fmt.Fprintf(&b, "- configuration: the embedded default (one SQLite file, WAL); the floor and raw SQL open the same file with the same driver\n")
		}
		fmt.Fprintf(&b, "- seeded with `recordsctl seed` in %s (%.0f records/s, custom field values included)\n", r.seed.Round(time.Millisecond), float64(r.rows)/r.seed.Seconds())
		fmt.Fprintf(&b, "- start to serving (process start to first answered request; recordsd's own figure in brackets): %s\n", durations(r.ready, r.startedIn))
		fmt.Fprintf(&b, "- filters: employee_count = %d matches %d records; the custom field (same distribution) %d\n", r.filterValue, r.declared, r.custom)
		if r.redisKeys > 0 {
			fmt.Fprintf(&b, "- \"(Redis, %d keys)\": a second recordsd keeping its limits and quota in Redis, the requests spread round-robin over %d keys of the workspace\n", r.redisKeys, r.redisKeys)
		}
		b.WriteString("\n| operation | c | API req/s | API p50 | API p99 | floor req/s | floor p50 | raw SQL q/s | raw p50 | API/floor | API/raw | RSS MB | goroutines |\n")
		b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, p := range r.phases {
			fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %d |\n", p.op+p.config, p.c,
				p.api.Rate(), ms(p.api.P50), ms(p.api.P99),
				opt(p.hasFloor, fmt.Sprintf("%.0f", p.floor.Rate())), opt(p.hasFloor, ms(p.floor.P50)),
				opt(p.hasRaw, fmt.Sprintf("%.0f", p.raw.Rate())), opt(p.hasRaw, ms(p.raw.P50)),
				opt(p.hasFloor, spread(p.vsFloor)), opt(p.hasRaw, spread(p.vsRaw)),
				p.after.rssMB, p.after.goroutines)
		}
		var su []phase
		for _, p := range r.phases {
			if p.hasSU {
				su = append(su, p)
			}
		}
		if len(su) > 0 {
			b.WriteString("\nRow-level security: the same list reads through the same server binary connected as the superuser, which RLS does not apply to (same rounds):\n\n")
			b.WriteString("| operation | c | owner role (RLS) req/s | p50 | superuser req/s | p50 | RLS/superuser |\n|---|--:|--:|--:|--:|--:|--:|\n")
			for _, p := range su {
				fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %.0f | %s | %s |\n", p.op, p.c, p.api.Rate(), ms(p.api.P50), p.su.Rate(), ms(p.su.P50), spread(p.vsSU))
			}
		}
		b.WriteString(renderFeed(r))
		b.WriteString(renderReads(r))
		b.WriteString(renderAdmin(r))
		b.WriteString(renderJobs(r))
		b.WriteString("\nClosing rounds (get, first page and create at c=32, back to back):")
		for i, s := range r.rounds {
			fmt.Fprintf(&b, " round %d %.1f MB / %d goroutines;", i+1, s.rssMB, s.goroutines)
		}
		b.WriteString("\n\n")
	}
	b.WriteString("## Targets\n\n")
	for _, t := range targets(reps) {
		mark := "PASS"
		if !t.ok {
			mark = "MISS"
		}
		fmt.Fprintf(&b, "- %s %s: %s\n", mark, t.name, t.got)
	}
	return b.String()
}

// medianOf is the median of xs (0 for none).
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread writes the median of xs and, for more than one, their range: "0.91× (0.85–0.97)".
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	if len(xs) == 1 {
		return fmt.Sprintf("%.2f×", xs[0])
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", medianOf(xs), slices.Min(xs), slices.Max(xs))
}

type verdict struct {
	name, got string
	ok        bool
}

// phase is op at c in the default configuration.
func (r *report) phase(op string, c int) (phase, bool) {
	for _, p := range r.phases {
		if p.op == op && p.c == c && p.config == "" {
			return p, true
		}
	}
	return phase{}, false
}

// readOps are the reads whose API/floor ratio has a target (issue 21).
var readOps = []string{"get", "first_page", "deep_page", "filter_declared", "filter_custom"}

// targets checks the figures of one run against the targets of docs/benchmarks.md: the reads of issue
// 21 (production configuration), the write path of issue 20, memory and start-up of issue 8.
func targets(reps []*report) []verdict {
	var out []verdict
	var pg, lite *report
	for _, r := range reps {
		switch r.backend {
		case "postgres":
			pg = r
		case "sqlite":
			lite = r
		}
		tag := "[" + r.backend + "] "
		floorTarget := 0.9
		if r.backend == "sqlite" {
			floorTarget = 0.8
		}
		for _, op := range readOps {
			for _, p := range r.phases {
				if p.op != op || p.config != "" || !p.hasFloor {
					continue
				}
				x := medianOf(p.vsFloor)
				out = append(out, verdict{tag + fmt.Sprintf("%s ≥ %.1f× the floor at c=%d (median of rounds)", op, floorTarget, p.c), spread(p.vsFloor), x >= floorTarget})
			}
		}
		for _, p := range r.phases {
			if p.hasSU {
				x := medianOf(p.vsSU)
				out = append(out, verdict{tag + fmt.Sprintf("%s under row-level security within 10%% of the superuser at c=%d", p.op, p.c), spread(p.vsSU), x >= 0.9})
			}
			if p.config != "" && p.op == "get" && p.hasFloor {
				x := medianOf(p.vsFloor)
				out = append(out, verdict{tag + fmt.Sprintf("GET%s ≥ 0.8× the floor at c=%d", p.config, p.c), spread(p.vsFloor), x >= 0.8})
			}
		}
		for _, p := range r.phases {
			if p.op != "deep_page" || p.config != "" {
				continue
			}
			first, ok := r.phase("first_page", p.c)
			if !ok {
				continue
			}
			x := p.api.Rate() / first.api.Rate()
			y := float64(first.api.P50) / float64(p.api.P50)
			out = append(out, verdict{tag + fmt.Sprintf("cursor page at depth %d ≥ 0.9× first page at c=%d (throughput, p50)", r.rows/2, p.c),
				fmt.Sprintf("%.2f×, %.2f× (p50 %s vs %s)", x, y, ms(p.api.P50), ms(first.api.P50)), x >= 0.9 && y >= 0.9})
		}
		for _, p := range r.phases {
			if p.op != "filter_custom" || p.config != "" {
				continue
			}
			decl, ok := r.phase("filter_declared", p.c)
			if !ok {
				continue
			}
			x := float64(p.api.P50) / float64(decl.api.P50)
			out = append(out, verdict{tag + fmt.Sprintf("custom-field filter p50 within 2× of the declared one at c=%d", p.c),
				fmt.Sprintf("%.2f× (%s vs %s)", x, ms(p.api.P50), ms(decl.api.P50)), x <= 2})
		}
		if p, ok := r.phase("create", 8); ok && p.hasRaw {
			x := medianOf(p.vsRaw)
			out = append(out, verdict{tag + "create with validation and Idempotency-Key ≥ 0.5× raw insert at c=8", spread(p.vsRaw), x >= 0.5})
		}
		out = append(out, feedTargets(r)...)
		out = append(out, readsTargets(r)...)
		out = append(out, adminTargets(r)...)
		if p, ok := r.phase("update", 8); ok && p.hasFloor {
			x := medianOf(p.vsFloor)
			out = append(out, verdict{tag + "update with Idempotency-Key ≥ 0.8× the floor's update at c=8", spread(p.vsFloor), x >= 0.8})
		}
		if p, ok := r.phase("batch_create", 8); ok && p.hasRaw {
			x := medianOf(p.vsRaw)
			out = append(out, verdict{tag + fmt.Sprintf("%d-item batch create ≥ 0.7× a raw multi-row INSERT of the same rows at c=8 (records/s)", batchRows), fmt.Sprintf("%s (%.0f vs %.0f records/s)", spread(p.vsRaw), p.api.Rate()*batchRows, p.raw.Rate()*batchRows), x >= 0.7})
		}
		var peak float64
		for _, p := range r.phases {
			if p.c == 32 {
				peak = max(peak, p.after.rssMB)
			}
		}
		for _, s := range r.rounds {
			peak = max(peak, s.rssMB)
		}
		out = append(out, verdict{tag + "RSS under 150 MB after the c=32 phases", fmt.Sprintf("peak %.1f MB", peak), peak > 0 && peak < 150})
		if n := len(r.rounds); n >= 2 {
			first, last := r.rounds[0], r.rounds[n-1]
			ok := last.rssMB <= first.rssMB*1.10 && last.goroutines <= first.goroutines+5
			out = append(out, verdict{tag + "memory and goroutines flat over the closing rounds",
				fmt.Sprintf("%.1f → %.1f MB, %d → %d goroutines", first.rssMB, last.rssMB, first.goroutines, last.goroutines), ok})
		}
		if len(r.ready) > 0 {
			med := median(r.ready)
			out = append(out, verdict{tag + "start to serving under 300 ms (44 resources, 3 plugins)", "median " + ms(med), med < 300*time.Millisecond})
		}
		if r.seed > 0 && r.rows > 0 {
			x := float64(r.rows) / r.seed.Seconds()
			out = append(out, verdict{tag + "recordsctl seed ≥ 20,000 records/s", fmt.Sprintf("%.0f records/s", x), x >= 20000})
		}
		if j := r.jobs; j != nil {
			im, ex := j.rawImport.Seconds()/j.importRun.Seconds(), j.rawExport.Seconds()/j.exportRun.Seconds()
			out = append(out, verdict{tag + "import job ≥ 0.7× the raw load (issue 37)", fmt.Sprintf("%.2f×", im), im >= 0.7},
				verdict{tag + "export job ≥ 0.7× the raw COPY TO (issue 37)", fmt.Sprintf("%.2f×", ex), ex >= 0.7},
				verdict{tag + "recordsd RSS < 250 MB during the jobs (issue 37)", fmt.Sprintf("%.0f MB", j.maxRSS), j.maxRSS < 250},
				verdict{tag + "an import's progress moves at least every 2 s (issue 37)", j.maxGap.Round(time.Millisecond).String(), j.maxGap <= 2*time.Second})
		}
	}
	if pg != nil && lite != nil {
		for _, c := range []int{1, 8, 32} {
			p, ok1 := pg.phase("get", c)
			l, ok2 := lite.phase("get", c)
			if !ok1 || !ok2 {
				continue
			}
			x := l.api.Rate() / p.api.Rate()
			out = append(out, verdict{fmt.Sprintf("SQLite GET ≥ PostgreSQL GET at c=%d", c), fmt.Sprintf("%.2f× (%.0f vs %.0f req/s)", x, l.api.Rate(), p.api.Rate()), x >= 1})
		}
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func durations(a, b []time.Duration) string {
	parts := make([]string, len(a))
	for i := range a {
		parts[i] = ms(a[i])
		if i < len(b) && b[i] > 0 {
			parts[i] += " (" + ms(b[i]) + ")"
		}
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func opt(ok bool, s string) string {
	if !ok {
		return "–"
	}
	return s
}
