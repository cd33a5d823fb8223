package crash_test

// TestCrash, after the kills: the change feed (GET /v1/events) compared with the records and their
// audit rows.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"time"

	"github.com/workspace-records/records/runtime/store"
)

// feedEvent is one event of the feed as the test reads it.
type feedEvent struct {
	ID       string         `json:"id"`
	Sequence int64          `json:"sequence"`
	Type     string         `json:"type"`
	Resource string         `json:"resource"`
	RecordID *string        `json:"record_id"`
	Data     map[string]any `json:"data"`
}

// feedPage is the limit of the feed's pages the test reads: not a divisor of anything in particular.
const feedPage = 97

// eventTypes maps an audit action to its event's type.
var eventTypes = map[string]string{"create": "companies.created", "update": "companies.updated", "archive": "companies.archived", "restore": "companies.restored"}

// unnumbered counts the workspace's events no sequencer has numbered yet.
func (c *crash) unnumbered() int {
	var n int
	ctx := store.WithWorkspace(context.Background(), c.ws)
	if _, err := store.QueryOne(ctx, c.st, c.st.Dialect().Bind("SELECT count(*) FROM event_queue WHERE workspace_id = ?", c.ws), func(row []any) error {
		n = int(store.Int(row[0]))
		return nil
	}); err != nil {
		c.t.Errorf("count unnumbered events: %v", err)
	}
	return n
}

// noteUnnumbered adds to left the ids of the workspace's events no sequencer has numbered yet: called
// while no recordsd runs, they are what the killed processes committed and did not number.
func (c *crash) noteUnnumbered(left map[string]bool) {
	ctx := store.WithWorkspace(context.Background(), c.ws)
	if err := c.st.Query(ctx, c.st.Dialect().Bind("SELECT id FROM event_queue WHERE workspace_id = ?", c.ws), func(row []any) error {
		left[store.UUIDText(row[0])] = true
		return nil
	}); err != nil {
		c.t.Errorf("read unnumbered events: %v", err)
	}
}

