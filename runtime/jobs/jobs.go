// Package jobs runs bulk import and export jobs (issue 37): an import takes a CSV or NDJSON upload in
// parts and writes every row through the record service's batch path (validation, field and record
// rules, plugin hooks, unique keys, audit, events), chunk by chunk; an export walks a list (filters,
// sort, search, fields, archived, under the caller's masks and record rules) into CSV or NDJSON. A job
// lives in the database — its state, its data in chunks (job_data) and an import's per-row results
// (job_rows) — so any server serves it, and a server that dies mid-job leaves it to another, which
// resumes at the first chunk not committed: each chunk's rows, results and the job's progress commit in
// one transaction, so every input row is written exactly once.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
)

// The kinds of job.
const (
	KindImport = "import"
	KindExport = "export"
)

// The states of a job: an import is open until its upload is closed; then queued, running (leased by
// one server), and one of the three final states.
const (
	StateOpen      = "open"
	StateQueued    = "queued"
	StateRunning   = "running"
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateCancelled = "cancelled"
)

// Limits of a job's data. A part is read in chunks of ChunkBytes and never held whole.
const (
	MaxPartBytes = 64 << 20 // one upload part
	MaxJobBytes  = 1 << 30  // all the parts of one import
	MaxParts     = 10_000
	ChunkBytes   = 1 << 20
	// MaxActive is how many jobs of a workspace may be open, queued or running at once.
	MaxActive = 5
	// Retention is how long a finished job, its results and an export's file are kept.
	Retention = 7 * 24 * time.Hour
	// OpenFor is how long an import may stay open (uploading) before it is failed.
	OpenFor = 24 * time.Hour
)

// Spec is what a job does, as its creation gave it.
type Spec struct {
	Format string `json:"format"` // csv or ndjson
	// Import
	Operation string            `json:"operation,omitempty"` // create, update (by id) or upsert (by Key)
	Key       string            `json:"key,omitempty"`       // upsert: the unique key
	Mapping   map[string]string `json:"mapping,omitempty"`   // CSV column → field key ("" skips the column)
	DryRun    bool              `json:"dry_run,omitempty"`
	// Export: the list's parameters, as a query body (POST /v1/{resource}/query).
	Query map[string]any `json:"query,omitempty"`
	// ModelID is the data model whose records the job imports or exports (data_model_records only).
	ModelID string `json:"model_id,omitempty"`
}

// Job is one job as its workspace sees it.
type Job struct {
	ID, Workspace, Kind, Resource, State, Member, Key string
	Spec                                              Spec
	Parts, Bytes                                      int64
	BytesRead                                         int64 // of an import's upload, up to its last committed row
	RowsRead, RowsWritten, RowsFailed, RowsUnchanged  int64
	NextRow                                           int64  // rows committed (an import resumes after them)
	Walk                                              string // an export's cursor after the last page written
	Error                                             string
	LeaseOwner                                        string
	CreatedAt, UpdatedAt                              time.Time
	StartedAt, FinishedAt, ExpiresAt, LeaseUntil      *time.Time
}

// Final reports whether j has ended.
func (j *Job) Final() bool {
	return j.State == StateCompleted || j.State == StateFailed || j.State == StateCancelled
}

// Errors of the service; the HTTP layer maps them to the spec's codes.
var (
	ErrNotFound  = errors.New("job not found")
	ErrState     = errors.New("job is not in a state that allows this")
	ErrTooMany   = errors.New("too many active jobs")
	ErrTooLarge  = errors.New("upload too large")
	ErrNoData    = errors.New("no data")
	ErrForbidden = errors.New("the job's key may not do this")
)

// StateError is ErrState with what the job's state is.
type StateError struct{ State, Want string }

func (e *StateError) Error() string {
	return fmt.Sprintf("the job is %s; %s", e.State, e.Want)
}

func (e *StateError) Unwrap() error { return ErrState }

// Resolver returns the actor the key id of workspace acts as now, refused (an error the HTTP layer
// explains) when the key may no longer use r (write: to write it): revoked, expired, its owner
// deactivated, its allowlist or access changed; and the workspace's monthly quota (nil: uncapped).
type Resolver func(ctx context.Context, workspace, key string, r *model.Resource, write bool) (records.Actor, *int64, error)

// Quota takes n units of workspace's monthly quota (limit; nil: uncapped, still counted), all or none:
// an error (429 quota_exceeded) when fewer are left.
type Quota func(ctx context.Context, workspace string, n int64, limit *int64) error

