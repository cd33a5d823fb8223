package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/jobs"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server"
)

// Bulk jobs from the command line (issue 37): the same jobs as POST /v1/jobs, made and watched through
// the database. A job acts as an API key of its workspace (--key, the key's id), as it would through the
// API: its role's masks and record rules, its allowlist, its access. The servers on the database
// (recordsd) run the jobs; recordsctl uploads, follows a job to its end — a progress bar on a terminal,
// a line every few seconds elsewhere — and fetches its results.

const (
	jobsImportUsage = "jobs import --workspace W --key KEY_ID --resource R --file F [--model-id M] [--format csv|ndjson] [--operation create|update|upsert] [--upsert-key FIELD] [--map COLUMN=FIELD,…] [--dry-run] [--detach]"
	jobsExportUsage = "jobs export --workspace W --key KEY_ID --resource R --out F [--model-id M] [--query JSON] [--format csv|ndjson] [--detach]"
	jobsHelp        = `A job runs on the servers (recordsd) of the database, like a job made with POST /v1/jobs, and acts as
the API key --key names (its id, as key list shows it): the key's role, masks, record rules, resource
allowlist and access apply. An import needs a write key; an export, a key that may read the resource.
Without --detach the command follows the job to its end: a progress bar when standard error is a
terminal, a line every 5 seconds otherwise; it exits non-zero when the job fails or is cancelled.
jobs show ID --watch follows a job made elsewhere the same way.`
)

func cmdJobsImport(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	key := fs.String("key", "", "the id of the API key the job acts as")
	res := fs.String("resource", "", "resource name")
	file := fs.String("file", "", "the CSV (header row first) or NDJSON file to import")
	format := fs.String("format", "", "csv or ndjson (default: from the file's extension, .ndjson or .jsonl for NDJSON)")
	op := fs.String("operation", "create", "create, update (each row's id) or upsert (by --upsert-key)")
	upsertKey := fs.String("upsert-key", "", "the unique key an upsert matches rows by")
	mapping := fs.String("map", "", "CSV columns renamed to field keys: COLUMN=FIELD,… (FIELD empty: skip the column; cf__KEY: a custom field)")
	dry := fs.Bool("dry-run", false, "check and run every row, rolled back: nothing is written")
	modelID := fs.String("model-id", "", "the data model whose records are imported (data_model_records)")
	detach := fs.Bool("detach", false, "print the job and return once it is queued")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, jobsImportUsage), required("workspace", *ws), required("key", *key), required("resource", *res), required("file", *file)); err != nil {
			return err
		}
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return err
		}
		if *format == "" {
			*format = "csv"
			if ext := strings.ToLower(filepath.Ext(*file)); ext == ".ndjson" || ext == ".jsonl" {
				*format = "ndjson"
			}
		}
		body := map[string]any{"type": jobs.KindImport, "resource": *res, "format": *format, "operation": *op}
		if *upsertKey != "" {
			body["key"] = *upsertKey
		}
		if *dry {
			body["dry_run"] = true
		}
		if *modelID != "" {
			body["model_id"] = *modelID
		}
		if *mapping != "" {
			m := map[string]any{}
			for _, pair := range strings.Split(*mapping, ",") {
				col, field, ok := strings.Cut(pair, "=")
				if !ok || strings.TrimSpace(col) == "" {
					return fmt.Errorf("--map: %q is not COLUMN=FIELD", pair)
				}
				m[strings.TrimSpace(col)] = strings.TrimSpace(field)
			}
			body["mapping"] = m
		}
		return withBackendFor(e, cfg, server.AdminOptions{Jobs: true}, func(b *server.Backend) error {
			j, err := createJob(e.ctx, b, *ws, *key, body, nil)
			if err != nil {
				return err
			}
			// The file goes up in parts of the API's largest, each streamed into the database.
			parts := max(1, int((info.Size()+jobs.MaxPartBytes-1)/jobs.MaxPartBytes))
			for n := 1; n <= parts; n++ {
				if _, err := b.Jobs.PutPart(e.ctx, j.Workspace, j.ID, n, io.LimitReader(f, jobs.MaxPartBytes)); err != nil {
					return fmt.Errorf("upload part %d of %s: %w", n, *file, err)
				}
			}
			if j, err = b.Jobs.Close(e.ctx, j.Workspace, j.ID); err != nil {
				return fmt.Errorf("close the upload: %w", err)
			}
			if *detach {
				return emitJob(e, j)
			}
			_, err = watchJob(e, b.Jobs, j)
			return err
		})
	}
}

