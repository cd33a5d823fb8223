package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/jobs"
	"github.com/workspace-records/records/runtime/records"
)

// Bulk jobs (/v1/jobs…, runtime/jobs). A job is seen by the member who made it (with any of their keys)
// and by members whose role holds api.manage, and only through a key that may use the job's resource
// (an import: write it); to anyone else it does not exist (404).

// jobsService is the jobs of the server, or 503 when it runs none.
func (h *Handler) jobsService() (*jobs.Service, error) {
	if h.jobs == nil {
		return nil, apierr.New(apierr.ServiceUnavailable, "This server runs no bulk jobs.")
	}
	return h.jobs, nil
}

// seesAll reports whether p may see every job of its workspace (api.manage), not only its own.
func seesAll(p *auth.Principal) bool { return auth.HasPermission(p.Role, "api.manage") }

// job returns the job of the path as p may see it: another member's (without api.manage), another
// workspace's, or one of a resource p's key may not use is not found.
func (h *Handler) job(req bunrouter.Request, p *auth.Principal) (*jobs.Service, *jobs.Job, error) {
	js, err := h.jobsService()
	if err != nil {
		return nil, nil, err
	}
	j, err := js.Get(req.Context(), p.Workspace.ID, req.Param("id"))
	if err != nil {
		return nil, nil, jobError(err)
	}
	r, ok := h.cat.Resource(j.Resource)
	if (!seesAll(p) && j.Member != p.Member.ID) || !ok || p.Authorize(r, needsWrite(req, j)) != nil {
		return nil, nil, jobNotFound
	}
	return js, j, nil
}

// needsWrite reports whether seeing j through req takes write access to its resource: an import through
// /v1/jobs does (the key that may not write the resource could not have made it); the admin API's job
// routes (/v1/admin/jobs…, an admin key or a console session of a holder of api.manage) show every job
// of a resource the caller's role may read.
func needsWrite(req bunrouter.Request, j *jobs.Job) bool {
	return j.Kind == jobs.KindImport && !strings.HasPrefix(req.Route(), "/v1/admin/")
}

var jobNotFound = apierr.New(apierr.NotFound, "No job with this id in this workspace.")

// jobError is the API error of the jobs service's err.
func jobError(err error) error {
	var se *jobs.StateError
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		return jobNotFound
	case errors.As(err, &se):
		return apierr.New(apierr.Conflict, "The job is "+se.State+": "+se.Want+".")
	case errors.Is(err, jobs.ErrTooMany):
		e := apierr.New(apierr.RateLimited, fmt.Sprintf("The workspace has %d jobs open, queued or running; retry once one has finished.", jobs.MaxActive))
		e.Header = http.Header{"Retry-After": {"30"}}
		return e
	case errors.Is(err, jobs.ErrTooLarge):
		return apierr.New(apierr.PayloadTooLarge, fmt.Sprintf("A part holds at most %d MiB and an import %d MiB.", jobs.MaxPartBytes>>20, jobs.MaxJobBytes>>20))
	case errors.Is(err, jobs.ErrNoData):
		return apierr.New(apierr.Conflict, "The import has no data: upload at least one part before closing it.")
	}
	return err
}

