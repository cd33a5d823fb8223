package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// errorList returns the paths of details.errors, in order, and details.errors_omitted.
func errorList(res *servertest.Response) ([]string, int) {
	env, _ := res.Body["error"].(map[string]any)
	d, _ := env["details"].(map[string]any)
	list, _ := d["errors"].([]any)
	out := make([]string, len(list))
	for i, x := range list {
		m, _ := x.(map[string]any)
		out[i], _ = m["field"].(string)
	}
	omitted := 0
	if n, ok := d["errors_omitted"].(json.Number); ok {
		v, _ := n.Int64()
		omitted = int(v)
	}
	return out, omitted
}

// TestOnePassValidation: one 422 lists every problem of a body — the fields the role may not write,
// the declared fields and the custom fields (in either form, named as the client wrote them), missing
// references of both kinds — on create, update, data model records and the bulk import; and a body of
// a megabyte of unknown members is answered with the first apierr.MaxListed problems and the count of
// the rest, not with a list larger than the body.
func TestOnePassValidation(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			be := e.Server.Backend()
			ctx := context.Background()
			for _, d := range []customfields.Def{
				{Resource: "companies", Key: "tier", Type: "select", Options: []string{"gold", "silver"}, Required: true},
				{Resource: "companies", Key: "partner", Type: "reference", Target: "companies"},
			} {
				if _, err := be.Current().Custom.Create(ctx, e.Workspace, d); err != nil {
					t.Fatal(err)
				}
			}
			modelID, err := be.Current().Custom.CreateModel(ctx, e.Workspace, "Vendors", map[string]customfields.ModelField{"employees": {Type: "integer", Required: true}})
			if err != nil {
				t.Fatal(err)
			}
			id := e.Do("POST", "/v1/companies", map[string]any{"name": "Acme", "cf__tier": "gold"}).Data()["id"].(string)
			missing := "0190a6d4-0000-7000-8000-000000000001"
			member := e.NewKey(e.NewMember("member@x.example", "member", ""), auth.KeyOptions{Access: "write"})

			for _, c := range []struct {
				name, key, method, path string
				body                    map[string]any
				want                    []string
			}{
				{"create, declared and cf__", e.Key, "POST", "/v1/companies", map[string]any{"name": 5, "cf__tier": "bronze"}, []string{"name", "cf__tier"}},
				{"create, declared and custom_fields", e.Key, "POST", "/v1/companies", map[string]any{"name": 5, "custom_fields": map[string]any{"tier": "bronze"}}, []string{"name", "custom_fields.tier"}},
				{"create, both required missing", e.Key, "POST", "/v1/companies", map[string]any{}, []string{"name", "custom_fields.tier"}},
				{"create, required missing in cf__ form", e.Key, "POST", "/v1/companies", map[string]any{"name": "X", "cf__partner": id}, []string{"cf__tier"}},
				{"create, unknown declared and unknown custom", e.Key, "POST", "/v1/companies", map[string]any{"name": "X", "colour": "red", "cf__tier": "gold", "cf__nope": 1}, []string{"colour", "cf__nope"}},
				{"update, declared and cf__", e.Key, "PATCH", "/v1/companies/" + id, map[string]any{"website": "javascript:alert(1)", "employee_count": "many", "cf__tier": 7}, []string{"website", "employee_count", "cf__tier"}},
				{"update, masked field and custom", member, "PATCH", "/v1/companies/" + id, map[string]any{"annual_revenue": "x", "cf__tier": "bronze"}, []string{"annual_revenue", "cf__tier"}},
				{"update, missing references of both kinds", e.Key, "PATCH", "/v1/companies/" + id, map[string]any{"parent_company_id": missing, "cf__partner": missing}, []string{"parent_company_id", "cf__partner"}},
				{"data model record", e.Key, "POST", "/v1/data_model_records?model_id=" + modelID, map[string]any{"name": 5, "cf__employees": "many"}, []string{"name", "cf__employees"}},
			} {
				res := e.DoKey(c.key, c.method, c.path, c.body)
				e.Expect(res, 422, "validation_failed")
				got, _ := errorList(res)
				if strings.Join(got, " ") != strings.Join(c.want, " ") {
					t.Errorf("%s: errors name %v, want %v: %s", c.name, got, c.want, res.Raw)
				}
			}
			if got := e.Do("GET", "/v1/companies/"+id, nil).Data(); got["name"] != "Acme" || got["custom_fields"].(map[string]any)["tier"] != "gold" {
				t.Errorf("refused writes changed the record: %v", got)
			}

			// The bulk import reports both kinds in one pass too, prefixed with the body's index.
			r, _ := be.Current().Catalog.Resource("companies")
			_, err = be.Current().Records.Import(ctx, adminActor(e), r, "", []map[string]any{{"name": "ok", "cf__tier": "gold"}, {"name": 5, "cf__tier": "bronze"}})
			var fl field.ErrorList
			if !asFieldErrors(err, &fl) || len(fl) != 2 || fl[0].Field != "[1].name" || fl[1].Field != "[1].cf__tier" {
				t.Errorf("import: %v", err)
			}

			// A megabyte of unknown members: the first MaxListed, and the count of the others.
			var body bytes.Buffer
			body.WriteString(`{"name":"X","cf__tier":"gold"`)
			n := 0
			for body.Len() < 1<<20-64 {
				fmt.Fprintf(&body, `,"u%06d":1`, n)
				n++
			}
			body.WriteString("}")
			res := e.Do("POST", "/v1/companies", body.Bytes())
			e.Expect(res, 422, "validation_failed")
			got, omitted := errorList(res)
			if len(got) != apierr.MaxListed || omitted != n-apierr.MaxListed || got[0] != "u000000" {
				t.Errorf("%d unknown members: %d listed (first %q), %d omitted", n, len(got), got[0], omitted)
			}
			if len(res.Raw) > 16<<10 {
				t.Errorf("a 1 MiB body of unknown members got a %d-byte answer", len(res.Raw))
			}
			if !strings.Contains(res.Body["error"].(map[string]any)["message"].(string), fmt.Sprint(n)) {
				t.Errorf("the message does not count every problem: %s", res.Body["error"])
			}
			// One member with a long name (each "<" is six bytes in JSON, here and in the answer): its path is
			// cut, in the list and in the message.
			long := strings.Repeat("<", 128<<10)
			res = e.Do("POST", "/v1/companies", map[string]any{"name": "X", "cf__tier": "gold", long: 1})
			e.Expect(res, 422, "validation_failed")
			if got, _ := errorList(res); len(got) != 1 || len([]rune(got[0])) != apierr.MaxEchoed+1 || !strings.HasSuffix(got[0], "…") {
				t.Errorf("a long member name is echoed as %d characters", len(got[0]))
			}
			if len(res.Raw) > 8<<10 {
				t.Errorf("a long member name got a %d-byte answer", len(res.Raw))
			}
		})
	}
}

func asFieldErrors(err error, fl *field.ErrorList) bool { return errors.As(err, fl) }
