package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// nonWebURLs are values of url fields a browser would run or open outside the web when rendered as a
// link; every one is refused (422 invalid_format naming the field), in any form of the body.
var nonWebURLs = []string{
	"javascript:alert(document.cookie)", "JaVaScRiPt:alert(1)", "javascript://example.com/%0aalert(1)",
	"data:text/html,<script>alert(1)</script>", "vbscript:msgbox(1)", "file:///etc/passwd", "mailto:a@example.com",
	"//example.com/x", "https://",
}

// TestURLFieldsTakeWebAddressesOnly drives every writable url field of every resource (declared, as
// the catalog has them), a custom url field in both body forms and a data model's url field with
// addresses of other schemes: each is refused with 422 naming the field as sent, nothing is written,
// and http and https addresses are stored as sent.
func TestURLFieldsTakeWebAddressesOnly(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			be := e.Server.Backend()
			ctx := context.Background()
			ids := seedAll(t, e)
			if _, err := be.Current().Custom.Create(ctx, e.Workspace, customfields.Def{Resource: "companies", Key: "homepage", Type: "url"}); err != nil {
				t.Fatal(err)
			}
			modelID, err := be.Current().Custom.CreateModel(ctx, e.Workspace, "Links", map[string]customfields.ModelField{"site": {Type: "url"}})
			if err != nil {
				t.Fatal(err)
			}
			refused := func(t *testing.T, method, path string, body map[string]any, name string) {
				t.Helper()
				res := e.Do(method, path, body)
				e.Expect(res, 422, "validation_failed")
				if !strings.Contains(string(res.Raw), `"field":"`+name+`"`) || !strings.Contains(string(res.Raw), `"code":"invalid_format"`) {
					t.Errorf("%s %s with %v: the refusal does not name %s as invalid_format: %s", method, path, body, name, res.Raw)
				}
			}
			checked := 0
			for _, r := range be.Current().Catalog.Resources {
				if !r.Ops.Has(model.OpUpdate) || r.ModelScoped {
					continue
				}
				for _, f := range r.Declared() {
					if f.Type != model.URL || !f.Writable() {
						continue
					}
					checked++
					id := ids[r.Name][0]
					path := "/v1/" + r.Name + "/" + id
					before := e.Do("GET", path, nil)
					for _, bad := range nonWebURLs {
						refused(t, "PATCH", path, map[string]any{f.Key: bad}, f.Key)
					}
					if after := e.Do("GET", path, nil); string(after.Raw) != string(before.Raw) {
						t.Errorf("%s.%s: refused writes changed the record", r.Name, f.Key)
					}
					for _, good := range []string{"https://example.com/a?b=c", "HTTP://Example.com:8080/x"} {
						res := e.Do("PATCH", path, map[string]any{f.Key: good})
						e.Expect(res, 200, "")
						if res.Data()[f.Key] != good {
							t.Errorf("%s.%s: stored %v, sent %s", r.Name, f.Key, res.Data()[f.Key], good)
						}
					}
				}
			}
			if checked < 5 {
				t.Fatalf("only %d declared url fields found", checked)
			}
			for _, bad := range nonWebURLs {
				refused(t, "POST", "/v1/companies", map[string]any{"name": "X", "cf__homepage": bad}, "cf__homepage")
				refused(t, "POST", "/v1/companies", map[string]any{"name": "X", "custom_fields": map[string]any{"homepage": bad}}, "custom_fields.homepage")
				refused(t, "POST", "/v1/data_model_records?model_id="+modelID, map[string]any{"name": "X", "cf__site": bad}, "cf__site")
			}
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "X", "cf__homepage": "https://example.com"}), 201, "")
			e.Expect(e.Do("POST", "/v1/data_model_records?model_id="+modelID, map[string]any{"name": "X", "cf__site": "http://example.com"}), 201, "")
		})
	}
}

// TestWebhookURLCharacters: a webhook URL holds only the characters RFC 3986 allows, as sent. One with
// `"`, `<`, `>` or another character a URL must carry percent-encoded (a space, `\`, `{`, `|`, non-ASCII)
// is refused by create and update — 422 validation_failed naming url — and nothing is made or changed;
// the percent-encoded form is taken and stored byte for byte as sent.
func TestWebhookURLCharacters(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ak := e.NewKey(e.Member, auth.KeyOptions{Access: auth.AccessAdmin})
			refused := func(t *testing.T, res *servertest.Response, u string) {
				t.Helper()
				if res.Status != 422 || res.Code() != "validation_failed" {
					t.Errorf("url %q: %d %s; want 422 validation_failed", u, res.Status, res.Raw)
					return
				}
				errs, _ := res.Body["error"].(map[string]any)["details"].(map[string]any)["errors"].([]any)
				if len(errs) != 1 || errs[0].(map[string]any)["field"] != "url" {
					t.Errorf("url %q: %s; want one error naming url", u, res.Raw)
				}
			}
			const base = "https://hooks.example.com"
			good := base + "/in/%22a%22%3Cb%3E?q=%22%3E%3Cimg%3E&name=caf%C3%A9"
			made := e.DoKey(ak, "POST", "/v1/admin/webhooks", map[string]any{"url": good})
			e.Expect(made, 201, "")
			if made.Data()["url"] != good {
				t.Errorf("stored %v, sent %s", made.Data()["url"], good)
			}
			id := made.Data()["id"].(string)
			for _, bad := range []string{`/in/"a"`, "/in/<script>alert(1)</script>", "/in/a>b", `/in?q="><img src=x onerror=alert(1)>`,
				"/in/a b", `/in/a\b`, "/in/{a}", "/in/a|b", "/in/a^b", "/in/a`b", "/in/café"} {
				u := base + bad
				refused(t, e.DoKey(ak, "POST", "/v1/admin/webhooks", map[string]any{"url": u}), u)
				refused(t, e.DoKey(ak, "PATCH", "/v1/admin/webhooks/"+id, map[string]any{"url": u}), u)
			}
			list := e.DoKey(ak, "GET", "/v1/admin/webhooks", nil)
			e.Expect(list, 200, "")
			if l := list.List(); len(l) != 1 || l[0]["url"] != good {
				t.Errorf("after the refusals: %s", list.Raw)
			}
		})
	}
}
