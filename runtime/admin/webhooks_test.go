package admin

import (
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/dispatch"
)

// A deliveries cursor serves only the list it was made for (workspace, endpoint, state), and an edited
// one is refused.
func TestDeliveryCursor(t *testing.T) {
	s := &Service{cfg: Config{CursorSecret: []byte("test secret")}}
	const ws, ep = "0190a6d4-0000-7000-8000-000000000001", "0190a6d4-0000-7000-8000-000000000002"
	p := dispatch.Place{Seq: 42, ID: "0190a6d4-0000-7000-8000-000000000003"}
	c := s.deliveryCursor(ws, ep, "failed", p)
	got, err := s.readDeliveryCursor(ws, ep, "failed", c)
	if err != nil || *got != p {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	for name, try := range map[string][4]string{
		"another workspace": {"0190a6d4-0000-7000-8000-000000000009", ep, "failed", c},
		"another endpoint":  {ws, "0190a6d4-0000-7000-8000-000000000009", "failed", c},
		"another state":     {ws, ep, "", c},
		"edited":            {ws, ep, "failed", "A" + c[1:]},
		"no signature":      {ws, ep, "failed", strings.Split(c, ".")[0]},
		"garbage":           {ws, ep, "failed", "%%%"},
	} {
		if _, err := s.readDeliveryCursor(try[0], try[1], try[2], try[3]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The body of a webhook create or update: known members of the right type, null lists for all, the owner
// only on create, anything else 422 naming the member.
func TestWebhookInput(t *testing.T) {
	in, member, err := webhookInput(map[string]any{"url": "https://example.com/h", "event_types": nil, "resources": []any{"companies"}, "enabled": false,
		"member_id": "0190A6D4-0000-7000-8000-000000000001"}, true)
	if err != nil || *in.URL != "https://example.com/h" || in.EventTypes == nil || *in.EventTypes != nil || len(*in.Resources) != 1 || *in.Enabled || member != "0190a6d4-0000-7000-8000-000000000001" {
		t.Fatalf("create body: %+v %q %v", in, member, err)
	}
	for _, body := range []map[string]any{
		{"url": 7},
		{"event_types": "companies.created"},
		{"resources": []any{1}},
		{"enabled": "true"},
		{"member_id": "0190a6d4-0000-7000-8000-000000000001"},
		{"secret": "whsec_x"},
	} {
		if _, _, err := webhookInput(body, false); err == nil {
			t.Errorf("update body %v: accepted", body)
		}
	}
}
