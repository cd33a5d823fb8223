package main

// The bulk jobs of issue 37: an import job of the bench's row count of companies (CSV with the custom
// field, no hook) through the API against a raw load of the same rows into the same tables, and an
// export job of them (CSV) against a raw COPY TO; recordsd's RSS sampled throughout, and the longest
// time the job's counts stood still.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspace-records/records/runtime/store"
)

// jobsReport is what the jobs phase measured.
type jobsReport struct {
	rows                         int
	upload, importRun, rawImport time.Duration
	exportRun, rawExport         time.Duration
	exportQueued, exportRan      time.Duration // from creation to start, and start to end, as the job says
	exportBytes, rawExportBytes  int
	maxRSS                       float64
	maxGap                       time.Duration // the longest time the job's counts stood still while it ran
	rawNote                      string
}

// jobPart is the size of one upload part.
const jobPart = 32 << 20

// runJobs runs the jobs phase on a fresh workspace-free slice of the bench's workspace: the imported
// companies' domains start with "bulk-", the raw load's with "rawbulk-".
func (b *bench) runJobs(ctx context.Context) error {
	n := b.o.rows
	rep := &jobsReport{rows: n}
	b.rep.jobs = rep
	fmt.Fprintf(os.Stderr, "%s jobs: import and export of %d companies\n", b.backend, n)
	stopRSS := b.sampleRSS(&rep.maxRSS)
	defer stopRSS()

	// The import: create, upload the CSV in parts (made part by part, never whole), close, wait.
	var job struct {
		Data struct {
			ID     string         `json:"id"`
			State  string         `json:"state"`
			Error  any            `json:"error"`
			Counts map[string]int `json:"counts"`
		} `json:"data"`
	}
	if err := b.apiJSON(ctx, "POST", "/v1/jobs", []byte(`{"type":"import","resource":"companies"}`), "application/json", 201, &job); err != nil {
		return fmt.Errorf("create the import: %w", err)
	}
	id := job.Data.ID
	t0 := time.Now()
	var part bytes.Buffer
	partNo := 0
	flush := func() error {
		partNo++
		err := b.apiJSON(ctx, "PUT", fmt.Sprintf("/v1/jobs/%s/parts/%d", id, partNo), part.Bytes(), "text/csv", 200, nil)
		part.Reset()
		return err
	}
	part.WriteString("name,domain,employee_count,cf__employee_target\n")
	for i := range n {
		fmt.Fprintf(&part, "Bulk company %d,bulk-%07d.example.com,%d,%d\n", i, i, i%50000, i%50000)
		if part.Len() >= jobPart {
			if err := flush(); err != nil {
				return fmt.Errorf("upload part %d: %w", partNo, err)
			}
		}
	}
	if part.Len() > 0 {
		if err := flush(); err != nil {
			return fmt.Errorf("upload part %d: %w", partNo, err)
		}
	}
	rep.upload = time.Since(t0)
	t0 = time.Now()
	if err := b.apiJSON(ctx, "POST", "/v1/jobs/"+id+"/close", nil, "", 200, nil); err != nil {
		return fmt.Errorf("close the import: %w", err)
	}
	if err := b.awaitJob(ctx, id, rep); err != nil {
		return err
	}
	rep.importRun = time.Since(t0)

	// The raw load of the same rows and columns (records and custom values; no audit entry, event or
	// search text): COPY on PostgreSQL, multi-row INSERTs of 1,000 in one transaction on SQLite.
	t0 = time.Now()
	if err := b.rawLoad(ctx, n); err != nil {
		return fmt.Errorf("raw load: %w", err)
	}
	rep.rawImport = time.Since(t0)

	// The export of the imported companies, and the raw COPY TO of the same rows.
	q := `{"type":"export","resource":"companies","query":{"filters":[{"field":"domain","op":"starts_with","value":"bulk-"}],"fields":["id","name","domain","employee_count","created_at"]}}`
	if err := b.apiJSON(ctx, "POST", "/v1/jobs", []byte(q), "application/json", 201, &job); err != nil {
		return fmt.Errorf("create the export: %w", err)
	}
	t0 = time.Now()
	stopProfile := b.profile(b.backend+"-jobs-export", time.Second)
	if err := b.awaitJob(ctx, job.Data.ID, nil); err != nil {
		return err
	}
	req, err := b.apiReq("GET", "/v1/jobs/"+job.Data.ID+"/download", nil, false)
	if err != nil {
		return err
	}
	// The file as stored, as COPY TO writes it: Go's client would otherwise ask for gzip (and the server
	// compress 11 MB for every 100,000 rows).
	req.Header.Set("Accept-Encoding", "identity")
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	size, err := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 {
		return fmt.Errorf("download: %d %v", res.StatusCode, err)
	}
	rep.exportRun, rep.exportBytes = time.Since(t0), int(size)
	stopProfile()
	var ended struct {
		Data struct {
			CreatedAt  time.Time `json:"created_at"`
			StartedAt  time.Time `json:"started_at"`
			FinishedAt time.Time `json:"finished_at"`
		} `json:"data"`
	}
	if err := b.apiJSON(ctx, "GET", "/v1/jobs/"+job.Data.ID, nil, "", 200, &ended); err == nil {
		rep.exportQueued, rep.exportRan = ended.Data.StartedAt.Sub(ended.Data.CreatedAt), ended.Data.FinishedAt.Sub(ended.Data.StartedAt)
	}
	t0 = time.Now()
	if rep.rawExportBytes, err = b.rawExport(ctx); err != nil {
		return fmt.Errorf("raw export: %w", err)
	}
	rep.rawExport = time.Since(t0)
	fmt.Fprintf(os.Stderr, "%s jobs: import %v (raw %v), export %v (raw %v), RSS ≤ %.0f MB, longest still %v\n", b.backend,
		rep.importRun.Round(time.Millisecond), rep.rawImport.Round(time.Millisecond), rep.exportRun.Round(time.Millisecond),
		rep.rawExport.Round(time.Millisecond), rep.maxRSS, rep.maxGap.Round(time.Millisecond))
	return nil
}

