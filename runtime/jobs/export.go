package jobs

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/runtime/jsonenc"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
)

// ExportPage is how many records an export reads per page (and writes per chunk).
const ExportPage = 2000

// export walks j's list under a's masks and record rules and writes it to j's file (part 0), a page
// per transaction with the walk's cursor, so that a resumed export goes on after the last page written.
// Every ExportUnit records are taken from the quota (charge) before their page is read.
func (s *Service) export(ctx context.Context, svc *records.Service, a records.Actor, c *records.Collection, j *Job, charge func(context.Context, int64) error) error {
	lq, err := records.ReadList(records.ListRequest{Body: j.Spec.Query})
	if err != nil {
		return err
	}
	columns := exportColumns(c, j.Spec.Query)
	seq := int64(0)
	if j.Walk != "" || j.NextRow > 0 {
		if _, err := store.QueryOne(store.WithWorkspace(ctx, j.Workspace), s.st, s.d.Bind("SELECT coalesce(max(seq), -1) + 1 FROM job_data WHERE workspace_id = ? AND job_id = ? AND part = ?", j.Workspace, j.ID, outputPart), func(row []any) error {
			seq = store.Int(row[0])
			return nil
		}); err != nil {
			return fmt.Errorf("export's last chunk: %w", err)
		}
	}
	cursor := j.Walk
	for {
		if err := charge(ctx, ExportPage/ExportUnit); err != nil {
			return err
		}
		page, err := svc.List(ctx, a, c, lq.Walk(cursor, ExportPage))
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if j.Spec.Format == "ndjson" {
			for _, rec := range page.Records {
				b, err := jsonenc.Marshal(rec)
				if err != nil {
					return fmt.Errorf("encode record: %w", err)
				}
				buf.Write(bytes.TrimRight(b, "\n"))
				buf.WriteByte('\n')
			}
		} else {
			w := csv.NewWriter(&buf)
			if seq == 0 {
				if err := w.Write(columns); err != nil {
					return err
				}
			}
			cells := make([]string, len(columns))
			for _, rec := range page.Records {
				for i, col := range columns {
					cells[i] = cell(rec, col)
				}
				if err := w.Write(cells); err != nil {
					return err
				}
			}
			w.Flush()
			if err := w.Error(); err != nil {
				return err
			}
		}
		next := ""
		if page.NextCursor != nil && page.HasMore {
			next = *page.NextCursor
		}
		wctx := store.WithWorkspace(ctx, j.Workspace)
		n := int64(len(page.Records))
		if err := s.st.Tx(wctx, func(q store.Querier) error {
			for off := 0; off < buf.Len(); off += ChunkBytes {
				end := min(off+ChunkBytes, buf.Len())
				if _, err := q.Exec(wctx, s.d.Bind("INSERT INTO job_data (workspace_id, job_id, part, seq, data) VALUES (?, ?, ?, ?, ?)", j.Workspace, j.ID, outputPart, seq, buf.Bytes()[off:end])); err != nil {
					return fmt.Errorf("store export chunk: %w", err)
				}
				seq++
			}
			if buf.Len() == 0 && seq == 0 {
				// An export with no record and no header (NDJSON) still has its (empty) file.
				if _, err := q.Exec(wctx, s.d.Bind("INSERT INTO job_data (workspace_id, job_id, part, seq, data) VALUES (?, ?, ?, ?, ?)", j.Workspace, j.ID, outputPart, seq, []byte{})); err != nil {
					return fmt.Errorf("store export chunk: %w", err)
				}
				seq++
			}
			return s.advance(wctx, q, j, progress{next: j.NextRow + n, read: n, written: n, walk: next})
		}); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		cursor = next
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// exportColumns are the CSV columns of an export of c: the fields its query selects, or id, every
// declared field the caller does not have hidden, then the custom fields as cf__<key>.
func exportColumns(c *records.Collection, query map[string]any) []string {
	if fs, ok := query["fields"].([]any); ok && len(fs) > 0 {
		var out []string
		for _, f := range fs {
			if s, ok := f.(string); ok && c.Policy.Visibility(s) != access.Hidden {
				out = append(out, s)
			}
		}
		return out
	}
	out := []string{}
	for _, f := range c.Resource.Fields {
		if c.Policy.Visibility(f.Key) != access.Hidden {
			out = append(out, f.Key)
		}
	}
	var custom []string
	for _, d := range c.Fields.Defs {
		custom = append(custom, "cf__"+d.Key)
	}
	sort.Strings(custom)
	return append(out, custom...)
}

// cell is the CSV text of column col of rec: text as it is, numbers and booleans as JSON writes them, a
// list joined by ";", an object as JSON, null as an empty cell.
func cell(rec records.Record, col string) string {
	var v any
	if name, ok := strings.CutPrefix(col, "cf__"); ok {
		cf, _ := rec["custom_fields"].(map[string]any)
		v = cf[name]
	} else {
		v = rec[col]
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, ";")
	case map[string]any:
		b, _ := json.Marshal(x)
		return string(b)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}
