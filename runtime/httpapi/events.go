package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/feed"
)

// eventsPath is the change feed's path: its requests may wait (wait=…) on top of the request timeout.
const eventsPath = "/v1/events"

// events serves GET /v1/events, the change feed (records.Service.Events).
func (h *Handler) events(w http.ResponseWriter, req bunrouter.Request) error {
	q, err := queryOf(req.Request)
	if err != nil {
		return err
	}
	var eq feed.Query
	for k, vals := range q {
		if len(vals) != 1 {
			return apierr.InvalidField(field.CodeInvalid, k, "must be given once")
		}
		v := vals[0]
		switch k {
		case "cursor":
			eq.Cursor = v
		case "resource":
			eq.Resources = splitList(v)
		case "type":
			eq.Types = splitList(v)
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil {
				return apierr.InvalidField(field.CodeType, "limit", "must be a whole number")
			}
			eq.Limit = &n
		case "wait":
			d, err := parseWait(v)
			if err != nil {
				return apierr.InvalidField(field.CodeType, "wait", `must be a duration such as "30s" or a number of seconds`)
			}
			eq.Wait = d
		default:
			return apierr.InvalidField(field.CodeUnknown, k, "is not a parameter of this endpoint")
		}
	}
	page, err := h.svc.Events(req.Context(), actorOf(req.Context()), eq)
	if errors.Is(err, feed.ErrOff) {
		return apierr.New(apierr.RouteNotFound, "The change feed is off on this server.")
	}
	if err != nil {
		return err
	}
	next := strconv.FormatInt(page.Cursor, 10)
	writeJSON(w, http.StatusOK, map[string]any{"data": page.Events,
		"meta": map[string]any{"next_cursor": next, "has_more": page.HasMore, "page_size": len(page.Events)}})
	return nil
}

// splitList reads a comma-separated parameter; empty items are dropped.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseWait reads wait: a Go duration ("30s", "500ms") or a number of seconds ("30").
func parseWait(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(v)
}
