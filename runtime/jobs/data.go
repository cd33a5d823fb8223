package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/workspace-records/records/runtime/store"
)

// A job's data is kept in job_data in chunks of at most ChunkBytes: an import's upload as parts 1…n (as
// uploaded), an export's file as part 0. Neither is ever held whole in memory.
const outputPart = 0

// PutPart stores upload part n (1…MaxParts) of open import id of workspace, read from body in chunks.
// A part sent again replaces the earlier one. Past MaxPartBytes, or the job's MaxJobBytes, nothing of it
// is kept (ErrTooLarge).
func (s *Service) PutPart(ctx context.Context, workspace, id string, n int, body io.Reader) (*Job, error) {
	j, err := s.Get(ctx, workspace, id)
	if err != nil {
		return nil, err
	}
	if j.Kind != KindImport || j.State != StateOpen {
		return nil, &StateError{State: j.State, Want: "parts can be uploaded only to an open import"}
	}
	ctx = store.WithWorkspace(ctx, workspace)
	err = s.st.Tx(ctx, func(q store.Querier) error {
		// The job row is locked (a no-op update) so that parts of one job are counted one at a time.
		if _, err := q.Exec(ctx, s.d.Bind("UPDATE jobs SET updated_at = updated_at WHERE workspace_id = ? AND id = ?", workspace, j.ID)); err != nil {
			return fmt.Errorf("lock job: %w", err)
		}
		var before int64
		if _, err := store.QueryOne(ctx, q, s.d.Bind("SELECT coalesce(sum(length(data)), 0) FROM job_data WHERE workspace_id = ? AND job_id = ? AND part = ?", workspace, j.ID, n), func(row []any) error {
			before = store.Int(row[0])
			return nil
		}); err != nil {
			return fmt.Errorf("size of part %d: %w", n, err)
		}
		if _, err := q.Exec(ctx, s.d.Bind("DELETE FROM job_data WHERE workspace_id = ? AND job_id = ? AND part = ?", workspace, j.ID, n)); err != nil {
			return fmt.Errorf("replace part %d: %w", n, err)
		}
		room := min(int64(MaxPartBytes), MaxJobBytes-(j.Bytes-before))
		buf := make([]byte, ChunkBytes)
		var size int64
		for seq := 0; ; seq++ {
			k, rerr := io.ReadFull(body, buf)
			if k > 0 {
				if size += int64(k); size > room {
					return ErrTooLarge
				}
				if _, err := q.Exec(ctx, s.d.Bind("INSERT INTO job_data (workspace_id, job_id, part, seq, data) VALUES (?, ?, ?, ?, ?)", workspace, j.ID, n, seq, buf[:k])); err != nil {
					return fmt.Errorf("store part %d: %w", n, err)
				}
			}
			if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
				break
			}
			if rerr != nil {
				return fmt.Errorf("read part %d: %w", n, rerr)
			}
		}
		added := int64(0)
		if before == 0 && size > 0 {
			added = 1
		} else if before > 0 && size == 0 {
			added = -1
		}
		_, err := q.Exec(ctx, s.d.Bind("UPDATE jobs SET parts = parts + ?, bytes = bytes + ?, updated_at = ? WHERE workspace_id = ? AND id = ? AND state = ?",
			added, size-before, s.now(), workspace, j.ID, StateOpen))
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, workspace, id)
}

// reader reads the data of job id of workspace from part from on (parts in order, chunks in order), one
// chunk at a time.
type reader struct {
	s         *Service
	ctx       context.Context
	workspace string
	job       string
	part, seq int64 // the next chunk is the first after (part, seq)
	buf       []byte
	done      bool
	from, to  int64 // parts from…to (inclusive)
}

func (s *Service) data(ctx context.Context, workspace, job string, from, to int64) *reader {
	return &reader{s: s, ctx: store.WithWorkspace(ctx, workspace), workspace: workspace, job: job, part: from, seq: -1, from: from, to: to}
}

func (r *reader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.done {
			return 0, io.EOF
		}
		var found bool
		var err error
		found, err = store.QueryOne(r.ctx, r.s.st, r.s.d.Bind(`SELECT part, seq, data FROM job_data
WHERE workspace_id = ? AND job_id = ? AND part <= ? AND (part > ? OR (part = ? AND seq > ?)) ORDER BY part, seq LIMIT 1`,
			r.workspace, r.job, r.to, r.part, r.part, r.seq), func(row []any) error {
			r.part, r.seq = store.Int(row[0]), store.Int(row[1])
			b, ok := row[2].([]byte)
			if !ok {
				return fmt.Errorf("job data: unexpected %T", row[2])
			}
			r.buf = append(r.buf[:0], b...)
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("read job data: %w", err)
		}
		if !found {
			r.done = true
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// Download writes export id's file to w. Only a completed export has one.
func (s *Service) Download(ctx context.Context, workspace, id string, w io.Writer) error {
	j, err := s.Get(ctx, workspace, id)
	if err != nil {
		return err
	}
	if j.Kind != KindExport || j.State != StateCompleted {
		return &StateError{State: j.State, Want: "only a completed export has a file to download"}
	}
	_, err = io.Copy(w, s.data(ctx, workspace, j.ID, outputPart, outputPart))
	return err
}

// Row is one input row's result: the record it wrote (ID, Unchanged when the row changed nothing), or
// its problems.
type Row struct {
	N         int64            `json:"row"`
	Status    int              `json:"status"`
	ID        string           `json:"id,omitempty"`
	Unchanged bool             `json:"unchanged,omitempty"`
	Errors    []map[string]any `json:"errors,omitempty"`
}

// Rows returns a page of import id's row results: the failed rows (failed) or the succeeded ones, in
// row order after row after (0 for the first page), at most limit; more tells whether more follow.
func (s *Service) Rows(ctx context.Context, workspace, id string, failed bool, after int64, limit int) (out []Row, more bool, err error) {
	j, err := s.Get(ctx, workspace, id)
	if err != nil {
		return nil, false, err
	}
	if j.Kind != KindImport {
		return nil, false, &StateError{State: "an export", Want: "only an import has row results"}
	}
	cmp := "<"
	if failed {
		cmp = ">="
	}
	err = s.st.Query(store.WithWorkspace(ctx, workspace), s.d.Bind(`SELECT row_no, status, record_id, unchanged, errors FROM job_rows
WHERE workspace_id = ? AND job_id = ? AND status `+cmp+` 400 AND row_no > ? ORDER BY row_no LIMIT ?`, workspace, j.ID, after, limit+1), func(row []any) error {
		r := Row{N: store.Int(row[0]), Status: int(store.Int(row[1])), ID: store.UUIDText(row[2]), Unchanged: store.Bool(row[3])}
		if row[4] != nil {
			if err := json.Unmarshal(store.JSON(row[4]), &r.Errors); err != nil {
				return err
			}
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("job rows: %w", err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}
