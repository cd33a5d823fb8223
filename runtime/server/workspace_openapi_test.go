package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// openAPIDoc is the part of a document these tests read.
type openAPIDoc struct {
	Info       struct{ Description string }
	Components struct {
		Schemas       map[string]json.RawMessage
		RequestBodies map[string]struct {
			Content map[string]struct{ Schema json.RawMessage }
		} `json:"requestBodies"`
	}
}

func decodeDoc(t *testing.T, raw []byte) openAPIDoc {
	t.Helper()
	var d openAPIDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("document: %v", err)
	}
	return d
}

// schemaProps returns the properties of a schema, and of its custom_fields member.
func schemaProps(t *testing.T, raw json.RawMessage) (props, custom map[string]json.RawMessage) {
	t.Helper()
	var s struct {
		Properties map[string]json.RawMessage
	}
	json.Unmarshal(raw, &s)
	var cf struct {
		Properties map[string]json.RawMessage
	}
	json.Unmarshal(s.Properties["custom_fields"], &cf)
	return s.Properties, cf.Properties
}

func (d openAPIDoc) createBody(name string) json.RawMessage {
	return d.Components.RequestBodies[name].Content["application/json"].Schema
}

// GET /v1/openapi.json with a key is the key's workspace's document: the custom fields and data model
// fields of what the key may read are typed properties; a key limited to some resources learns nothing
// of the others' fields; without a key the document stays the generic one.
func TestWorkspaceOpenAPI(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			reg := e.Server.Backend().Current().Custom
			for _, d := range []customfields.Def{
				{Resource: "companies", Key: "tier", Type: "select", Options: []string{"gold", "silver"}, Label: "Tier {{server_url}}"},
				{Resource: "companies", Key: "seats", Type: "integer", Required: true},
				{Resource: "deals", Key: "secret_margin", Type: "decimal"},
			} {
				if _, err := reg.Create(ctx, e.Workspace, d); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.Server.Backend().Current().Custom.CreateModel(ctx, e.Workspace, "Vendors", map[string]customfields.ModelField{
				"vendor_rating": {Type: "integer", Required: true}, "category": {Type: "string", Options: []string{"software", "hardware"}}}); err != nil {
				t.Fatal(err)
			}
			_, generic := getDoc(t, e.URL)
			res, keyed := getDoc(t, e.URL, "Authorization", "Bearer "+e.Key)
			if res.StatusCode != 200 || res.Header.Get("ETag") == "" || !strings.Contains(res.Header.Get("Cache-Control"), "private") ||
				!strings.Contains(strings.Join(res.Header.Values("Vary"), ","), "Authorization") {
				t.Fatalf("keyed document: %d, headers %v", res.StatusCode, res.Header)
			}
			if res.Header.Get("X-RateLimit-Limit") == "" {
				t.Errorf("the keyed document is not counted against the limits: %v", res.Header)
			}
			if again, body := getDoc(t, e.URL, "Authorization", "Bearer "+e.Key, "If-None-Match", res.Header.Get("ETag")); again.StatusCode != 304 || len(body) != 0 {
				t.Errorf("keyed If-None-Match: %d", again.StatusCode)
			}
			if r, _ := getDoc(t, e.URL); r.Header.Get("ETag") == res.Header.Get("ETag") {
				t.Error("the generic and the workspace document share an ETag")
			}

			// Without a key: the generic document, the committed golden.
			for _, name := range []string{"tier", "secret_margin", "vendor_rating", "Vendors"} {
				if bytes.Contains(generic, []byte(name)) {
					t.Errorf("the generic document names %s", name)
				}
			}
			golden, err := servertest.GenerateOpenAPI(servertest.DefinitionsDir(), e.URL)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(generic, golden) {
				t.Error("GET /v1/openapi.json without a key is not the generic document")
			}

			// With the env's key: typed.
			if problems := mustContract(t, keyed).ValidateDocument(); len(problems) > 0 {
				t.Errorf("the workspace document breaks OpenAPI 3.1:\n%s", strings.Join(problems, "\n"))
			}
			d := decodeDoc(t, keyed)
			if !strings.Contains(d.Info.Description, "This workspace's document") {
				t.Error("the description does not say whose document it is")
			}
			_, recordCF := schemaProps(t, d.Components.Schemas["CompaniesRecord"])
			var tier struct {
				Type    []string `json:"type"`
				Options []string `json:"x-options"`
			}
			json.Unmarshal(recordCF["tier"], &tier)
			if len(tier.Options) < 2 || tier.Options[0] != "gold" || tier.Options[1] != "silver" {
				t.Errorf("CompaniesRecord.custom_fields.tier = %s", recordCF["tier"])
			}
			createProps, createCF := schemaProps(t, d.createBody("CompaniesCreate"))
			var tierEnum struct{ Enum []any }
			json.Unmarshal(createCF["tier"], &tierEnum)
			if len(tierEnum.Enum) != 3 || createProps["cf__tier"] == nil || createCF["seats"] == nil || createProps["cf__seats"] == nil {
				t.Errorf("CompaniesCreate: custom_fields %s, cf__tier %s", createProps["custom_fields"], createProps["cf__tier"])
			}
			if !strings.Contains(string(createProps["custom_fields"]), "seats") {
				t.Errorf("the create body does not name the required custom field seats: %s", createProps["custom_fields"])
			}
			_, updateCF := schemaProps(t, d.Components.Schemas["CompaniesUpdate"])
			if updateCF["tier"] == nil {
				t.Error("CompaniesUpdate.custom_fields has no tier")
			}
			_, dealCF := schemaProps(t, d.Components.Schemas["DealsRecord"])
			_, modelCF := schemaProps(t, d.Components.Schemas["DataModelRecordsRecord"])
			if dealCF["secret_margin"] == nil || modelCF["vendor_rating"] == nil || !strings.Contains(string(modelCF["vendor_rating"]), "Vendors") {
				t.Errorf("deals %v, data model records %v", dealCF, modelCF)
			}

			// A key limited to companies learns nothing of deals' or the data models' fields.
			limited := e.NewKey(e.Member, auth.KeyOptions{Access: "read", Resources: []string{"companies"}})
			r, only := getDoc(t, e.URL, "Authorization", "Bearer "+limited)
			if r.StatusCode != 200 {
				t.Fatalf("limited key: %d %s", r.StatusCode, only)
			}
			for _, name := range []string{"secret_margin", "vendor_rating", "Vendors"} {
				if bytes.Contains(only, []byte(name)) {
					t.Errorf("a key limited to companies learns of %s", name)
				}
			}
			if !bytes.Contains(only, []byte("cf__tier")) {
				t.Error("a key limited to companies does not get companies' custom fields")
			}
			// A workspace whose plan lacks data models (pro) learns nothing of them, nor of another workspace.
			ws, _, freeKey := e.NewWorkspace("pro", "admin", "read")
			if _, err := e.Server.Backend().Current().Custom.CreateModel(ctx, ws, "Hidden", map[string]customfields.ModelField{"hidden_field": {Type: "string"}}); err != nil {
				t.Fatal(err)
			}
			if r, free := getDoc(t, e.URL, "Authorization", "Bearer "+freeKey); r.StatusCode != 200 || bytes.Contains(free, []byte("hidden_field")) || bytes.Contains(free, []byte("cf__tier")) {
				t.Errorf("pro plan's document: %d, names hidden_field %v, names another workspace's tier %v", r.StatusCode,
					bytes.Contains(free, []byte("hidden_field")), bytes.Contains(free, []byte("cf__tier")))
			}

			// A bad key is refused like on any keyed route.
			if r, body := getDoc(t, e.URL, "Authorization", "Bearer wsk_"+strings.Repeat("0", 64)); r.StatusCode != 401 || r.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("bad key: %d %s", r.StatusCode, body)
			}
			if r, _ := getDoc(t, e.URL, "Authorization", "Basic abc"); r.StatusCode != 401 {
				t.Errorf("Basic: %d", r.StatusCode)
			}
		})
	}
}

func mustContract(t *testing.T, doc []byte) *servertest.Contract {
	t.Helper()
	c, err := servertest.ContractFor(doc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