// ExportUnit is how many exported records count as one request against the quota: the list requests an
// export replaces (an import's rows count one each, as a batch's items do).
const ExportUnit = 100

// Service keeps the jobs and runs them.
type Service struct {
	st    store.Store
	d     sqlgen.Dialect
	gens  func() (*records.Service, func()) // the record service of the definitions served, held
	actor Resolver
	// Quota counts a job's work against its workspace's monthly quota (nil: not counted).
	Quota Quota
	owner string
	log   *slog.Logger
	Now   func() time.Time
	// Lease is how long a running job is held by its server without a word from it; Poll how often a
	// server looks for a due job; Chunk how many rows an import writes per transaction.
	Lease time.Duration
	Poll  time.Duration
	Chunk int
	kick  chan struct{}
}

// New returns the jobs of st, run with the record service gens gives and as the actors resolve says.
func New(st store.Store, gens func() (*records.Service, func()), resolve Resolver, log *slog.Logger) *Service {
	return &Service{st: st, d: st.Dialect(), gens: gens, actor: resolve, owner: uuid.NewString(), log: log,
		Now: time.Now, Lease: 30 * time.Second, Poll: time.Second, Chunk: 2000, kick: make(chan struct{}, 1)}
}

// SetOwner names the server running jobs in jobs.lease_owner.
func (s *Service) SetOwner(id string) { s.owner = id }

func (s *Service) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

// Kick wakes the runner (a job was queued here).
func (s *Service) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

const jobColumns = `id, workspace_id, kind, resource, state, member_id, key_id, spec, parts, bytes, rows_read, rows_written,
  rows_failed, rows_unchanged, next_row, walk, error, lease_owner, created_at, updated_at, started_at, finished_at, expires_at, lease_until,
  coalesce(bytes_read, 0)`

func scanJob(row []any) (*Job, error) {
	j := &Job{ID: store.UUIDText(row[0]), Workspace: store.UUIDText(row[1]), Kind: store.Text(row[2]), Resource: store.Text(row[3]),
		State: store.Text(row[4]), Member: store.UUIDText(row[5]), Key: store.UUIDText(row[6]),
		Parts: store.Int(row[8]), Bytes: store.Int(row[9]), RowsRead: store.Int(row[10]), RowsWritten: store.Int(row[11]),
		RowsFailed: store.Int(row[12]), RowsUnchanged: store.Int(row[13]), NextRow: store.Int(row[14]),
		Walk: store.Text(row[15]), Error: store.Text(row[16]), LeaseOwner: store.Text(row[17]), BytesRead: store.Int(row[24])}
	if err := json.Unmarshal(store.JSON(row[7]), &j.Spec); err != nil {
		return nil, fmt.Errorf("job %s: spec: %w", j.ID, err)
	}
	if err := store.Times(row[18:20], &j.CreatedAt, &j.UpdatedAt); err != nil {
		return nil, err
	}
	for i, dst := range []**time.Time{&j.StartedAt, &j.FinishedAt, &j.ExpiresAt, &j.LeaseUntil} {
		if v := row[20+i]; v != nil {
			t, err := store.Time(v)
			if err != nil {
				return nil, err
			}
			*dst = &t
		}
	}
	return j, nil
}

// Receipt is the answer to a job's creation under an Idempotency-Key (Claim, held in Keys), made by
// Respond from the new job and stored in the creation's transaction.
type Receipt struct {
	Keys    *idempotency.Keys
	Claim   *idempotency.Claim
	Respond func(j *Job) idempotency.Response
}

