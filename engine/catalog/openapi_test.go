package catalog_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/model/modeltest"
	"github.com/workspace-records/records/engine/schema"
)

// shippedDoc is the generic document of the shipped definitions, through JSON as a client reads it.
func shippedDoc(t *testing.T) map[string]any {
	t.Helper()
	cat := modeltest.Shipped(t)
	sch, err := schema.Compile(cat)
	if err != nil {
		t.Fatal(err)
	}
	return viaJSON(t, catalog.OpenAPI(cat, sch))
}

func viaJSON(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// walk calls fn with every JSON object in v and its JSON pointer.
func walk(v any, at string, fn func(at string, obj map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(at, x)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walk(x[k], at+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), fn)
		}
	case []any:
		for i, it := range x {
			walk(it, fmt.Sprintf("%s/%d", at, i), fn)
		}
	}
}

// requestBodySchema returns the schema of the JSON request body of op, following $refs to components.
func requestBodySchema(t *testing.T, doc map[string]any, op map[string]any) map[string]any {
	t.Helper()
	body, _ := op["requestBody"].(map[string]any)
	if ref, ok := body["$ref"].(string); ok {
		body = doc["components"].(map[string]any)["requestBodies"].(map[string]any)[strings.TrimPrefix(ref, "#/components/requestBodies/")].(map[string]any)
	}
	s, _ := body["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	return resolve(doc, s)
}

// resolve follows a schema's $ref to a component.
func resolve(doc map[string]any, s map[string]any) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		return doc["components"].(map[string]any)["schemas"].(map[string]any)[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
	}
	return s
}

// An update body sets only what it names: a default there would make typed generators (openapi-typescript
// with its default flags) require the member, so a PATCH would resend, and reset, e.g. lifecycle_stage.
// Defaults belong to create bodies, where the server applies them.
func TestUpdateBodiesHaveNoDefaults(t *testing.T) {
	doc := shippedDoc(t)
	var creates, updates int
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			op, ok := op.(map[string]any)
			if !ok || (method != "patch" && method != "post") || op["requestBody"] == nil {
				continue
			}
			s := requestBodySchema(t, doc, op)
			defaults := 0
			walk(s, "", func(at string, obj map[string]any) {
				if _, ok := obj["default"]; ok && !strings.Contains(at, "/properties/default") {
					defaults++
					if method == "patch" {
						t.Errorf("PATCH %s: the update body has a default at %s", path, at)
					}
				}
			})
			if method == "patch" {
				updates++
			} else if strings.HasSuffix(fmt.Sprint(op["operationId"]), "Companies") && strings.HasPrefix(fmt.Sprint(op["operationId"]), "create") {
				creates++
				if defaults == 0 {
					t.Errorf("POST %s: the create body lost its defaults", path)
				}
			}
		}
	}
	if updates == 0 || creates != 1 {
		t.Errorf("%d update bodies, %d companies create bodies checked", updates, creates)
	}
}

// No schema in the document is a bare object: typed generators turn {type: object} into an object that
// takes no members (openapi-typescript's Record<string, never>), so a client could not write
// custom_fields: {tier: "gold"}. Every object says what it holds: properties, or additionalProperties.
// Custom fields and association attributes hold field values (FieldValue).
func TestNoBareObjects(t *testing.T) {
	doc := shippedDoc(t)
	walk(doc["components"], "#/components", func(at string, obj map[string]any) {
		if obj["type"] != "object" || strings.Contains(at, "/properties/type") {
			return
		}
		_, props := obj["properties"]
		_, more := obj["additionalProperties"]
		_, pattern := obj["patternProperties"]
		if !props && !more && !pattern {
			t.Errorf("%s: an object that says nothing of its members", at)
		}
	})
	walk(doc["paths"], "#/paths", func(at string, obj map[string]any) {
		if obj["type"] == "object" && obj["properties"] == nil && obj["additionalProperties"] == nil {
			t.Errorf("%s: an object that says nothing of its members", at)
		}
	})
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	value, ok := schemas["FieldValue"].(map[string]any)
	if !ok {
		t.Fatal("no FieldValue schema")
	}
	var kinds []string
	for _, alt := range value["anyOf"].([]any) {
		kinds = append(kinds, alt.(map[string]any)["type"].(string))
	}
	if strings.Join(kinds, ",") != "string,number,boolean,array,null" {
		t.Errorf("FieldValue holds %v", kinds)
	}
	if got := schemas["CustomFields"].(map[string]any)["additionalProperties"]; !reflect.DeepEqual(got, map[string]any{"$ref": "#/components/schemas/FieldValue"}) {
		t.Errorf("CustomFields holds %v", got)
	}
	for _, name := range []string{"CompaniesRecord", "CompaniesUpdate"} {
		if got := schemas[name].(map[string]any)["properties"].(map[string]any)["custom_fields"]; !reflect.DeepEqual(got, map[string]any{"$ref": "#/components/schemas/CustomFields"}) {
			t.Errorf("%s.custom_fields is %v", name, got)
		}
	}
	create := requestBodySchema(t, doc, doc["paths"].(map[string]any)["/v1/companies"].(map[string]any)["post"].(map[string]any))
	// cf__<key> members: described, untyped (a typed index signature would constrain custom_fields too).
	if got, _ := create["patternProperties"].(map[string]any)[schema.CustomMemberPattern].(map[string]any); got == nil || got["type"] != nil || !strings.Contains(fmt.Sprint(got["description"]), "FieldValue") {
		t.Errorf("cf__ members hold %v", got)
	}
	// PUT link: the association attributes, typed.
	put := doc["paths"].(map[string]any)["/v1/contacts/{id}/{association}/{target_id}"].(map[string]any)["put"].(map[string]any)
	body := requestBodySchema(t, doc, put)
	props, _ := body["properties"].(map[string]any)
	if props["is_primary"] == nil || props["job_title"] == nil || body["additionalProperties"] != false {
		t.Errorf("contacts' link body: %v", body)
	}
}

