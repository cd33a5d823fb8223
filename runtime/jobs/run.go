package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
)

// errLeaseLost ends a run whose lease another server took over (or whose job was cancelled): its chunk
// rolls back, and the job goes on where the other server is.
var errLeaseLost = errors.New("job lease lost")

// errDryRun rolls a dry run's chunk back once its results are known.
var errDryRun = errors.New("dry run")

// Run runs due jobs until ctx ends: each server runs one job at a time, and takes over a job whose
// server stopped renewing its lease.
func (s *Service) Run(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(s.Poll)
	defer t.Stop()
	lastSweep := time.Time{}
	for ctx.Err() == nil {
		if time.Since(lastSweep) > time.Minute {
			if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				log.Warn("jobs: sweep", "err", err)
			}
			lastSweep = time.Now()
		}
		ran, err := s.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("jobs: run", "err", err)
		}
		if ran && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-s.kick:
		case <-t.C:
		}
	}
}

// RunOnce leases one due job (queued, or running under a lease that passed) and runs it to its end or
// until ctx ends; it reports whether there was one.
func (s *Service) RunOnce(ctx context.Context) (bool, error) {
	j, err := s.claim(ctx)
	if err != nil || j == nil {
		return false, err
	}
	rctx, release := s.hold(ctx, j)
	err = s.runJob(rctx, j)
	release()
	switch {
	case errors.Is(err, errLeaseLost) || errors.Is(context.Cause(rctx), errLeaseLost):
		return true, nil
	case ctx.Err() != nil:
		return true, nil // the lease passes and another server (or this one, restarted) goes on
	case err != nil:
		s.log.Warn("jobs: job failed", "job", j.ID, "workspace", j.Workspace, "err", err)
		return true, s.finish(context.WithoutCancel(ctx), j, StateFailed, publicError(err))
	}
	return true, nil
}

// hold renews j's lease every Lease/3 while it runs, so that a chunk slower than the lease (a loaded
// machine, slow hooks) keeps the job; when a renewal finds the lease gone (another server took the job
// over, or it was cancelled) it ends the run (errLeaseLost), whose open chunk then rolls back. release
// stops the renewals.
func (s *Service) hold(ctx context.Context, j *Job) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(max(s.Lease/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			n, err := s.st.Exec(ctx, s.d.Bind("UPDATE jobs SET lease_until = ? WHERE workspace_id = ? AND id = ? AND state = ? AND lease_owner = ?",
				s.now().Add(s.Lease), j.Workspace, j.ID, StateRunning, s.owner))
			if err == nil && n == 0 {
				cancel(errLeaseLost)
				return
			}
		}
	})
	return ctx, func() { close(done); wg.Wait(); cancel(nil) }
}