func cmdJobsExport(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	key := fs.String("key", "", "the id of the API key the job acts as")
	res := fs.String("resource", "", "resource name")
	query := fs.String("query", "", "the list's parameters as JSON: the body of POST /v1/{resource}/query (filters, sort, search, fields, …)")
	format := fs.String("format", "csv", "csv or ndjson")
	out := fs.String("out", "", "where the file goes once the export completes")
	modelID := fs.String("model-id", "", "the data model whose records are exported (data_model_records)")
	detach := fs.Bool("detach", false, "print the job and return once it is queued (fetch the file with jobs download)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, jobsExportUsage), required("workspace", *ws), required("key", *key), required("resource", *res)); err != nil {
			return err
		}
		if *out == "" && !*detach {
			return required("out", "")
		}
		body := map[string]any{"type": jobs.KindExport, "resource": *res, "format": *format}
		if *modelID != "" {
			body["model_id"] = *modelID
		}
		if *query != "" {
			var q map[string]any
			if err := json.Unmarshal([]byte(*query), &q); err != nil || q == nil {
				return fmt.Errorf("--query: not a JSON object: %v", err)
			}
			body["query"] = q
		}
		return withBackendFor(e, cfg, server.AdminOptions{Jobs: true}, func(b *server.Backend) error {
			j, err := createJob(e.ctx, b, *ws, *key, body, func(a records.Actor, svc *records.Service, c *records.Collection, spec jobs.Spec) error {
				// The query is checked now, as POST /v1/jobs checks it: a bad one is refused here.
				lq, err := records.ReadList(records.ListRequest{Body: spec.Query})
				if err != nil {
					return err
				}
				_, err = svc.List(e.ctx, a, c, lq.Walk("", 1))
				return err
			})
			if err != nil {
				return err
			}
			if *detach {
				return emitJob(e, j)
			}
			if j, err = watchJob(e, b.Jobs, j); err != nil {
				return err
			}
			return downloadTo(e, b.Jobs, j, *out)
		})
	}
}

// createJob makes the job body describes, acting as key of workspace, after check (when not nil) has
// passed on the collection it reads or writes.
func createJob(ctx context.Context, b *server.Backend, workspace, key string, body map[string]any, check func(records.Actor, *records.Service, *records.Collection, jobs.Spec) error) (*jobs.Job, error) {
	gen := b.Current()
	kind, r, spec, err := jobs.ReadSpec(gen.Catalog, body)
	if err != nil {
		return nil, err
	}
	workspace, key = strings.ToLower(workspace), strings.ToLower(key)
	a, err := b.Jobs.Actor(ctx, workspace, key, r, kind == jobs.KindImport)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", key, err)
	}
	if check != nil || spec.ModelID != "" {
		c, err := gen.Records.Collection(ctx, a, r, spec.ModelID) // a data model that does not exist is refused now
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(a, gen.Records, c, spec); err != nil {
				return nil, err
			}
		}
	}
	return b.Jobs.Create(ctx, workspace, a.Member, key, kind, r, spec, nil)
}

func cmdJobsList(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	limit := fs.Int("limit", 50, "how many jobs, newest first (at most 100)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "jobs list --workspace W [--limit N]"), required("workspace", *ws)); err != nil {
			return err
		}
		return withBackendFor(e, cfg, server.AdminOptions{Jobs: true}, func(b *server.Backend) error {
			list, _, err := b.Jobs.List(e.ctx, strings.ToLower(*ws), "", min(max(*limit, 1), 100), "")
			if err != nil {
				return err
			}
			views := make([]map[string]any, len(list))
			lines := []string{}
			for i, j := range list {
				views[i] = j.View()
				lines = append(lines, jobLine(j))
			}
			return e.emit(map[string]any{"data": views}, strings.Join(lines, "\n"))
		})
	}
}

