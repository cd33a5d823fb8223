package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/runtime/jsonenc"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
)

// exportBlock is about how much of a streamed export's file is stored per transaction (in chunks of
// ChunkBytes): fewer commits than one a chunk, and still progress every fraction of a second.
const exportBlock = 4 * ChunkBytes

// ExportPage is how many records an export reads per page when it walks (and how many it charges to
// the quota at a time).
const ExportPage = 2000

// export writes j's list under a's masks and record rules to j's file (part 0). A query that one
// statement can read (records.Service.Stream: no expansion, no custom-field sort) is read that way, from
// one snapshot; any other walks the keyset cursor a page at a time (exportWalk).
func (s *Service) export(ctx context.Context, svc *records.Service, a records.Actor, c *records.Collection, j *Job, charge func(context.Context, int64) error) error {
	lq, err := records.ReadList(records.ListRequest{Body: j.Spec.Query})
	if err != nil {
		return err
	}
	columns := exportColumns(c, j.Spec.Query)
	err = s.exportStream(ctx, svc, a, c, j, lq, columns, charge)
	if errors.Is(err, records.ErrNotStreamed) {
		return s.exportWalk(ctx, svc, a, c, j, lq, columns, charge)
	}
	return err
}

// exportStream writes j's file from one read of its query (one snapshot). The file is stored in blocks
// of about ChunkBytes by a second goroutine while the read goes on, each block with the job's progress
// in one transaction. A read cannot resume where another server's stopped, so an export taken over
// starts again: what the earlier holder stored is deleted, and the records it already charged to the
// quota are not charged twice.
func (s *Service) exportStream(ctx context.Context, svc *records.Service, a records.Actor, c *records.Collection, j *Job, lq *records.ListQuery, columns []string, charge func(context.Context, int64) error) error {
	charged := j.NextRow
	if err := s.restartExport(ctx, j); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	blocks := make(chan fileBlock, 1)
	stored := make(chan error, 1)
	go func() {
		var err error
		seq := int64(0)
		for b := range blocks {
			if err != nil {
				continue
			}
			if err = s.storeBlock(ctx, j, &seq, b); err != nil {
				cancel(err)
			}
		}
		stored <- err
	}()

	buf := make([]byte, 0, exportBlock+ChunkBytes/8)
	var rows, count int64
	send := func() {
		blocks <- fileBlock{data: buf, rows: rows}
		buf, rows = make([]byte, 0, exportBlock+ChunkBytes/8), 0
	}
	add := func() error {
		count++
		rows++
		if count > charged && (count-1)%ExportPage == 0 {
			if err := charge(ctx, ExportPage/ExportUnit); err != nil {
				return err
			}
		}
		if len(buf) >= exportBlock {
			send()
		}
		return nil
	}
	var err error
	if j.Spec.Format == "ndjson" {
		err = svc.Stream(ctx, a, c, lq, func(rec records.Record) error {
			var err error
			if buf, err = appendNDJSON(buf, rec); err != nil {
				return err
			}
			return add()
		})
	} else {
		buf = csvHeader(buf, columns)
		err = svc.StreamValues(ctx, a, c, lq, columns, func(vals []any) error {
			buf = appendCSVValues(buf, vals)
			return add()
		})
	}
	if errors.Is(err, records.ErrNotStreamed) {
		close(blocks)
		<-stored
		return err
	}
	return s.endStream(blocks, stored, send, err)
}

// endStream sends the last block (the whole file, when it is empty), waits until every block is stored
// and answers the first error of the read or the store.
func (s *Service) endStream(blocks chan fileBlock, stored chan error, send func(), readErr error) error {
	if readErr == nil {
		send()
	}
	close(blocks)
	storeErr := <-stored
	if storeErr != nil {
		return storeErr
	}
	return readErr
}

// fileBlock is a piece of an export's file and the number of records it holds.
type fileBlock struct {
	data []byte
	rows int64
}

// storeBlock stores b as the next chunks of j's file (from *seq on) with the job's progress, in one
// transaction. The first block is stored even when empty, so that an empty export has its file.
func (s *Service) storeBlock(ctx context.Context, j *Job, seq *int64, b fileBlock) error {
	wctx := store.WithWorkspace(ctx, j.Workspace)
	next := *seq
	err := s.st.Tx(wctx, func(q store.Querier) error {
		var err error
		if next, err = s.putFile(wctx, q, j, next, b.data); err != nil {
			return err
		}
		return s.advance(wctx, q, j, progress{next: j.NextRow + b.rows, read: b.rows, written: b.rows})
	})
	if err == nil {
		*seq = next
	}
	return err
}

