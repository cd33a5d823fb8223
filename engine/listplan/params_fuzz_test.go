package listplan_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/model/modeltest"
	"github.com/workspace-records/records/engine/sqlgen"
)

// paramCodes are the codes list parameter errors may carry (API details.errors[].code).
var paramCodes = map[field.Code]bool{
	field.CodeRequired: true, field.CodeUnknown: true, field.CodeType: true, field.CodeTooLong: true, field.CodeDuplicate: true,
	field.CodeOption: true, field.CodeRange: true, field.CodeConflicting: true, field.CodeInvalid: true,
}

var listParams = map[string]bool{"page": true, "page_size": true, "cursor": true, "sort": true, "order": true,
	"search": true, "include_archived": true, "filter": true, "join": true, "fields": true, "model_id": true, "count": true}

const fixedID = "0190a6d4-0000-7000-8000-00000000000a"

// FuzzFromQuery sends arbitrary raw query strings, as a GET /v1/{resource} carries them, through
// url.ParseQuery, FromQuery and Build on deals. Nothing may panic; every error has a documented code and
// names its parameter; every unknown or repeated parameter is named; an accepted plan keeps the limits
// (page size, page window, filter count, search terms), the same parameters sent as a POST /query body
// give the same plan, SQL of both dialects carries no filter value in its text, and a cursor issued for
// the plan resumes it at the same position.
func FuzzFromQuery(f *testing.F) {
	for _, s := range []string{
		"", "page=2&page_size=10", "cursor=start&sort=amount&order=asc", "page=1&cursor=start", "page=0", "page=10000",
		"page=401&page_size=25", "page_size=101", "page_size=-1", "page_size=%zz", "page=1&page=2",
		"sort=name; DROP TABLE x", "order=ASC", "join=or&filter=" + url.QueryEscape(`[{"field":"name","op":"eq","value":"Acme"}]`),
		"filter=" + url.QueryEscape(`[{"field":"amount","op":"in","value":[1e-999999,2]}]`),
		"filter=" + url.QueryEscape(`[{"field":"amount","op":"gt","value":1e9999999}]`),
		"filter=" + url.QueryEscape(`[{"field":"close_date","op":"lt","value":"2026-01-01"}]`) + "&include_archived=true",
		"filter=%5B", "filter=%5B%5D%5B%5D", "search=acme%20robotics", "search=%00%01", "search=" + url.QueryEscape("ÄÖÜ ß 数据"),
		"fields=name,amount,%20id,,", "fields=", "model_id=x", "include_archived=1", "unknown=1", "a;b=c", "%=1", "&&&=",
		"cursor=eyJ2IjoxfQ.AAAAAAAAAAAAAAAAAAAAAA",
		"join=or&filter=" + url.QueryEscape(`[{"join":"and","filters":[{"field":"status","op":"eq","value":"won"},{"join":"or","filters":[{"field":"amount","op":"gt","value":10},{"field":"close_date","op":"is_empty"}]}]}]`),
		"filter=" + url.QueryEscape(`[{"filters":[{"filters":[{"filters":[{"filters":[{"filters":[]}]}]}]}]}]`),
	} {
		f.Add(s)
	}
	cat := modeltest.Shipped(f)
	deals, _ := cat.Resource("deals")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return // the HTTP layer refuses these before FromQuery (see FuzzHTTP)
		}
		_, emptyName := q[""]
		p, errs := listplan.FromQuery(q)
		checkErrors(t, errs, emptyName)
		for k, v := range q {
			if !listParams[k] || len(v) != 1 {
				if !named(errs, k) {
					t.Fatalf("parameter %q (%d values) accepted without an error naming it: %v", k, len(v), errs)
				}
			}
		}
		if len(errs) > 0 {
			return
		}
		plan, errs := listplan.Build(deals, p, listplan.Scope{Workspace: "w", Secret: secret})
		checkErrors(t, errs, false)
		if len(errs) > 0 {
			return
		}
		checkPlan(t, plan)
		// The same parameters as a query body give the same plan (the body's limit on fields is its own).
		if len(p.Fields) > listplan.MaxFields {
			return
		}
		bp, errs := listplan.FromBody(bodyOf(p))
		if len(errs) > 0 {
			t.Fatalf("query %q accepted, its body form %v refused: %v", raw, bodyOf(p), errs)
		}
		bplan, errs := listplan.Build(deals, bp, listplan.Scope{Workspace: "w", Secret: secret})
		if len(errs) > 0 {
			t.Fatalf("query %q accepted, its body form refused by Build: %v", raw, errs)
		}
		if d := diffPlans(plan, bplan); d != "" {
			t.Fatalf("query %q and its body form differ: %s", raw, d)
		}
	})
}