// checkFeed waits, with the last recordsd serving, until the sweep has numbered every event the killed
// processes left unnumbered, then reads the whole feed through the API and checks it against c.expect:
// sequences 1..N without gap or duplicate; per record one created event and one updated or archived
// event per audit row expected; no event of a record that does not exist; each event's data.id its
// record_id. A feed resumed after a random sequence k holds exactly the events after k. left holds the
// events the killed processes left unnumbered, for the log.
func (c *crash) checkFeed(left map[string]bool) {
	t := c.t
	start := time.Now()
	waiting := c.unnumbered() // as the feed check begins
	for n, deadline := waiting, time.Now().Add(10*time.Second); n > 0; n = c.unnumbered() {
		if time.Now().After(deadline) {
			t.Errorf("%d events still unnumbered 10 s after the feed check began", n)
			c.dumpUnnumbered()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	numbered := time.Since(start)

	all, ok := c.readFeed("start")
	if !ok {
		return
	}
	var stored, top int64
	ctx := store.WithWorkspace(context.Background(), c.ws)
	if _, err := store.QueryOne(ctx, c.st, c.st.Dialect().Bind("SELECT count(*), coalesce(max(seq), 0) FROM event_numbers WHERE workspace_id = ?", c.ws), func(row []any) error {
		stored, top = store.Int(row[0]), store.Int(row[1])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if int64(len(all)) != stored || top != stored {
		t.Errorf("the feed holds %d events; the events table %d, the highest sequence %d", len(all), stored, top)
	}
	gaps := 0
	for i, e := range all {
		if e.Sequence != int64(i+1) {
			if gaps++; gaps <= 10 {
				t.Errorf("event %d of the feed (%s %s) has sequence %d, want %d", i, e.Type, e.ID, e.Sequence, i+1)
			}
		}
	}

	got := map[string]map[string]int{} // record id -> event type -> events
	ids := map[string]bool{}
	for _, e := range all {
		if ids[e.ID] {
			t.Errorf("event %s served twice", e.ID)
		}
		ids[e.ID] = true
		if e.RecordID == nil {
			t.Errorf("event %d (%s) names no record", e.Sequence, e.Type)
			continue
		}
		id := *e.RecordID
		if c.expect[id] == nil {
			t.Errorf("event %d (%s) of record %s, which does not exist", e.Sequence, e.Type, id)
		}
		if e.Data["id"] != id {
			t.Errorf("event %d (%s) of record %s: data.id %v", e.Sequence, e.Type, id, e.Data["id"])
		}
		if got[id] == nil {
			got[id] = map[string]int{}
		}
		got[id][e.Type]++
	}
	bad := 0
	for id, want := range c.expect {
		types := map[string]int{"companies.created": 1}
		for action, n := range want {
			typ, ok := eventTypes[action]
			if !ok {
				typ = "companies." + action
			}
			types[typ] = n
		}
		for typ := range got[id] {
			if _, ok := types[typ]; !ok {
				types[typ] = 0
			}
		}
		for typ, n := range types {
			if got[id][typ] != n {
				if bad++; bad <= 20 {
					t.Errorf("record %s: %d %s events, want %d", id, got[id][typ], typ, n)
				}
			}
		}
	}
	if bad > 20 {
		t.Errorf("%d (record, event type) counts wrong in all", bad)
	}

	// Resume after a random sequence, as a consumer that had read up to k would.
	k := mrand.IntN(len(all) + 1)
	rest, ok := c.readFeed(fmt.Sprint(k))
	if ok {
		var want []feedEvent
		for _, e := range all {
			if e.Sequence > int64(k) {
				want = append(want, e)
			}
		}
		if len(rest) != len(want) {
			t.Errorf("the feed resumed after %d holds %d events, want %d", k, len(rest), len(want))
		}
		for i := range min(len(rest), len(want)) {
			if rest[i].ID != want[i].ID || rest[i].Sequence != want[i].Sequence {
				t.Errorf("the feed resumed after %d: event %d is %d (%s), want %d (%s)", k, i, rest[i].Sequence, rest[i].ID, want[i].Sequence, want[i].ID)
				break
			}
		}
	}
	types := map[string]int{}
	swept := 0
	for _, e := range all {
		types[e.Type]++
		if left[e.ID] {
			swept++
		}
	}
	t.Logf("%s: feed: %d events %v, the last sequence %d; %d numbered by the server that wrote them, at least %d left unnumbered by a killed process (numbered later by another server's sweep, or its numbering of its own writes); %d unnumbered when the feed check began, all numbered %v later; resumed after %d: %d events",
		c.b, len(all), types, top, len(all)-swept, swept, waiting, numbered.Round(time.Millisecond), k, len(rest))
}

// readFeed reads the feed through the API from cursor to its end, page by page.
func (c *crash) readFeed(cursor string) ([]feedEvent, bool) {
	var out []feedEvent
	for range 100000 {
		req, err := http.NewRequest("GET", fmt.Sprintf("%s/v1/events?cursor=%s&limit=%d", c.url, cursor, feedPage), nil)
		if err != nil {
			c.t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+c.key)
		res, err := c.client.Do(req)
		if err != nil {
			c.t.Errorf("GET /v1/events?cursor=%s: %v", cursor, err)
			return out, false
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			c.t.Errorf("GET /v1/events?cursor=%s: %v", cursor, err)
			return out, false
		}
		c.checkEnvelope(req, nil, res, body)
		if res.StatusCode != 200 {
			c.t.Errorf("GET /v1/events?cursor=%s: %d %.300s", cursor, res.StatusCode, body)
			return out, false
		}
		var page struct {
			Data []feedEvent `json:"data"`
			Meta struct {
				NextCursor string `json:"next_cursor"`
				HasMore    bool   `json:"has_more"`
			} `json:"meta"`
		}
		if err := json.Unmarshal(body, &page); err != nil || page.Meta.NextCursor == "" {
			c.t.Errorf("GET /v1/events?cursor=%s: %v: %.300s", cursor, err, body)
			return out, false
		}
		out = append(out, page.Data...)
		if !page.Meta.HasMore {
			return out, true
		}
		cursor = page.Meta.NextCursor
	}
	c.t.Errorf("the feed did not end")
	return out, false
}

// dumpUnnumbered logs the events still unnumbered, for a failure's report.
func (c *crash) dumpUnnumbered() {
	ctx := store.WithWorkspace(context.Background(), c.ws)
	_ = c.st.Query(ctx, c.st.Dialect().Bind("SELECT e.id, e.type, e.record_id, e.created_at FROM event_queue q JOIN events e ON e.workspace_id = q.workspace_id AND e.id = q.id WHERE q.workspace_id = ? ORDER BY q.id LIMIT 20", c.ws), func(row []any) error {
		c.t.Logf("unnumbered: %s %s %s %v", store.UUIDText(row[0]), store.Text(row[1]), store.UUIDText(row[2]), row[3])
		return nil
	})
}