// createJob is POST /v1/jobs: an import (opened for its upload) or an export (queued).
func (h *Handler) createJob(w http.ResponseWriter, req bunrouter.Request) error {
	js, err := h.jobsService()
	if err != nil {
		return err
	}
	ctx := req.Context()
	p := principal(ctx)
	if _, err := queryOf(req.Request); err != nil {
		return err
	}
	body, err := requiredObject(req.Request)
	if err != nil {
		return err
	}
	kind, r, spec, err := h.jobSpec(body)
	if err != nil {
		return err
	}
	if denied := p.Authorize(r, kind == jobs.KindImport); denied != nil {
		return records.Explain(denied)
	}
	if kind == jobs.KindExport || spec.ModelID != "" {
		// The query is checked now, as a list of it would be, so that a bad one is a 400 here and not a
		// failed job later; a data model that does not exist is 404 now too.
		a := actorOf(ctx)
		c, err := h.svc.Collection(ctx, a, r, spec.ModelID)
		if err != nil {
			return err
		}
		if kind == jobs.KindExport {
			lq, err := records.ReadList(records.ListRequest{Body: spec.Query})
			if err != nil {
				return err
			}
			if _, err := h.svc.List(ctx, a, c, lq.Walk("", 1)); err != nil {
				return err
			}
		}
	}
	// An Idempotency-Key's answer is the job as it was made, stored in the creation's transaction and
	// replayed as it is (the job's state then is GET /v1/jobs/{id}'s).
	rp := replayer{label: "jobs", answer: func(r *idempotency.Response) error {
		for k, v := range r.Header {
			w.Header()[k] = v
		}
		w.Header().Set("Idempotent-Replayed", "true")
		writeRaw(w, r.Status, r.Body)
		return nil
	}}
	return h.idempotent(w, req, actorOf(ctx), rp, body, false, func(claim *idempotency.Claim) (idempotency.Response, error) {
		respond := func(j *jobs.Job) idempotency.Response {
			return idempotency.Response{Status: http.StatusCreated, Header: http.Header{"Location": {"/v1/jobs/" + j.ID}}, Body: encode(map[string]any{"data": j.View()})}
		}
		var rc *jobs.Receipt
		if claim != nil {
			rc = &jobs.Receipt{Keys: h.idem, Claim: claim, Respond: respond}
		}
		j, err := js.Create(ctx, p.Workspace.ID, p.Member.ID, p.Key.ID, kind, r, spec, rc)
		if err != nil {
			return idempotency.Response{}, jobError(err)
		}
		return respond(j), nil
	})
}

// jobSpec reads a job's creation body (jobs.ReadSpec) in the catalog served.
func (h *Handler) jobSpec(body map[string]any) (string, *model.Resource, jobs.Spec, error) {
	return jobs.ReadSpec(h.cat, body)
}

// listJobs is GET /v1/jobs: the caller's jobs (every member's with api.manage), newest first.
func (h *Handler) listJobs(w http.ResponseWriter, req bunrouter.Request) error {
	js, err := h.jobsService()
	if err != nil {
		return err
	}
	p := principal(req.Context())
	q, err := queryOf(req.Request)
	if err != nil {
		return err
	}
	limit, after, err := jobPage(q, "cursor", 100, 20)
	if err != nil {
		return err
	}
	member := p.Member.ID
	if seesAll(p) {
		member = ""
	}
	list, more, err := js.List(req.Context(), p.Workspace.ID, member, limit, after)
	if err != nil {
		return jobError(err)
	}
	data := []any{}
	var last string
	for _, j := range list {
		last = j.ID
		r, ok := h.cat.Resource(j.Resource)
		if !ok || p.Authorize(r, needsWrite(req, j)) != nil {
			continue
		}
		data = append(data, j.View())
	}
	var next any
	if more {
		next = last
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "meta": map[string]any{"next_cursor": next, "has_more": more}})
	return nil
}

// jobPage reads limit (1…most, default def) and the cursor parameter name of a job list.
func jobPage(q map[string][]string, name string, most, def int) (int, string, error) {
	limit := def
	for k, v := range q {
		switch {
		case k == "limit" && len(v) == 1:
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 1 || n > most {
				return 0, "", apierr.InvalidField(field.CodeRange, "limit", fmt.Sprintf("must be between 1 and %d", most))
			}
			limit = n
		case k == name && len(v) == 1:
		default:
			return 0, "", apierr.InvalidField(field.CodeUnknown, k, "takes only limit and "+name+", once each")
		}
	}
	return limit, strings.Join(q[name], ""), nil
}