// Create makes a job of kind on resource r for the key of member in workspace: an import opens for its
// upload, an export is queued at once. At most MaxActive jobs of a workspace are active (ErrTooMany).
// rc (nil: none) is the Idempotency-Key's answer, stored in the creation's transaction.
func (s *Service) Create(ctx context.Context, workspace, member, key, kind string, r *model.Resource, spec Spec, rc *Receipt) (*Job, error) {
	now := s.now()
	state := StateOpen
	expires := now.Add(OpenFor)
	if kind == KindExport {
		state = StateQueued
		expires = now.Add(Retention)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("job spec: %w", err)
	}
	id := store.NewID()
	err = s.st.Tx(ctx, func(q store.Querier) error {
		if s.d.Kind() == sqlgen.Postgres {
			// One creation at a time per workspace, so that the cap holds under concurrent requests.
			if _, err := q.Exec(ctx, s.d.Bind("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", "jobs:"+workspace)); err != nil {
				return fmt.Errorf("lock the workspace's jobs: %w", err)
			}
		}
		var active int64
		if _, err := store.QueryOne(ctx, q, s.d.Bind("SELECT count(*) FROM jobs WHERE workspace_id = ? AND state IN (?, ?, ?)", workspace, StateOpen, StateQueued, StateRunning), func(row []any) error {
			active = store.Int(row[0])
			return nil
		}); err != nil {
			return fmt.Errorf("count active jobs: %w", err)
		}
		if active >= MaxActive {
			return ErrTooMany
		}
		_, err := q.Exec(ctx, s.d.Bind(`INSERT INTO jobs (workspace_id, id, kind, resource, state, member_id, key_id, spec, parts, bytes, rows_read,
  rows_written, rows_failed, rows_unchanged, next_row, created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, 0, 0, 0, ?, ?, ?)`,
			workspace, id, kind, r.Name, state, member, key, string(data), now, now, expires))
		if err != nil {
			return fmt.Errorf("insert job: %w", err)
		}
		if rc == nil {
			return nil
		}
		j, err := s.get(ctx, q, workspace, id)
		if err != nil {
			return err
		}
		return rc.Keys.Complete(ctx, q, rc.Claim, rc.Respond(j))
	})
	if err != nil {
		return nil, err
	}
	if kind == KindExport {
		s.Kick()
	}
	return s.Get(ctx, workspace, id)
}

// Get returns job id of workspace.
func (s *Service) Get(ctx context.Context, workspace, id string) (*Job, error) {
	return s.get(ctx, s.st, workspace, id)
}

