package httpapi

import (
	"net/http"
	"strings"

	"github.com/uptrace/bunrouter"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
)

// unmatched answers requests no route served: 405 with Allow for a known path shape, else 404.
func (h *Handler) unmatched(w http.ResponseWriter, req bunrouter.Request) error {
	path := req.URL.Path
	res, shape, unknown := route.Match(h.cat, path)
	switch {
	case unknown:
		return apierr.New(apierr.UnknownResource, "There is no resource named "+strings.SplitN(strings.TrimPrefix(path, "/v1/"), "/", 2)[0]+"; GET /v1/resources lists them.")
	case res != nil:
		return methodNotAllowed(res, shape, req.Method)
	}
	if allow := route.FixedAllow(path); allow != "" {
		e := apierr.New(apierr.MethodNotAllowed, req.Method+" is not allowed on "+path+".")
		e.Header = http.Header{"Allow": []string{allow}}
		return e
	}
	return apierr.New(apierr.RouteNotFound, "No route matches "+req.Method+" "+path+".")
}

func methodNotAllowed(res *model.Resource, shape route.Shape, method string) *apierr.Error {
	allow := route.Allow(res, shape)
	msg := method + " is not allowed here"
	if res.ReadOnly() {
		msg = res.Name + " is read-only: only list, query and get exist"
	}
	e := apierr.New(apierr.MethodNotAllowed, msg+".")
	e.Header = http.Header{"Allow": []string{strings.Join(allow, ", ")}}
	return e
}