func (h *Handler) getJob(w http.ResponseWriter, req bunrouter.Request) error {
	_, j, err := h.job(req, principal(req.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": j.View()})
	return nil
}

// putJobPart is PUT /v1/jobs/{id}/parts/{part}: one part of an open import's upload, the request body
// as it is (CSV or NDJSON), streamed into the database.
func (h *Handler) putJobPart(w http.ResponseWriter, req bunrouter.Request) error {
	p := principal(req.Context())
	js, j, err := h.job(req, p)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(req.Param("part"))
	if err != nil || n < 1 || n > jobs.MaxParts || strconv.Itoa(n) != req.Param("part") {
		return apierr.InvalidField(field.CodeRange, "part", fmt.Sprintf("must be a whole number from 1 to %d", jobs.MaxParts))
	}
	if req.ContentLength > jobs.MaxPartBytes {
		return jobError(jobs.ErrTooLarge)
	}
	body := http.MaxBytesReader(w, req.Body, jobs.MaxPartBytes+1)
	j, err = js.PutPart(req.Context(), p.Workspace.ID, j.ID, n, body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return jobError(jobs.ErrTooLarge)
		}
		return jobError(err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": j.View()})
	return nil
}

// changeJob is POST /v1/jobs/{id}/close and …/cancel.
func (h *Handler) changeJob(cancel bool) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		p := principal(req.Context())
		js, j, err := h.job(req, p)
		if err != nil {
			return err
		}
		if _, err := optionalObject(req.Request); err != nil {
			return err
		}
		if cancel {
			j, err = js.Cancel(req.Context(), p.Workspace.ID, j.ID)
		} else {
			j, err = js.Close(req.Context(), p.Workspace.ID, j.ID)
		}
		if err != nil {
			return jobError(err)
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": j.View()})
		return nil
	}
}

// jobRows is GET /v1/jobs/{id}/failures and …/successes: an import's row results, in row order.
func (h *Handler) jobRows(failed bool) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		p := principal(req.Context())
		js, j, err := h.job(req, p)
		if err != nil {
			return err
		}
		q, err := queryOf(req.Request)
		if err != nil {
			return err
		}
		limit, after, err := jobPage(q, "after", 1000, 100)
		if err != nil {
			return err
		}
		from := int64(0)
		if after != "" {
			if from, err = strconv.ParseInt(after, 10, 64); err != nil || from < 0 {
				return apierr.InvalidField(field.CodeFormat, "after", "must be a row number")
			}
		}
		rows, more, err := js.Rows(req.Context(), p.Workspace.ID, j.ID, failed, from, limit)
		if err != nil {
			return jobError(err)
		}
		data := make([]any, len(rows))
		for i, r := range rows {
			data[i] = r
		}
		var next any
		if more && len(rows) > 0 {
			next = strconv.FormatInt(rows[len(rows)-1].N, 10)
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": data, "meta": map[string]any{"next_cursor": next, "has_more": more}})
		return nil
	}
}

// downloadJob is GET /v1/jobs/{id}/download: a completed export's file, streamed.
func (h *Handler) downloadJob(w http.ResponseWriter, req bunrouter.Request) error {
	p := principal(req.Context())
	js, j, err := h.job(req, p)
	if err != nil {
		return err
	}
	if j.Kind != jobs.KindExport || j.State != jobs.StateCompleted {
		return jobError(&jobs.StateError{State: j.State, Want: "only a completed export has a file to download"})
	}
	ct, ext := "text/csv; charset=utf-8", "csv"
	if j.Spec.Format == "ndjson" {
		ct, ext = "application/x-ndjson", "ndjson"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s.%s"`, j.Resource, j.ID, ext))
	w.WriteHeader(http.StatusOK)
	if req.Method == http.MethodHead {
		return nil
	}
	if err := js.Download(req.Context(), p.Workspace.ID, j.ID, w); err != nil {
		h.log.Warn("job download cut short", "job", j.ID, "err", err)
	}
	return nil
}