func cmdJobsShow(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	watch := fs.Bool("watch", false, "follow the job to its end")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 1, "jobs show ID [--watch]"); err != nil {
			return err
		}
		return withBackendFor(e, cfg, server.AdminOptions{Jobs: true}, func(b *server.Backend) error {
			j, err := b.Jobs.Find(e.ctx, pos[0])
			if err != nil {
				return err
			}
			if *watch {
				_, err = watchJob(e, b.Jobs, j)
				return err
			}
			return emitJob(e, j)
		})
	}
}

func cmdJobsCancel(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 1, "jobs cancel ID"); err != nil {
			return err
		}
		return withBackendFor(e, cfg, server.AdminOptions{Jobs: true}, func(b *server.Backend) error {
			j, err := b.Jobs.Find(e.ctx, pos[0])
			if err != nil {
				return err
			}
			if j, err = b.Jobs.Cancel(e.ctx, j.Workspace, j.ID); err != nil {
				return err
			}
			return emitJob(e, j)
		})
	}
}

func cmdJobsFailures(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	limit := fs.Int("limit", 100, "how many failed rows, in row order (at most 1000)")
	after := fs.Int64("after", 0, "the row number to start after")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 1, "jobs failures ID [--limit N] [--after ROW]"); err != nil {
			return err
		}
		return withBackendFor(e, cfg, server.AdminOptions{Jobs: true}, func(b *server.Backend) error {
			j, err := b.Jobs.Find(e.ctx, pos[0])
			if err != nil {
				return err
			}
			if j.Kind != jobs.KindImport {
				return fmt.Errorf("job %s is an export: only an import has failed rows", j.ID)
			}
			rows, more, err := b.Jobs.Rows(e.ctx, j.Workspace, j.ID, true, *after, min(max(*limit, 1), 1000))
			if err != nil {
				return err
			}
			lines := []string{}
			out := make([]map[string]any, len(rows))
			for i, r := range rows {
				out[i] = map[string]any{"row": r.N, "status": r.Status, "errors": r.Errors}
				var problems []string
				for _, p := range r.Errors {
					where := fmt.Sprint(p["field"])
					if p["field"] == nil || where == "" {
						where = "row"
					}
					problems = append(problems, fmt.Sprintf("%s: %v (%v)", where, p["message"], p["code"]))
				}
				lines = append(lines, fmt.Sprintf("row %d  %d  %s", r.N, r.Status, strings.Join(problems, "; ")))
			}
			if more {
				lines = append(lines, fmt.Sprintf("… more after row %d (--after %d)", rows[len(rows)-1].N, rows[len(rows)-1].N))
			}
			return e.emit(map[string]any{"data": out, "has_more": more}, strings.Join(lines, "\n"))
		})
	}
}

func cmdJobsDownload(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	out := fs.String("out", "", "the file to write (default: standard output)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 1, "jobs download ID [--out F]"); err != nil {
			return err
		}
		return withBackendFor(e, cfg, server.AdminOptions{Jobs: true}, func(b *server.Backend) error {
			j, err := b.Jobs.Find(e.ctx, pos[0])
			if err != nil {
				return err
			}
			return downloadTo(e, b.Jobs, j, *out)
		})
	}
}