// FuzzFromBody sends arbitrary POST /v1/{resource}/query bodies through FromBody and Build on deals,
// with the properties of FuzzFromQuery.
func FuzzFromBody(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"page":2,"page_size":10}`, `{"cursor":"start","sort":"amount","order":"asc"}`, `{"page":1,"cursor":"start"}`,
		`{"page":1.5}`, `{"page":1e2}`, `{"page":"1"}`, `{"page_size":1e9999999}`, `{"page":99999999999999999999}`,
		`{"filters":[{"field":"name","op":"starts_with","value":"Ac"}],"join":"or"}`, `{"filters":"[]"}`, `{"filters":null}`,
		`{"filters":[{"field":"amount","op":"in","value":[1e-999999,2]}]}`, `{"fields":["name","id"]}`, `{"fields":[1]}`,
		`{"filters":[{"join":"or","filters":[{"field":"name","op":"eq","value":"a"},{"filters":[{"field":"amount","op":"lt","value":5}]}]}]}`,
		`{"fields":"name"}`, `{"include_archived":"true"}`, `{"search":"acme"}`, `{"search":""}`, `{"model_id":5}`, `{"extra":1}`,
	} {
		f.Add([]byte(s))
	}
	cat := modeltest.Shipped(f)
	deals, _ := cat.Resource("deals")
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var body map[string]any
		if dec.Decode(&body) != nil || body == nil {
			return
		}
		if _, err := dec.Token(); err != io.EOF {
			return
		}
		_, emptyName := body[""]
		p, errs := listplan.FromBody(body)
		checkErrors(t, errs, emptyName)
		for k := range body {
			if (!listParams[k] || k == "filter") && k != "filters" {
				if !named(errs, k) {
					t.Fatalf("member %q accepted without an error naming it: %v", k, errs)
				}
			}
		}
		if len(errs) > 0 {
			return
		}
		plan, errs := listplan.Build(deals, p, listplan.Scope{Workspace: "w", Secret: secret})
		checkErrors(t, errs, false)
		if len(errs) == 0 {
			checkPlan(t, plan)
		}
	})
}

// FuzzCursorRoundTrip: for every sortable field of every shipped resource, in both orders, any value a
// record can hold (model.Canonical and model.Check accept it) encoded in a cursor decodes to the same
// position, and the cursor is refused by the other order.
func FuzzCursorRoundTrip(f *testing.F) {
	cat := modeltest.Shipped(f)
	type sortKey struct {
		res *model.Resource
		f   *model.Field
	}
	var keys []sortKey
	title := -1
	for _, r := range cat.Resources {
		for _, fl := range r.Fields {
			if fl.Sortable {
				if r.Name == "project_tasks" && fl.Key == "title" {
					title = len(keys)
				}
				keys = append(keys, sortKey{r, fl})
			}
		}
	}
	for _, s := range []string{`"Acme"`, `12.50`, `-0.000001`, `1e20`, `"2026-02-28"`, `"2026-01-31T09:30:00.123456789+02:00"`,
		`7`, `null`, `true`, `"0190A6D4-0000-7000-8000-000000000001"`, `["a","b"]`, `""`, `"\u2028"`} {
		for i := 0; i < len(keys); i += 7 {
			f.Add(uint16(i), i%2 == 0, s)
		}
	}
	// The longest sortable text, in the characters JSON escapes to six bytes each: its cursor is the
	// longest any record can produce (it was refused by the server that issued it at 4,096 characters).
	f.Add(uint16(title), false, `"`+strings.Repeat(`&`, 500)+`"`)
	f.Add(uint16(title), true, `"`+strings.Repeat(`\u0001`, 500)+`"`)
	f.Fuzz(func(t *testing.T, which uint16, desc bool, value string) {
		k := keys[int(which)%len(keys)]
		fl := k.f
		order := map[bool]string{true: "desc", false: "asc"}
		plan, errs := listplan.Build(k.res, listplan.Params{Sort: fl.Key, Order: order[desc]}, listplan.Scope{Workspace: "w", Secret: secret})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		var key any
		dec := json.NewDecoder(bytes.NewReader([]byte(value)))
		dec.UseNumber()
		var raw any
		if dec.Decode(&raw) != nil {
			return
		}
		if raw != nil {
			cv, err := model.Canonical(fl, raw)
			if err != nil || model.Check(fl, cv) != nil {
				return
			}
			key = cv
		}
		pos := listplan.Position{Key: key, ID: fixedID}
		c := listplan.EncodeCursor(secret, plan, pos)
		got, err := listplan.DecodeCursor(secret, c, plan)
		if err != nil {
			t.Fatalf("%s.%s %s: cursor (%d characters) of %#v refused: %v", k.res.Name, fl.Key, order[desc], len(c), key, err)
		}
		if got.ID != pos.ID || !sameKey(got.Key, pos.Key) {
			t.Fatalf("%s.%s %s: cursor of %#v decoded to %#v", k.res.Name, fl.Key, order[desc], pos, got)
		}
		other, errs := listplan.Build(k.res, listplan.Params{Sort: fl.Key, Order: order[!desc]}, listplan.Scope{Workspace: "w", Secret: secret})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if _, err := listplan.DecodeCursor(secret, c, other); err == nil {
			t.Fatalf("%s.%s: a cursor of order %s was accepted for order %s", k.res.Name, fl.Key, order[desc], order[!desc])
		}
	})
}

func sameKey(a, b any) bool {
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return ok && ta.Equal(tb)
	}
	return reflect.DeepEqual(a, b)
}

// checkErrors checks every error has a documented code, a message and the path of what it is about,
// which is empty only for a parameter or member whose name is empty (emptyName).
func checkErrors(t *testing.T, errs field.ErrorList, emptyName bool) {
	t.Helper()
	for _, e := range errs {
		if !paramCodes[e.Code] || (e.Field == "" && !emptyName) || e.Message == "" {
			t.Fatalf("error %+v: want a documented code, a field and a message", e)
		}
	}
}

// named reports whether an error is about parameter k.
func named(errs field.ErrorList, k string) bool {
	for _, e := range errs {
		if e.Field == k {
			return true
		}
	}
	return false
}

// checkPlan checks the limits every accepted plan keeps, the SQL of both dialects, and the cursor of a
// plan resuming it where it was issued.
func checkPlan(t *testing.T, plan *listplan.Plan) {
	t.Helper()
	if plan.PageSize < 1 || plan.PageSize > listplan.MaxPageSize || plan.Limit > plan.PageSize || plan.Limit < 0 {
		t.Fatalf("page size %d, limit %d", plan.PageSize, plan.Limit)
	}
	if !plan.CursorMode() && (plan.Page < 1 || plan.Page > listplan.MaxPage || plan.Offset+plan.Limit > listplan.PageWindow) {
		t.Fatalf("page %d offset %d limit %d beyond the page window", plan.Page, plan.Offset, plan.Limit)
	}
	if len(plan.Filter.Conditions()) > listplan.MaxFilters || len(plan.Search) > listplan.MaxSearchTerms || plan.Fingerprint == "" {
		t.Fatalf("%d filters, %d search terms, fingerprint %q", len(plan.Filter.Conditions()), len(plan.Search), plan.Fingerprint)
	}
	for _, fl := range plan.Filter.Conditions() {
		if len(fl.Values) > listplan.MaxInValues {
			t.Fatalf("filter %s %s with %d values", fl.Field.Key, fl.Op, len(fl.Values))
		}
	}
	for _, d := range []sqlgen.Dialect{sqlgen.New(sqlgen.Postgres), sqlgen.New(sqlgen.SQLite)} {
		for _, st := range d.List(plan, "w") {
			for _, fl := range plan.Filter.Conditions() {
				if s, ok := fl.Value.(string); ok && len(s) > 3 && bytes.Contains([]byte(st.SQL), []byte(s)) {
					t.Fatalf("filter value %q reached SQL text: %s", s, st.SQL)
				}
			}
		}
	}
	if plan.CursorMode() {
		pos := listplan.Position{ID: fixedID}
		c := listplan.EncodeCursor(secret, plan, pos)
		got, err := listplan.DecodeCursor(secret, c, plan)
		if err != nil || got.ID != fixedID || got.Key != nil {
			t.Fatalf("cursor of %+v: %+v, %v", pos, got, err)
		}
	}
}

// bodyOf is the POST /query body holding the same parameters as p.
func bodyOf(p listplan.Params) map[string]any {
	b := map[string]any{}
	if p.Page != nil {
		b["page"] = json.Number(strconv.Itoa(*p.Page))
	}
	if p.PageSize != nil {
		b["page_size"] = json.Number(strconv.Itoa(*p.PageSize))
	}
	if p.Cursor != nil {
		b["cursor"] = *p.Cursor
	}
	for k, v := range map[string]string{"sort": p.Sort, "order": p.Order, "search": p.Search, "join": p.Join, "model_id": p.ModelID} {
		if v != "" {
			b[k] = v
		}
	}
	if p.IncludeArchived {
		b["include_archived"] = true
	}
	if p.Filters != nil {
		b["filters"] = p.Filters
	}
	if p.HasFields {
		fields := []any{}
		for _, s := range p.Fields {
			fields = append(fields, s)
		}
		b["fields"] = fields
	}
	return b
}

// diffPlans names the first difference between two plans of the same request, or "".
func diffPlans(a, b *listplan.Plan) string {
	switch {
	case a.Fingerprint != b.Fingerprint:
		return "fingerprint"
	case a.PageSize != b.PageSize || a.Page != b.Page || a.Offset != b.Offset || a.Limit != b.Limit:
		return "page"
	case !slices.Equal(a.Fields, b.Fields) || (a.Fields == nil) != (b.Fields == nil):
		return "fields"
	case !reflect.DeepEqual(a.After, b.After):
		return "position"
	}
	return ""
}
