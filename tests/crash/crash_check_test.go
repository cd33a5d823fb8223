package crash_test

// TestCrash, after the kills: the database compared with what the clients were told, and the report.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/workspace-records/records/runtime/store"
)

// stored is one record as the database holds it.
type stored struct {
	id, description string
	employees       int64
	archived        bool
	audit           map[string]int // action -> rows
}

// check compares the database with the chains and returns how many records it found and how many of
// them were duplicates. It leaves in c.expect, for every record stored, the audit rows it expects of it
// by action (the audit rows found, for a record whose chain it could not check), for checkFeed.
func (c *crash) check() (records, dup int) {
	t := c.t
	ctx := store.WithWorkspace(context.Background(), c.ws)
	d := c.st.Dialect()
	byName := map[string][]*stored{}
	byID := map[string]*stored{}
	err := c.st.Query(ctx, d.Bind("SELECT id, name, employee_count, description, archived FROM rec_companies WHERE workspace_id = ? AND name LIKE ?", c.ws, "Crash "+c.runID+" %"), func(row []any) error {
		s := &stored{id: store.UUIDText(row[0]), employees: store.Int(row[2]), description: store.Text(row[3]), archived: store.Bool(row[4]), audit: map[string]int{}}
		name := store.Text(row[1])
		byName[name] = append(byName[name], s)
		byID[s.id] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = c.st.Query(ctx, d.Bind("SELECT record_id, action, count(*) FROM audit_log WHERE workspace_id = ? AND resource = 'companies' GROUP BY record_id, action", c.ws), func(row []any) error {
		if s := byID[store.UUIDText(row[0])]; s != nil {
			s.audit[store.Text(row[1])] += int(store.Int(row[2]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.expect = map[string]map[string]int{}
	for id, s := range byID {
		c.expect[id] = maps.Clone(s.audit)
	}
	keys := map[string]string{}
	err = c.st.Query(ctx, d.Bind("SELECT idem_key, status FROM idempotency_keys WHERE api_key_id = ?", c.keyID), func(row []any) error {
		keys[store.Text(row[0])] = store.Text(row[1])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ops := 0
	for _, ch := range c.chains {
		recs := byName[ch.name]
		if len(recs) > 1 {
			dup += len(recs) - 1
			t.Errorf("%s stored %d times", ch.name, len(recs))
		}
		for _, o := range ch.ops {
			ops++
			if o.failed {
				continue
			}
			if st := keys[o.key]; st != "completed" {
				t.Errorf("%s %s: key status %q, want completed", o.kind, o.key, st)
			}
		}
		if len(recs) != 1 || ch.ops[0].failed {
			if len(recs) == 0 {
				t.Errorf("%s: the create was acknowledged (%d) but is not stored", ch.name, ch.ops[0].status)
			}
			continue
		}
		s := recs[0]
		if s.id != ch.id {
			t.Errorf("%s: stored as %s, acknowledged as %s", ch.name, s.id, ch.id)
		}
		updates, archived := 0, false
		for _, o := range ch.ops[1:] {
			switch o.kind {
			case "update":
				updates++
			case "archive":
				archived = true
			}
		}
		if want := fmt.Sprintf("update %d", updates); s.employees != int64(updates) || s.description != want {
			t.Errorf("%s: employee_count %d, description %q; want the last update's %d, %q", ch.name, s.employees, s.description, updates, want)
		}
		if s.archived != archived {
			t.Errorf("%s: archived %v, want %v", ch.name, s.archived, archived)
		}
		want := map[string]int{"create": 1, "update": updates}
		if archived {
			want["archive"] = 1
		}
		c.expect[s.id] = want
		actions := []string{"create", "update", "archive", "restore"}
		for action := range s.audit {
			if !slices.Contains(actions, action) {
				actions = append(actions, action)
			}
		}
		for _, action := range actions {
			if s.audit[action] != want[action] {
				t.Errorf("%s: %d audit rows for %s, want %d", ch.name, s.audit[action], action, want[action])
			}
		}
	}
	if len(byID) != len(c.chains) {
		t.Errorf("%d records for %d creates", len(byID), len(c.chains))
	}
	running := 0
	for _, st := range keys {
		if st != "completed" {
			running++
		}
	}
	if running > 0 || len(keys) != ops {
		t.Errorf("%d keys stored (%d not completed) for %d operations", len(keys), running, ops)
	}
	if dup > 0 {
		t.Errorf("%d duplicate records", dup)
	}
	return len(byID), dup
}

// integrity runs SQLite's own consistency check on the file the killed processes wrote.
func (c *crash) integrity() {
	var res []string
	if err := c.st.Query(context.Background(), c.st.Dialect().Bind("PRAGMA integrity_check"), func(row []any) error {
		res = append(res, store.Text(row[0]))
		return nil
	}); err != nil {
		c.t.Fatal(err)
	}
	if len(res) != 1 || res[0] != "ok" {
		c.t.Errorf("SQLite integrity_check after the kills: %v", res)
	}
}

// report logs what the run did, for docs/reliability.md.
func (c *crash) report(setup, killing, total time.Duration, restarts []time.Duration, midRequest, inflightAtKill, records, dup int) {
	var ops, firstTry, unanswered, replayedAfter, ranAfter, abandoned, unavailable int
	var takeovers, deadFor []time.Duration
	kinds := map[string]int{}
	for _, ch := range c.chains {
		for _, o := range ch.ops {
			if o.status == 0 {
				continue
			}
			ops++
			kinds[o.kind]++
			unavailable += o.unavailable
			switch {
			case o.unanswered == 0 && o.unavailable == 0 && o.inUse == 0:
				firstTry++
			case o.replayed:
				replayedAfter++
			default:
				ranAfter++
			}
			if o.unanswered > 0 {
				unanswered++
			}
			if o.inUse > 0 {
				abandoned++
				takeovers = append(takeovers, o.takeover)
				deadFor = append(deadFor, o.deadFor)
			}
		}
	}
	slices.Sort(restarts)
	slices.Sort(takeovers)
	slices.Sort(deadFor)
	statuses := map[int]int64{}
	c.statuses.Range(func(k, v any) bool { statuses[k.(int)] = v.(*atomic.Int64).Load(); return true })
	cutKills, cutRequests := c.cuts()
	c.t.Logf("%s: set up in %v; %d SIGKILLs in %v (%d landed with requests in flight, %d in all; %d cut requests, which then got no answer, %d in all); restart to serving p50 %v, max %v",
		c.b, setup.Round(time.Millisecond), c.sc.kills, killing.Round(time.Millisecond), midRequest, inflightAtKill, cutKills, cutRequests, pct(restarts, 50), pct(restarts, 100))
	c.t.Logf("%s: %d chains, %d operations (%v) with %d requests from %d clients in %v; answers by status %v",
		c.b, len(c.chains), ops, kinds, c.sent.Load(), c.sc.workers, total.Round(time.Millisecond), statuses)
	c.t.Logf("%s: %d answered on the first attempt; %d lost an answer to a kill: %d had committed (the retry replayed them), %d had not (the retry ran them once); %d behind an abandoned claim (taken over after the first 409 in p50 %v, max %v; the last 409 came p50 %v, max %v after its holder was killed, bound %v); %d 503 answers",
		c.b, firstTry, unanswered, replayedAfter, ranAfter, abandoned, pct(takeovers, 50), pct(takeovers, 100), pct(deadFor, 50), pct(deadFor, 100), inUseBound, unavailable)
	c.t.Logf("%s: database: %d records for %d creates, %d duplicates", c.b, records, kinds["create"], dup)
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100].Round(time.Millisecond)
}