// downloadTo writes completed export j's file to path (standard output for ""), in full or not at all.
func downloadTo(e *env, js *jobs.Service, j *jobs.Job, path string) error {
	if j.Kind != jobs.KindExport || j.State != jobs.StateCompleted {
		return fmt.Errorf("job %s is a %s %s: only a completed export has a file", j.ID, j.State, j.Kind)
	}
	if path == "" {
		return js.Download(e.ctx, j.Workspace, j.ID, e.stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := errors.Join(js.Download(e.ctx, j.Workspace, j.ID, tmp), tmp.Close()); err != nil {
		return fmt.Errorf("download job %s: %w", j.ID, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if e.json {
		return nil // the job was emitted already
	}
	_, err = fmt.Fprintf(e.stderr, "wrote %s\n", path)
	return err
}

// emitJob prints j: its view with --json, its line otherwise.
func emitJob(e *env, j *jobs.Job) error {
	return e.emit(j.View(), jobLine(j))
}

// jobLine is j in one line: id, type, resource, state, counts and, when it failed, why.
func jobLine(j *jobs.Job) string {
	s := fmt.Sprintf("%s  %s %s  %s  read %d, written %d, failed %d, unchanged %d", j.ID, j.Kind, j.Resource, j.State, j.RowsRead, j.RowsWritten, j.RowsFailed, j.RowsUnchanged)
	if j.Error != "" {
		s += "  (" + j.Error + ")"
	}
	return s
}

// watchPoll is how often a followed job is read.
const watchPoll = 250 * time.Millisecond

// watchJob follows j until it ends, drawing its progress on e.stderr, then prints it and returns it as
// it ended. A job that failed or was cancelled is an error (a non-zero exit).
func watchJob(e *env, js *jobs.Service, j *jobs.Job) (*jobs.Job, error) {
	bar := newJobBar(e.stderr, isTerminal(e.stderr))
	since := time.Now()
	warned := false
	for !j.Final() {
		bar.draw(j)
		if j.State == jobs.StateQueued && !warned && time.Since(since) > 10*time.Second {
			warned = true
			bar.note("still queued after 10 s: jobs run on the servers (recordsd) of this database; is one running?")
		}
		select {
		case <-e.ctx.Done():
			bar.end()
			return j, fmt.Errorf("stopped following job %s (it goes on; jobs show %s --watch): %w", j.ID, j.ID, e.ctx.Err())
		case <-time.After(watchPoll):
		}
		next, err := js.Get(e.ctx, j.Workspace, j.ID)
		if err != nil {
			bar.end()
			return j, err
		}
		j = next
	}
	bar.draw(j)
	bar.end()
	if err := emitJob(e, j); err != nil {
		return j, err
	}
	if j.State != jobs.StateCompleted {
		return j, fmt.Errorf("job %s %s", j.ID, j.State)
	}
	return j, nil
}

// isTerminal reports whether w is a character device (a terminal), where a bar redraws in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// jobBar draws a followed job: in place on a terminal (fraction, counts, rate and time left), else a
// line when the state changes and every 5 seconds.
type jobBar struct {
	w        io.Writer
	terminal bool
	last     time.Time
	state    string
	drawn    bool
}

func newJobBar(w io.Writer, terminal bool) *jobBar { return &jobBar{w: w, terminal: terminal} }

func (b *jobBar) draw(j *jobs.Job) {
	v := j.View()
	progress, _ := v["progress"].(map[string]any)
	fraction, known := progress["fraction"].(float64)
	text := fmt.Sprintf("%s %s %s: read %d, written %d, failed %d", j.Kind, j.Resource, j.State, j.RowsRead, j.RowsWritten, j.RowsFailed)
	if rate, ok := v["rows_per_second"].(float64); ok {
		text += fmt.Sprintf(", %.0f rows/s", rate)
	}
	if left, ok := progress["seconds_left"].(float64); ok && j.State == jobs.StateRunning {
		text += fmt.Sprintf(", about %s left", (time.Duration(left) * time.Second).Round(time.Second))
	}
	if b.terminal {
		const width = 30
		filled := 0
		pct := "   "
		if known {
			filled = int(fraction * width)
			pct = fmt.Sprintf("%3d%%", int(fraction*100))
		}
		fmt.Fprintf(b.w, "\r\033[K[%s%s] %s %s", strings.Repeat("=", filled), strings.Repeat(" ", width-filled), pct, text)
		b.drawn = true
		return
	}
	if j.State != b.state || time.Since(b.last) >= 5*time.Second {
		b.state, b.last = j.State, time.Now()
		if known {
			text = fmt.Sprintf("%3d%% %s", int(fraction*100), text)
		}
		fmt.Fprintln(b.w, text)
	}
}

// note prints a message on a line of its own.
func (b *jobBar) note(msg string) {
	if b.terminal && b.drawn {
		fmt.Fprintln(b.w)
	}
	fmt.Fprintln(b.w, msg)
}

// end leaves the bar's line.
func (b *jobBar) end() {
	if b.terminal && b.drawn {
		fmt.Fprintln(b.w)
	}
}