// apiJSON sends one request to recordsd with the bench's key and decodes a JSON answer into out (nil:
// discarded), failing on any status but want.
func (b *bench) apiJSON(ctx context.Context, method, path string, body []byte, contentType string, want int, out any) error {
	req, err := b.apiReq(method, path, body, false)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: %d %.300s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// awaitJob polls job id every 50 ms until it has ended (completed, or an error), noting in rep (nil:
// not noted) the longest time its counts stood still while it ran.
func (b *bench) awaitJob(ctx context.Context, id string, rep *jobsReport) error {
	var last string
	changed := time.Now()
	for {
		var job struct {
			Data struct {
				State  string         `json:"state"`
				Error  any            `json:"error"`
				Counts map[string]int `json:"counts"`
			} `json:"data"`
		}
		if err := b.apiJSON(ctx, "GET", "/v1/jobs/"+id, nil, "", 200, &job); err != nil {
			return err
		}
		switch job.Data.State {
		case "completed":
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("job %s %s: %v (%v)", id, job.Data.State, job.Data.Error, job.Data.Counts)
		}
		if now := fmt.Sprint(job.Data.Counts); now != last {
			if rep != nil && last != "" && job.Data.State == "running" {
				rep.maxGap = max(rep.maxGap, time.Since(changed))
			}
			last, changed = now, time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sampleRSS records recordsd's largest RSS into max every 100 ms until the returned function is called.
func (b *bench) sampleRSS(peak *float64) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			*peak = max(*peak, b.api.rssMB())
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// rawLoad writes n companies (name, domain, employee_count, the custom field in custom_fields and
// custom_values) as a hand-written loader would.
func (b *bench) rawLoad(ctx context.Context, n int) error {
	now := time.Now().UTC()
	ids := make([]string, n)
	records := make([][]any, n)
	customs := make([][]any, n)
	for i := range n {
		ids[i] = store.NewID()
		v := i % 50000
		cf := `{"` + b.field + `":` + strconv.Itoa(v) + `}`
		records[i] = []any{b.workspace, ids[i], "Raw company " + strconv.Itoa(i), fmt.Sprintf("rawbulk-%07d.example.com", i), v, now, now, cf}
		customs[i] = []any{b.workspace, b.field, ids[i], strconv.Itoa(v), v}
	}
	recCols := []string{"workspace_id", "id", "name", "domain", "employee_count", "created_at", "updated_at", "custom_fields"}
	cvCols := []string{"workspace_id", "field_id", "record_id", "t", "n"}
	if b.raw.pg != nil {
		b.rep.jobs.rawNote = "COPY FROM of the records and their custom values, one transaction"
		tx, err := b.raw.pg.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"rec_companies"}, recCols, pgx.CopyFromRows(records)); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"custom_values"}, cvCols, pgx.CopyFromRows(customs)); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	b.rep.jobs.rawNote = "multi-row INSERTs of 1,000 rows (records, then custom values), one transaction"
	tx, err := b.raw.lite.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, t := range []struct {
		table string
		cols  []string
		rows  [][]any
	}{{"rec_companies", recCols, records}, {"custom_values", cvCols, customs}} {
		for start := 0; start < len(t.rows); start += 1000 {
			chunk := t.rows[start:min(start+1000, len(t.rows))]
			ph := "(" + strings.TrimSuffix(strings.Repeat("?,", len(t.cols)), ",") + ")"
			stmt := "INSERT INTO " + t.table + " (" + strings.Join(t.cols, ",") + ") VALUES " + strings.TrimSuffix(strings.Repeat(ph+",", len(chunk)), ",")
			args := make([]any, 0, len(chunk)*len(t.cols))
			for _, r := range chunk {
				for _, v := range r {
					if tm, ok := v.(time.Time); ok {
						v = tm.Format("2006-01-02T15:04:05.000000Z")
					}
					args = append(args, v)
				}
			}
			if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// rawExport reads the imported companies' exported columns as CSV: COPY TO on PostgreSQL, a SELECT
// written with encoding/csv's rules on SQLite. It returns the bytes written.
func (b *bench) rawExport(ctx context.Context) (int, error) {
	sel := `SELECT id, name, domain, employee_count, created_at FROM rec_companies WHERE workspace_id = '` + b.workspace + `' AND domain LIKE 'bulk-%' ORDER BY id`
	var out countingWriter
	if b.raw.pg != nil {
		conn, err := b.raw.pg.Acquire(ctx)
		if err != nil {
			return 0, err
		}
		defer conn.Release()
		_, err = conn.Conn().PgConn().CopyTo(ctx, &out, "COPY ("+sel+") TO STDOUT (FORMAT csv, HEADER)")
		return out.n, err
	}
	rows, err := b.raw.lite.QueryContext(ctx, sel)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	out.n += len("id,name,domain,employee_count,created_at\n")
	for rows.Next() {
		var id, name, domain, created string
		var count any
		if err := rows.Scan(&id, &name, &domain, &count, &created); err != nil {
			return 0, err
		}
		out.n += len(id) + len(name) + len(domain) + len(fmt.Sprint(count)) + len(created) + 5
	}
	return out.n, rows.Err()
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// renderJobs is the report's jobs section.
func renderJobs(r *report) string {
	j := r.jobs
	if j == nil {
		return ""
	}
	rate := func(d time.Duration) float64 { return float64(j.rows) / d.Seconds() }
	var b strings.Builder
	fmt.Fprintf(&b, "\nBulk jobs (issue 37), %d companies with the custom field, no hook:\n\n", j.rows)
	b.WriteString("| | API job | records/s | raw | records/s | job/raw |\n|---|--:|--:|--:|--:|--:|\n")
	fmt.Fprintf(&b, "| import (CSV; upload %s before it) | %s | %.0f | %s | %.0f | %.2f× |\n", j.upload.Round(time.Millisecond),
		j.importRun.Round(time.Millisecond), rate(j.importRun), j.rawImport.Round(time.Millisecond), rate(j.rawImport), j.rawImport.Seconds()/j.importRun.Seconds())
	fmt.Fprintf(&b, "| export (CSV, %d vs %d bytes) | %s | %.0f | %s | %.0f | %.2f× |\n", j.exportBytes, j.rawExportBytes,
		j.exportRun.Round(time.Millisecond), rate(j.exportRun), j.rawExport.Round(time.Millisecond), rate(j.rawExport), j.rawExport.Seconds()/j.exportRun.Seconds())
	fmt.Fprintf(&b, "\nThe export's time is from its creation to the end of the download (identity encoding): %s queued, %s running (as the job says), the rest polling (every 50 ms) and the download.\n",
		j.exportQueued.Round(time.Millisecond), j.exportRan.Round(time.Millisecond))
	fmt.Fprintf(&b, "\nRaw: %s. The import job also writes an audit entry, an event and a row result per record, and the search text. recordsd's RSS at most %.0f MB during the jobs; the import's counts never stood still longer than %s.\n",
		j.rawNote, j.maxRSS, j.maxGap.Round(time.Millisecond))
	return b.String()
}
