package tenancy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/webhooks"
)

// payloadReceiver is a webhook receiver that keeps every event it is sent and whether its signature
// verified with its endpoint's secret. (runtime/server's webhook tests have a fuller one: failures on
// demand, retries, a clock.)
type payloadReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	secret string
	got    []payload
}

type payload struct {
	verified bool
	event    map[string]any
}

func newPayloadReceiver(t *testing.T) *payloadReceiver {
	t.Helper()
	rc := &payloadReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		p := payload{verified: webhooks.Verify([]string{rc.secret}, r.Header, body, time.Now(), 0) == nil}
		_ = json.Unmarshal(body, &p.event)
		rc.got = append(rc.got, p)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// endpoint makes an endpoint of workspace owned by member, posting every event to rc.
func (rc *payloadReceiver) endpoint(t *testing.T, e *servertest.Env, workspace, member string) dispatch.Endpoint {
	t.Helper()
	u := rc.URL
	ep, err := e.Server.Backend().Webhooks.Create(context.Background(), workspace, member, dispatch.Input{URL: &u})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("secret %q", ep.Secret)
	}
	rc.mu.Lock()
	rc.secret = ep.Secret
	rc.mu.Unlock()
	return ep
}

func (rc *payloadReceiver) requests() []payload {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]payload(nil), rc.got...)
}