// The query body takes page or cursor, not both: the server refuses the pair with 400, and the schema
// says so.
func TestQueryBodyPageOrCursor(t *testing.T) {
	doc := shippedDoc(t)
	n := 0
	for path, item := range doc["paths"].(map[string]any) {
		if !strings.HasSuffix(path, "/query") {
			continue
		}
		n++
		s := requestBodySchema(t, doc, item.(map[string]any)["post"].(map[string]any))
		not, _ := s["not"].(map[string]any)
		if req, _ := not["required"].([]any); len(req) != 2 || req[0] != "page" || req[1] != "cursor" {
			t.Errorf("POST %s: the body does not exclude page with cursor: not = %v", path, s["not"])
		}
	}
	if n != 44 {
		t.Errorf("%d query paths", n)
	}
}

// An operation exists only where the server serves it: writes a resource refuses are described (the
// tag's x-refused-operations, the path's description), not declared as operations a generated client
// would offer. Every operation has a success response.
func TestRefusalsAreNotOperations(t *testing.T) {
	doc := shippedDoc(t)
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			op, ok := op.(map[string]any)
			if !ok {
				continue
			}
			success := false
			for code := range op["responses"].(map[string]any) {
				success = success || code[0] == '2'
			}
			if !success {
				t.Errorf("%s %s has no success response: %v", method, path, op["operationId"])
			}
		}
	}
	var automations map[string]any
	for _, tag := range doc["tags"].([]any) {
		if tag := tag.(map[string]any); tag["name"] == "automations" {
			automations = tag
		}
	}
	refused, _ := automations["x-refused-operations"].([]any)
	var got []string
	for _, r := range refused {
		r := r.(map[string]any)
		got = append(got, fmt.Sprintf("%s %s %v [%s]", r["method"], r["path"], r["status"], r["allow"]))
	}
	want := []string{
		"POST /v1/automations 405 [GET, HEAD]", "PATCH /v1/automations/{id} 405 [GET, HEAD]",
		"DELETE /v1/automations/{id} 405 [GET, HEAD]", "POST /v1/automations/{id}/restore 405 []",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("automations refuses\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d, _ := doc["paths"].(map[string]any)["/v1/automations"].(map[string]any)["description"].(string); !strings.Contains(d, "POST on this path is refused: 405") {
		t.Errorf("/v1/automations says %q", d)
	}
}

// The probes are part of the document: no key, their answers described.
func TestProbesDocumented(t *testing.T) {
	doc := shippedDoc(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		item, _ := doc["paths"].(map[string]any)[path].(map[string]any)
		op, _ := item["get"].(map[string]any)
		if op == nil {
			t.Errorf("GET %s is not documented", path)
			continue
		}
		if sec, _ := op["security"].([]any); sec == nil || len(sec) != 0 {
			t.Errorf("GET %s: security %v, want none", path, op["security"])
		}
		if op["responses"].(map[string]any)["200"] == nil {
			t.Errorf("GET %s: no 200", path)
		}
	}
	if t.Failed() {
		return
	}
	if doc["paths"].(map[string]any)["/readyz"].(map[string]any)["get"].(map[string]any)["responses"].(map[string]any)["503"] == nil {
		t.Error("GET /readyz: no 503")
	}
}

