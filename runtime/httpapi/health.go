package httpapi

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bunrouter"
	"github.com/workspace-records/records/engine/apierr"
)

// Check is the state of one part a request needs: the database, Redis, a plugin. Err nil is healthy.
type Check struct {
	Name string
	Err  error
}

// ReadyTimeout bounds the checks of one GET /readyz.
const ReadyTimeout = 2 * time.Second

// Drain makes GET /readyz answer 503 from now on, so that a load balancer stops sending requests while
// the server finishes the ones it has.
func (h *Handler) Drain() { h.draining.Store(true) }

// healthz answers 200 while the process serves HTTP: a liveness probe, which checks nothing else.
func (h *Handler) healthz(w http.ResponseWriter, _ bunrouter.Request) error {
	writeJSON(w, 200, map[string]any{"status": "ok"})
	return nil
}

// readyz answers 200 when every part a request needs answers, and 503 in the error envelope, naming
// each failing part, when one does not or when the server is shutting down.
//
// ?optional=redis (a comma-separated list of check names) still checks and reports those parts but does
// not fail on them: the answer is 200 with status "degraded". It is for a probe that should keep a
// replica in rotation while Redis is away, since the rate limits and the quota then fall back (to the
// process and to the database), instead of taking every replica out at once.
func (h *Handler) readyz(w http.ResponseWriter, req bunrouter.Request) error {
	optional := map[string]bool{}
	for k, v := range req.URL.Query() {
		if k != "optional" {
			return apierr.Invalid("GET /readyz takes only the optional parameter.", nil)
		}
		for _, list := range v {
			for _, name := range strings.Split(list, ",") {
				optional[strings.TrimSpace(name)] = true
			}
		}
	}
	checks := map[string]string{}
	var failing, degraded []string
	if h.draining.Load() {
		checks["server"] = "shutting down"
		failing = append(failing, "server")
	}
	if h.ready != nil {
		ctx, cancel := context.WithTimeout(req.Context(), ReadyTimeout)
		defer cancel()
		for _, c := range h.ready(ctx) {
			switch {
			case c.Err == nil:
				checks[c.Name] = "ok"
			case optional[c.Name]:
				checks[c.Name] = c.Err.Error()
				degraded = append(degraded, c.Name)
			default:
				checks[c.Name] = c.Err.Error()
				failing = append(failing, c.Name)
			}
		}
	}
	if len(failing) == 0 {
		status := "ok"
		if len(degraded) > 0 {
			status = "degraded"
		}
		body := map[string]any{"status": status, "checks": checks}
		h.addDetails(body)
		writeJSON(w, 200, body)
		return nil
	}
	sort.Strings(failing)
	e := apierr.New(apierr.ServiceUnavailable, "Not ready: "+strings.Join(failing, ", ")+".")
	e.Details = map[string]any{"checks": checks}
	h.addDetails(e.Details)
	e.Header = http.Header{"Retry-After": {"1"}}
	return e
}

// addDetails adds the server's own members (Config.ReadyDetails) to a readiness answer.
func (h *Handler) addDetails(body map[string]any) {
	if h.details == nil {
		return
	}
	for k, v := range h.details() {
		body[k] = v
	}
}
