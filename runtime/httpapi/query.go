package httpapi

import (
	"net/http"
	"net/url"

	"github.com/workspace-records/records/engine/apierr"
)

// queryOf parses a request's query string strictly. url.URL.Query drops every pair it cannot decode
// (page_size=%zz, filter=%, a;b=1), and the request would go on as if the parameter had not been sent —
// a list with page_size=%zz answered 25 records. Such a query is refused with 400 instead.
func queryOf(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, apierr.Invalid("The query string is malformed ("+err.Error()+"): percent-encode reserved characters and separate parameters with &.", nil)
	}
	return q, nil
}
