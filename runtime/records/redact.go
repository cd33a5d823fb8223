package records

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/store"
)

// withheld collects the text of values the caller of a write may not read, so that what a rules plugin
// says back to the caller cannot repeat them. Plugins read records unrestricted (hookReader), and their
// refusals are free text: "may not be before the project's start date 2031-07-19" would show a masked
// start date, "subtask \"Layoffs\" is still open" the title of a task the caller's record rule hides.
// Every value of a field the caller's role masks or hides, and every value of a record the caller
// cannot see at all, is collected from the record written and from each lookup; the plugin's messages
// are then scrubbed of them (scrub). The zero value collects nothing until add* is called.
type withheld struct {
	texts map[string]bool
}

// addRecord collects the values of rec (a record of the resource pol is about) that pol does not let
// the caller read; with all set, every value but the id (the record is invisible to the caller).
func (w *withheld) addRecord(pol *access.Policy, rec map[string]any, all bool) {
	if rec == nil || (!all && !pol.Restricted()) {
		return
	}
	for key, v := range rec {
		if (all && key != "id") || (!all && !pol.Readable(key)) {
			w.addValue(v)
		}
	}
}

// addValue collects the renderings of v a plugin would print: the text itself, a date-time's date,
// a number as JSON and as Go formats it (%v). Booleans and empty values are left out: "true" and ""
// are in too many messages to mean anything.
func (w *withheld) addValue(v any) {
	add := func(s string) {
		if s == "" {
			return
		}
		if w.texts == nil {
			w.texts = map[string]bool{}
		}
		w.texts[s] = true
	}
	addFloat := func(f float64) {
		add(strconv.FormatFloat(f, 'f', -1, 64))
		add(strconv.FormatFloat(f, 'g', -1, 64))
	}
	switch x := v.(type) {
	case string:
		add(x)
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			add(t.Format(time.DateOnly))
			add(t.UTC().Format(time.RFC3339))
		}
	case json.Number:
		add(x.String())
		if f, err := x.Float64(); err == nil {
			addFloat(f)
		}
	case float64:
		addFloat(x)
	case int64:
		add(strconv.FormatInt(x, 10))
	case int:
		add(strconv.Itoa(x))
	case time.Time:
		add(x.Format(time.DateOnly))
		add(x.UTC().Format(time.RFC3339))
	case []any:
		for _, e := range x {
			w.addValue(e)
		}
	case map[string]any:
		for _, e := range x {
			w.addValue(e)
		}
	}
}

// scrub replaces every collected value that msg holds as a whole word (not inside a longer word or
// number: a withheld 5 leaves "at most 50" alone) with "•••".
func (w *withheld) scrub(msg string) string {
	if len(w.texts) == 0 || msg == "" {
		return msg
	}
	texts := make([]string, 0, len(w.texts))
	for t := range w.texts {
		if strings.Contains(msg, t) {
			texts = append(texts, t)
		}
	}
	sort.Slice(texts, func(i, j int) bool { return len(texts[i]) > len(texts[j]) })
	for _, t := range texts {
		first, _ := utf8.DecodeRuneInString(t)
		last, _ := utf8.DecodeLastRuneInString(t)
		var b strings.Builder
		done := 0 // msg[:done] is written
		for from := 0; from <= len(msg)-len(t); {
			i := strings.Index(msg[from:], t)
			if i < 0 {
				break
			}
			i += from
			end := i + len(t)
			before, _ := utf8.DecodeLastRuneInString(msg[:i])
			after, _ := utf8.DecodeRuneInString(msg[end:])
			if (i > 0 && word(before) && word(first)) || (end < len(msg) && word(after) && word(last)) {
				from = i + 1
				continue
			}
			b.WriteString(msg[done:i])
			b.WriteString("•••")
			done, from = end, end
		}
		b.WriteString(msg[done:])
		msg = b.String()
	}
	return msg
}

func word(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// visibleIDs returns which of the records ids of r the caller's policy pol reaches under its record
// rule, in one query. With the rule "all" every record is visible and nothing is read.
func (s *Service) visibleIDs(ctx context.Context, q store.Querier, r *model.Resource, pol *access.Policy, workspace string, ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	if pol.Rule == access.All {
		for _, id := range ids {
			out[id] = true
		}
		return out, nil
	}
	for len(ids) > 0 {
		n := min(len(ids), listplan.MaxInValues)
		values := make([]any, n)
		for i, id := range ids[:n] {
			values[i] = id
		}
		ids = ids[n:]
		size := n
		plan, errs := listplan.Build(r, listplan.Params{Filters: []any{map[string]any{"field": "id", "op": "in", "value": values}}, PageSize: &size, IncludeArchived: true},
			listplan.Scope{Workspace: workspace, Secret: s.secret, Policy: pol})
		if len(errs) > 0 {
			return nil, errs
		}
		for _, stmt := range s.d.List(plan, workspace) {
			err := q.Query(ctx, stmt, func(row []any) error {
				rec, err := s.toRecord(r, row, workspace, "")
				if err == nil {
					id, _ := rec["id"].(string)
					out[id] = true
				}
				return err
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