// putFile stores data as the chunks of j's file from seq on, in q, and returns the seq after them. The
// file's first piece is stored even when empty, so that an empty export has its file.
func (s *Service) putFile(ctx context.Context, q store.Querier, j *Job, seq int64, data []byte) (int64, error) {
	for off := 0; off < len(data) || (off == 0 && seq == 0); off += ChunkBytes {
		end := min(off+ChunkBytes, len(data))
		if _, err := q.Exec(ctx, s.d.Bind("INSERT INTO job_data (workspace_id, job_id, part, seq, data) VALUES (?, ?, ?, ?, ?)", j.Workspace, j.ID, outputPart, seq, data[off:end])); err != nil {
			return seq, fmt.Errorf("store export chunk: %w", err)
		}
		seq++
	}
	return seq, nil
}

// restartExport deletes what an earlier holder of j stored of its file and sets its counts back to zero.
func (s *Service) restartExport(ctx context.Context, j *Job) error {
	if j.NextRow == 0 && j.Walk == "" {
		return nil
	}
	wctx := store.WithWorkspace(ctx, j.Workspace)
	return s.st.Tx(wctx, func(q store.Querier) error {
		if _, err := q.Exec(wctx, s.d.Bind("DELETE FROM job_data WHERE workspace_id = ? AND job_id = ? AND part = ?", j.Workspace, j.ID, outputPart)); err != nil {
			return fmt.Errorf("restart export: %w", err)
		}
		if _, err := q.Exec(wctx, s.d.Bind("UPDATE jobs SET rows_read = 0, rows_written = 0 WHERE workspace_id = ? AND id = ?", j.Workspace, j.ID)); err != nil {
			return fmt.Errorf("restart export: %w", err)
		}
		j.NextRow, j.Walk = 0, ""
		return s.advance(wctx, q, j, progress{})
	})
}

// exportWalk walks j's list a page at a time with the walk's cursor, each page written with the cursor
// after it in one transaction, so that a resumed export goes on after the last page written. Every
// ExportUnit records are taken from the quota (charge) before their page is read.
func (s *Service) exportWalk(ctx context.Context, svc *records.Service, a records.Actor, c *records.Collection, j *Job, lq *records.ListQuery, columns []string, charge func(context.Context, int64) error) error {
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
		var buf []byte
		if j.Spec.Format == "ndjson" {
			for _, rec := range page.Records {
				if buf, err = appendNDJSON(buf, rec); err != nil {
					return err
				}
			}
		} else {
			if seq == 0 {
				buf = csvHeader(buf, columns)
			}
			vals := make([]any, len(columns))
			for _, rec := range page.Records {
				for i, col := range columns {
					vals[i] = value(rec, col)
				}
				buf = appendCSVValues(buf, vals)
			}
		}
		next := ""
		if page.NextCursor != nil && page.HasMore {
			next = *page.NextCursor
		}
		wctx := store.WithWorkspace(ctx, j.Workspace)
		n := int64(len(page.Records))
		if err := s.st.Tx(wctx, func(q store.Querier) error {
			after, err := s.putFile(wctx, q, j, seq, buf)
			if err != nil {
				return err
			}
			if err := s.advance(wctx, q, j, progress{next: j.NextRow + n, read: n, written: n, walk: next}); err != nil {
				return err
			}
			seq = after
			return nil
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
	out := []string{"id"}
	for _, f := range c.Resource.Fields {
		// The custom_fields object is left out: its values are the cf__ columns.
		if f.Key != "id" && f.Key != "custom_fields" && c.Policy.Visibility(f.Key) != access.Hidden {
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

// value is the value of column col of rec: a field, or cf__<key> for a custom field.
func value(rec records.Record, col string) any {
	if name, ok := strings.CutPrefix(col, "cf__"); ok {
		cf, _ := rec["custom_fields"].(map[string]any)
		return cf[name]
	}
	return rec[col]
}

// appendNDJSON appends rec as one line of JSON.
func appendNDJSON(buf []byte, rec records.Record) ([]byte, error) {
	b, err := jsonenc.Marshal(rec)
	if err != nil {
		return buf, fmt.Errorf("encode record: %w", err)
	}
	return append(bytes.TrimRight(append(buf, b...), "\n"), '\n'), nil
}