// A workspace's document types the custom fields of the resources it lists, as custom_fields members and
// cf__<key> members; a key two data models declare differently takes either type; resources it does not
// list stay generic; no workspace is the generic document.
func TestOpenAPIForWorkspace(t *testing.T) {
	cat := modeltest.Shipped(t)
	sch, err := schema.Compile(cat)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(viaJSON(t, catalog.OpenAPIFor(cat, sch, nil)), shippedDoc(t)) {
		t.Error("OpenAPIFor(nil) is not the generic document")
	}
	tier := &model.Field{Key: "tier", Label: "Tier", Type: model.String, MaxLength: 255, Options: []string{"gold", "silver"}}
	seats := &model.Field{Key: "seats", Label: "Seats", Type: model.Integer, Required: true}
	rating := &model.Field{Key: "rating", Label: "Rating", Type: model.Integer}
	ratingText := &model.Field{Key: "rating", Label: "Rating", Type: model.String, MaxLength: 20}
	ws := &catalog.Workspace{Name: "Acme", Resources: map[string][]catalog.CustomField{
		"companies":          {{Field: tier}, {Field: seats}},
		"data_model_records": {{Field: rating, Model: "Vendors"}, {Field: ratingText, Model: "Partners"}},
		"deals":              nil, // readable, no custom fields
	}}
	doc := viaJSON(t, catalog.OpenAPIFor(cat, sch, ws))
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	create := requestBodySchema(t, doc, doc["paths"].(map[string]any)["/v1/companies"].(map[string]any)["post"].(map[string]any))
	cprops := create["properties"].(map[string]any)
	cf := cprops["custom_fields"].(map[string]any)
	if cf["additionalProperties"] != false || create["patternProperties"] != nil {
		t.Errorf("the create body's custom fields are not closed: %v / %v", cf, create["patternProperties"])
	}
	tierWrite := cf["properties"].(map[string]any)["tier"].(map[string]any)
	if !reflect.DeepEqual(tierWrite["enum"], []any{"gold", "silver", nil}) || !reflect.DeepEqual(cprops["cf__tier"], tierWrite) {
		t.Errorf("tier on create: %v, cf__tier %v", tierWrite, cprops["cf__tier"])
	}
	if !strings.Contains(fmt.Sprint(cf["description"]), "seats") || cf["properties"].(map[string]any)["seats"].(map[string]any)["type"] != "integer" {
		t.Errorf("seats on create: %v", cf)
	}
	record := schemas["CompaniesRecord"].(map[string]any)["properties"].(map[string]any)["custom_fields"].(map[string]any)
	if record["properties"].(map[string]any)["tier"] == nil || !reflect.DeepEqual(record["additionalProperties"], map[string]any{"$ref": "#/components/schemas/FieldValue"}) {
		t.Errorf("CompaniesRecord.custom_fields: %v", record)
	}
	models := schemas["DataModelRecordsRecord"].(map[string]any)["properties"].(map[string]any)["custom_fields"].(map[string]any)
	r, _ := models["properties"].(map[string]any)["rating"].(map[string]any)
	if alts, _ := r["anyOf"].([]any); len(alts) != 2 || !strings.Contains(fmt.Sprint(r["description"]), "Vendors, Partners") {
		t.Errorf("rating of two models: %v", r)
	}
	if deals := schemas["DealsRecord"].(map[string]any)["properties"].(map[string]any)["custom_fields"].(map[string]any); deals["properties"] == nil {
		t.Errorf("DealsRecord.custom_fields is not typed (empty): %v", deals)
	}
	if contacts := schemas["ContactsRecord"].(map[string]any)["properties"].(map[string]any)["custom_fields"]; !reflect.DeepEqual(contacts, map[string]any{"$ref": "#/components/schemas/CustomFields"}) {
		t.Errorf("ContactsRecord.custom_fields, not in the workspace's list, is %v", contacts)
	}
	if !strings.Contains(doc["info"].(map[string]any)["description"].(string), "This workspace's document") {
		t.Error("the description does not say whose document it is")
	}
	if ws.Fingerprint() == (&catalog.Workspace{Name: "Acme", Resources: map[string][]catalog.CustomField{"companies": {{Field: tier}}}}).Fingerprint() {
		t.Error("two workspaces with different fields share a fingerprint")
	}
}