// claim leases the oldest due job to this server.
func (s *Service) claim(ctx context.Context) (*Job, error) {
	now := s.now()
	lock := " FOR UPDATE SKIP LOCKED"
	if s.d.Kind() == sqlgen.SQLite {
		lock = ""
	}
	var j *Job
	err := s.st.Tx(ctx, func(q store.Querier) error {
		j = nil
		return q.Query(ctx, s.d.Bind(`UPDATE jobs SET state = ?, lease_owner = ?, lease_until = ?, started_at = coalesce(started_at, ?), updated_at = ?
WHERE id IN (SELECT id FROM jobs WHERE state = ? OR (state = ? AND lease_until < ?) ORDER BY created_at LIMIT 1`+lock+`)
RETURNING `+jobColumns, StateRunning, s.owner, now.Add(s.Lease), now, now, StateQueued, StateRunning, now), func(row []any) error {
			var err error
			j, err = scanJob(row)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("lease a job: %w", err)
	}
	return j, nil
}

// progress is what a chunk adds to its job, written in the chunk's transaction with the lease renewed.
type progress struct {
	next                           int64 // rows done after the chunk
	read, written, failed, unchang int64
	walk                           string // an export's cursor after the chunk
	bytes                          int64  // an import's upload read up to the chunk's last row (0: unchanged)
}

// advance records p on j in q, under j's lease: errLeaseLost when another server holds it now or the
// job was cancelled.
func (s *Service) advance(ctx context.Context, q store.Querier, j *Job, p progress) error {
	now := s.now()
	bytes := max(p.bytes, j.BytesRead)
	n, err := q.Exec(ctx, s.d.Bind(`UPDATE jobs SET next_row = ?, rows_read = rows_read + ?, rows_written = rows_written + ?, rows_failed = rows_failed + ?,
  rows_unchanged = rows_unchanged + ?, walk = ?, bytes_read = ?, lease_until = ?, updated_at = ?
WHERE workspace_id = ? AND id = ? AND state = ? AND lease_owner = ?`, p.next, p.read, p.written, p.failed, p.unchang, store.Nullable(p.walk),
		bytes, now.Add(s.Lease), now, j.Workspace, j.ID, StateRunning, s.owner))
	if err != nil {
		return fmt.Errorf("job progress: %w", err)
	}
	if n == 0 {
		return errLeaseLost
	}
	j.NextRow, j.Walk, j.BytesRead = p.next, p.walk, bytes
	return nil
}

// finish ends j in state (completed or failed, with the public message msg), if this server still
// holds it.
func (s *Service) finish(ctx context.Context, j *Job, state, msg string) error {
	now := s.now()
	_, err := s.st.Exec(ctx, s.d.Bind(`UPDATE jobs SET state = ?, error = ?, finished_at = ?, updated_at = ?, expires_at = ?, lease_owner = NULL, lease_until = NULL
WHERE workspace_id = ? AND id = ? AND state = ? AND lease_owner = ?`, state, store.Nullable(msg), now, now, now.Add(Retention), j.Workspace, j.ID, StateRunning, s.owner))
	if err != nil {
		return fmt.Errorf("finish job: %w", err)
	}
	return nil
}

// publicError is what a failed job says of err: the API error's message, or a generic one (the cause is
// logged).
func publicError(err error) string {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	if e := records.Explain(err); e != nil && e.Code != apierr.InternalError {
		return e.Message
	}
	return "The job failed on an internal error; it was logged. What was committed before it stays."
}

// runJob runs j from where it stands.
func (s *Service) runJob(ctx context.Context, j *Job) error {
	svc, done := s.gens()
	defer done()
	r, ok := svc.Catalog().Resource(j.Resource)
	if !ok {
		return apierr.New(apierr.UnknownResource, "The resource "+j.Resource+" is no longer served.")
	}
	a, limit, err := s.actor(ctx, j.Workspace, j.Key, r, j.Kind == KindImport)
	if err != nil {
		return err
	}
	a.RequestID = "job:" + j.ID
	c, err := svc.Collection(ctx, a, r, j.Spec.ModelID)
	if err != nil {
		return err
	}
	charge := func(ctx context.Context, n int64) error {
		if s.Quota == nil || n <= 0 {
			return nil
		}
		return s.Quota(ctx, j.Workspace, n, limit)
	}
	if j.Kind == KindExport {
		err = s.export(ctx, svc, a, c, j, charge)
	} else {
		err = s.importRows(ctx, svc, a, c, j, charge)
	}
	if err != nil {
		return err
	}
	return s.finish(ctx, j, StateCompleted, "")
}

// Sweep fails imports left open past their time and deletes jobs past their retention, with their data
// and results.
func (s *Service) Sweep(ctx context.Context) error {
	now := s.now()
	if _, err := s.st.Exec(ctx, s.d.Bind(`UPDATE jobs SET state = ?, error = ?, finished_at = ?, updated_at = ?, expires_at = ?
WHERE state = ? AND expires_at < ?`, StateFailed, "The upload was not closed within 24 hours.", now, now, now.Add(Retention), StateOpen, now)); err != nil {
		return fmt.Errorf("fail stale uploads: %w", err)
	}
	var expired []*Job
	if err := s.st.Query(ctx, s.d.Bind("SELECT "+jobColumns+" FROM jobs WHERE state IN (?, ?, ?) AND expires_at < ? LIMIT 100", StateCompleted, StateFailed, StateCancelled, now), func(row []any) error {
		j, err := scanJob(row)
		if err == nil {
			expired = append(expired, j)
		}
		return err
	}); err != nil {
		return fmt.Errorf("expired jobs: %w", err)
	}
	for _, j := range expired {
		wctx := store.WithWorkspace(ctx, j.Workspace)
		if err := s.st.Tx(wctx, func(q store.Querier) error {
			for _, t := range []string{"job_data", "job_rows"} {
				if _, err := q.Exec(wctx, s.d.Bind("DELETE FROM "+t+" WHERE workspace_id = ? AND job_id = ?", j.Workspace, j.ID)); err != nil {
					return err
				}
			}
			_, err := q.Exec(wctx, s.d.Bind("DELETE FROM jobs WHERE workspace_id = ? AND id = ?", j.Workspace, j.ID))
			return err
		}); err != nil {
			return fmt.Errorf("delete expired job %s: %w", j.ID, err)
		}
	}
	return nil
}