// Find returns job id, whichever its workspace (recordsctl jobs: an operator names a job by its id).
func (s *Service) Find(ctx context.Context, id string) (*Job, error) {
	if !model.IsUUID(id) {
		return nil, ErrNotFound
	}
	var workspace string
	found, err := store.QueryOne(ctx, s.st, s.d.Bind("SELECT workspace_id FROM jobs WHERE id = ?", strings.ToLower(id)), func(row []any) error {
		workspace = store.UUIDText(row[0])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find job: %w", err)
	}
	if !found {
		return nil, ErrNotFound
	}
	return s.Get(ctx, workspace, id)
}

// Actor is who a job of key in workspace acts as on r (write: an import), as it would be when it runs:
// an error says why the key may not (revoked, expired, its member inactive, its allowlist, its access).
func (s *Service) Actor(ctx context.Context, workspace, key string, r *model.Resource, write bool) (records.Actor, error) {
	a, _, err := s.actor(ctx, workspace, key, r, write)
	return a, err
}

func (s *Service) get(ctx context.Context, q store.Querier, workspace, id string) (*Job, error) {
	if !model.IsUUID(id) {
		return nil, ErrNotFound
	}
	var j *Job
	found, err := store.QueryOne(ctx, q, s.d.Bind("SELECT "+jobColumns+" FROM jobs WHERE workspace_id = ? AND id = ?", workspace, strings.ToLower(id)), func(row []any) error {
		var err error
		j, err = scanJob(row)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read job: %w", err)
	}
	if !found {
		return nil, ErrNotFound
	}
	return j, nil
}

// List returns a page of workspace's jobs, newest first, made by member ("" for every member's), at
// most limit, after the job id after ("" for the first page); more tells whether a next page follows.
func (s *Service) List(ctx context.Context, workspace, member string, limit int, after string) (out []*Job, more bool, err error) {
	where, args := "workspace_id = ?", []any{workspace}
	if member != "" {
		where, args = where+" AND member_id = ?", append(args, member)
	}
	if after != "" {
		prev, err := s.Get(ctx, workspace, after)
		if err != nil {
			return nil, false, err
		}
		where += " AND (created_at < ? OR (created_at = ? AND id < ?))"
		args = append(args, prev.CreatedAt, prev.CreatedAt, prev.ID)
	}
	args = append(args, limit+1)
	err = s.st.Query(ctx, s.d.Bind("SELECT "+jobColumns+" FROM jobs WHERE "+where+" ORDER BY created_at DESC, id DESC LIMIT ?", args...), func(row []any) error {
		j, err := scanJob(row)
		if err == nil {
			out = append(out, j)
		}
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("list jobs: %w", err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// Cancel stops job id of workspace: an open or queued job at once, a running one at its next chunk
// (what it committed stays). A job that has ended is answered as it is.
func (s *Service) Cancel(ctx context.Context, workspace, id string) (*Job, error) {
	j, err := s.Get(ctx, workspace, id)
	if err != nil {
		return nil, err
	}
	if j.Final() {
		return j, nil
	}
	now := s.now()
	if _, err := s.st.Exec(ctx, s.d.Bind(`UPDATE jobs SET state = ?, finished_at = ?, updated_at = ?, expires_at = ?, lease_owner = NULL, lease_until = NULL
WHERE workspace_id = ? AND id = ? AND state IN (?, ?, ?)`, StateCancelled, now, now, now.Add(Retention), workspace, j.ID, StateOpen, StateQueued, StateRunning)); err != nil {
		return nil, fmt.Errorf("cancel job: %w", err)
	}
	return s.Get(ctx, workspace, id)
}

// Close ends an open import's upload and queues it. An import with no data is refused (ErrNoData).
func (s *Service) Close(ctx context.Context, workspace, id string) (*Job, error) {
	j, err := s.Get(ctx, workspace, id)
	if err != nil {
		return nil, err
	}
	if j.Kind != KindImport || j.State != StateOpen {
		return nil, &StateError{State: j.State, Want: "only an open import can be closed"}
	}
	if j.Bytes == 0 {
		return nil, ErrNoData
	}
	now := s.now()
	n, err := s.st.Exec(ctx, s.d.Bind("UPDATE jobs SET state = ?, updated_at = ?, expires_at = ? WHERE workspace_id = ? AND id = ? AND state = ?",
		StateQueued, now, now.Add(Retention), workspace, j.ID, StateOpen))
	if err != nil {
		return nil, fmt.Errorf("close job: %w", err)
	}
	if n == 0 {
		return nil, &StateError{State: "no longer open", Want: "only an open import can be closed"}
	}
	s.Kick()
	return s.Get(ctx, workspace, id)
}

// View is j as the API shows it (the Job schema), and recordsctl jobs with --json.
func (j *Job) View() map[string]any {
	v := map[string]any{
		"id": j.ID, "type": j.Kind, "resource": j.Resource, "state": j.State, "format": j.Spec.Format,
		"created_by": j.Member, "created_at": j.CreatedAt, "updated_at": j.UpdatedAt,
		"started_at": j.StartedAt, "finished_at": j.FinishedAt, "expires_at": j.ExpiresAt,
		"counts": map[string]any{"read": j.RowsRead, "written": j.RowsWritten, "failed": j.RowsFailed, "unchanged": j.RowsUnchanged},
		"error":  nil,
	}
	if j.Error != "" {
		v["error"] = j.Error
	}
	if j.Spec.ModelID != "" {
		v["model_id"] = j.Spec.ModelID
	}
	if j.Kind == KindImport {
		v["operation"], v["dry_run"] = j.Spec.Operation, j.Spec.DryRun
		v["upload"] = map[string]any{"parts": j.Parts, "bytes": j.Bytes}
		if j.Spec.Key != "" {
			v["key"] = j.Spec.Key
		}
	} else {
		v["query"] = j.Spec.Query
		if j.Spec.Query == nil {
			v["query"] = map[string]any{}
		}
	}
	progress := map[string]any{"fraction": nil, "seconds_left": nil}
	v["progress"] = progress
	if j.State == StateCompleted {
		progress["fraction"], progress["seconds_left"] = 1.0, 0.0
	}
	if j.StartedAt != nil {
		end := time.Now()
		if j.FinishedAt != nil {
			end = *j.FinishedAt
		}
		if secs := end.Sub(*j.StartedAt).Seconds(); secs > 0 {
			v["rows_per_second"] = float64(int64(float64(j.RowsRead)/secs*10)) / 10
			// An import's estimate: the share of its upload its committed rows took, and the rest at the
			// rate so far.
			if j.Kind == KindImport && j.State == StateRunning && j.Bytes > 0 && j.BytesRead > 0 {
				f := min(float64(j.BytesRead)/float64(j.Bytes), 1)
				progress["fraction"] = float64(int64(f*1000)) / 1000
				progress["seconds_left"] = float64(int64(secs*(1-f)/f*10)) / 10
			}
		}
	}
	return v
}
