package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/uptrace/bunrouter"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/admin"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/auth"
)

// The handlers of the workspace half of the admin API (docs/issue-24.md): custom fields, data models, the
// workspace's catalog, members, roles and the audit trail. Each reads its typed input here and runs one
// operation of runtime/admin, which acts inside the caller's workspace only.

func init() {
	handle("admin.custom_fields.list", func(h *Handler) bunrouter.HandlerFunc { return h.listCustomFields })
	handle("admin.custom_fields.create", func(h *Handler) bunrouter.HandlerFunc { return h.createCustomField })
	handle("admin.custom_fields.get", func(h *Handler) bunrouter.HandlerFunc { return h.getCustomField })
	handle("admin.custom_fields.update", func(h *Handler) bunrouter.HandlerFunc { return h.updateCustomField })
	handle("admin.custom_fields.archive", func(h *Handler) bunrouter.HandlerFunc { return h.archiveCustomField(true) })
	handle("admin.custom_fields.restore", func(h *Handler) bunrouter.HandlerFunc { return h.archiveCustomField(false) })
	handle("admin.data_models.list", func(h *Handler) bunrouter.HandlerFunc { return h.listDataModels })
	handle("admin.data_models.create", func(h *Handler) bunrouter.HandlerFunc { return h.createDataModel })
	handle("admin.data_models.get", func(h *Handler) bunrouter.HandlerFunc { return h.getDataModel })
	handle("admin.data_models.update", func(h *Handler) bunrouter.HandlerFunc { return h.updateDataModel })
	handle("admin.resources.list", func(h *Handler) bunrouter.HandlerFunc { return h.listAdminResources })
	handle("admin.resources.get", func(h *Handler) bunrouter.HandlerFunc { return h.getAdminResource })
	handle("admin.members.list", func(h *Handler) bunrouter.HandlerFunc { return h.listMembers })
	handle("admin.members.get", func(h *Handler) bunrouter.HandlerFunc { return h.getMember })
	handle("admin.members.update", func(h *Handler) bunrouter.HandlerFunc { return h.updateMember })
	handle("admin.members.deactivate", func(h *Handler) bunrouter.HandlerFunc { return h.setMemberActive(false) })
	handle("admin.members.activate", func(h *Handler) bunrouter.HandlerFunc { return h.setMemberActive(true) })
	handle("admin.roles.list", func(h *Handler) bunrouter.HandlerFunc { return h.listRoles })
	handle("admin.roles.create", func(h *Handler) bunrouter.HandlerFunc { return h.createRole })
	handle("admin.roles.get", func(h *Handler) bunrouter.HandlerFunc { return h.getRole })
	handle("admin.roles.update", func(h *Handler) bunrouter.HandlerFunc { return h.updateRole })
	handle("admin.audit.list", func(h *Handler) bunrouter.HandlerFunc { return h.adminAudit })
}

// adminActor is who calls an admin route.
func adminActor(req bunrouter.Request) admin.Actor {
	return admin.Actor{Principal: principal(req.Context()), RequestID: requestID(req.Context())}
}

// answerOne answers {"data": v}.
func answerOne(w http.ResponseWriter, status int, v any) {
	writeJSON(w, status, map[string]any{"data": v})
}

// answerWhole answers a list that is never paged: {"data": [...], "meta": {"next_cursor": null}}.
func answerWhole(w http.ResponseWriter, list any) {
	writeJSON(w, 200, map[string]any{"data": list, "meta": map[string]any{"next_cursor": nil}})
}

// adminParams reads the query string, refusing parameters other than known (400).
func adminParams(req bunrouter.Request, known ...string) (url.Values, error) {
	q, err := queryOf(req.Request)
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	for k, v := range q {
		found := false
		for _, n := range known {
			found = found || n == k
		}
		switch {
		case !found:
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "is not a parameter of this endpoint"))
		case len(v) > 1:
			errs = append(errs, field.New(field.CodeDuplicate, field.NewPath(k), "must be given once"))
		}
	}
	if len(errs) > 0 {
		return nil, apierr.Invalid("", errs)
	}
	return q, nil
}

// strictBody reads the members of a JSON object body strictly, as record writes are read: each member of
// the type it must have, required ones present, unknown ones refused (422 validation_failed, every
// problem in details.errors at its path).
type strictBody struct {
	obj    map[string]any
	prefix field.Path
	root   bool
	used   map[string]bool
	errs   *field.ErrorList
}

// readStrictBody reads the request's body: a JSON object (an empty body is {}), strictly decoded (400 when
// malformed, 413 past MaxBody).
func readStrictBody(req bunrouter.Request) (*strictBody, error) {
	data, err := readBody(req.Request)
	if err != nil {
		return nil, err
	}
	obj := map[string]any{}
	if len(bytes.TrimSpace(data)) > 0 {
		if obj, err = DecodeObject(data); err != nil {
			return nil, malformedBody(err)
		}
	}
	return &strictBody{obj: obj, root: true, used: map[string]bool{}, errs: &field.ErrorList{}}, nil
}

func (m *strictBody) path(name string) field.Path {
	if m.root {
		return field.NewPath(name)
	}
	return m.prefix.Child(name)
}

func (m *strictBody) fail(code field.Code, name, message string) {
	*m.errs = append(*m.errs, field.New(code, m.path(name), message))
}

// get returns member name (marked as known) and whether it is present.
func (m *strictBody) get(name string, required bool) (any, bool) {
	m.used[name] = true
	v, ok := m.obj[name]
	if !ok && required {
		m.fail(field.CodeRequired, name, "is required")
	}
	return v, ok
}

// str returns string member name (nil when absent or refused).
func (m *strictBody) str(name string, required bool) *string {
	v, ok := m.get(name, required)
	if !ok {
		return nil
	}
	s, isStr := v.(string)
	if !isStr {
		m.fail(field.CodeType, name, "must be a string")
		return nil
	}
	return &s
}

// boolean returns boolean member name (nil when absent or refused).
func (m *strictBody) boolean(name string) *bool {
	v, ok := m.get(name, false)
	if !ok {
		return nil
	}
	b, isBool := v.(bool)
	if !isBool {
		m.fail(field.CodeType, name, "must be true or false")
		return nil
	}
	return &b
}

// strings returns array member name of strings (nil when absent or refused; an empty array is not nil).
func (m *strictBody) strings(name string) []string {
	v, ok := m.get(name, false)
	if !ok {
		return nil
	}
	items, isList := v.([]any)
	if !isList {
		m.fail(field.CodeType, name, "must be an array of strings")
		return nil
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, isStr := it.(string)
		if !isStr {
			*m.errs = append(*m.errs, field.New(field.CodeType, m.path(name).Index(i), "must be a string"))
			continue
		}
		out = append(out, s)
	}
	return out
}

// object returns object member name as members of its own (nil when absent or refused).
func (m *strictBody) object(name string, required bool) *strictBody {
	v, ok := m.get(name, required)
	if !ok {
		return nil
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		m.fail(field.CodeType, name, "must be an object")
		return nil
	}
	return &strictBody{obj: obj, prefix: m.path(name), used: map[string]bool{}, errs: m.errs}
}

// unknown refuses the members nothing read.
func (m *strictBody) unknown() {
	for k := range m.obj {
		if !m.used[k] {
			m.fail(field.CodeUnknown, k, "is not a member of this body")
		}
	}
}

// done refuses unknown members and returns every problem found (nil: none).
func (m *strictBody) done() error {
	m.unknown()
	if len(*m.errs) > 0 {
		return apierr.Refused(*m.errs)
	}
	return nil
}

// doneWith is done which, when the body's shape has problems, adds those check finds in what was read
// (the operation's own checks) at the paths not already refused, so that every problem is answered at
// once.
func (m *strictBody) doneWith(check func() field.ErrorList) error {
	m.unknown()
	if len(*m.errs) == 0 {
		return nil
	}
	shaped := map[string]bool{}
	for _, e := range *m.errs {
		shaped[e.Field] = true
	}
	for _, e := range check() {
		if !shaped[e.Field] {
			*m.errs = append(*m.errs, e)
		}
	}
	return apierr.Refused(*m.errs)
}

// noBody checks that a body, if any, is {}.
func noBody(req bunrouter.Request) error {
	m, err := readStrictBody(req)
	if err != nil {
		return err
	}
	return m.done()
}

func (h *Handler) listCustomFields(w http.ResponseWriter, req bunrouter.Request) error {
	q, err := adminParams(req, "resource", "archived")
	if err != nil {
		return err
	}
	archived := q.Get("archived") == "true"
	if v := q.Get("archived"); v != "" && v != "true" && v != "false" {
		return apierr.InvalidField(field.CodeType, "archived", "must be true or false")
	}
	list, err := h.admin.CustomFields(req.Context(), adminActor(req), q.Get("resource"), archived)
	if err != nil {
		return err
	}
	answerWhole(w, list)
	return nil
}

func (h *Handler) createCustomField(w http.ResponseWriter, req bunrouter.Request) error {
	m, err := readStrictBody(req)
	if err != nil {
		return err
	}
	var in admin.NewCustomField
	for _, s := range []struct {
		name     string
		dst      *string
		required bool
	}{{"resource", &in.Resource, true}, {"key", &in.Key, true}, {"type", &in.Type, true}, {"label", &in.Label, false}, {"description", &in.Description, false}, {"target", &in.Target, false}} {
		if v := m.str(s.name, s.required); v != nil {
			*s.dst = *v
		}
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"required", &in.Required}, {"unique", &in.Unique}} {
		if v := m.boolean(b.name); v != nil {
			*b.dst = *v
		}
	}
	in.Options = m.strings("options")
	if err := m.doneWith(func() field.ErrorList { return h.admin.CheckCustomField(in) }); err != nil {
		return err
	}
	f, err := h.admin.CreateCustomField(req.Context(), adminActor(req), in)
	if err != nil {
		return err
	}
	answerOne(w, 201, f)
	return nil
}

func (h *Handler) getCustomField(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminParams(req); err != nil {
		return err
	}
	f, err := h.admin.CustomField(req.Context(), adminActor(req), req.Param("id"))
	if err != nil {
		return err
	}
	answerOne(w, 200, f)
	return nil
}

func (h *Handler) updateCustomField(w http.ResponseWriter, req bunrouter.Request) error {
	m, err := readStrictBody(req)
	if err != nil {
		return err
	}
	c := admin.CustomFieldChange{Label: m.str("label", false), Description: m.str("description", false), Required: m.boolean("required"), Options: m.strings("options")}
	if err := m.done(); err != nil {
		return err
	}
	f, err := h.admin.UpdateCustomField(req.Context(), adminActor(req), req.Param("id"), c)
	if err != nil {
		return err
	}
	answerOne(w, 200, f)
	return nil
}

func (h *Handler) archiveCustomField(archived bool) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		if err := noBody(req); err != nil {
			return err
		}
		f, err := h.admin.ArchiveCustomField(req.Context(), adminActor(req), req.Param("id"), archived)
		if err != nil {
			return err
		}
		answerOne(w, 200, f)
		return nil
	}
}

func (h *Handler) listDataModels(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminParams(req); err != nil {
		return err
	}
	list, err := h.admin.DataModels(req.Context(), adminActor(req))
	if err != nil {
		return err
	}
	answerWhole(w, list)
	return nil
}

func (h *Handler) getDataModel(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminParams(req); err != nil {
		return err
	}
	m, err := h.admin.DataModel(req.Context(), adminActor(req), req.Param("id"))
	if err != nil {
		return err
	}
	answerOne(w, 200, m)
	return nil
}

// modelFields reads the fields member of a data model body: field key → {type, label, required,
// options, target}.
func modelFields(m *strictBody, required bool) map[string]auth.ModelField {
	obj := m.object("fields", required)
	if obj == nil {
		return nil
	}
	out := map[string]auth.ModelField{}
	for key := range obj.obj {
		f := obj.object(key, true)
		if f == nil {
			continue
		}
		var mf auth.ModelField
		if s := f.str("type", true); s != nil {
			mf.Type = *s
		}
		if s := f.str("label", false); s != nil {
			mf.Label = *s
		}
		if s := f.str("target", false); s != nil {
			mf.Target = *s
		}
		if b := f.boolean("required"); b != nil {
			mf.Required = *b
		}
		mf.Options = f.strings("options")
		f.unknown()
		out[key] = mf
	}
	return out
}

func (h *Handler) createDataModel(w http.ResponseWriter, req bunrouter.Request) error {
	m, err := readStrictBody(req)
	if err != nil {
		return err
	}
	name := m.str("name", true)
	fields := modelFields(m, true)
	if err := m.doneWith(func() field.ErrorList { return h.admin.CheckDataModelFields(fields) }); err != nil {
		return err
	}
	dm, err := h.admin.CreateDataModel(req.Context(), adminActor(req), *name, fields)
	if err != nil {
		return err
	}
	answerOne(w, 201, dm)
	return nil
}

func (h *Handler) updateDataModel(w http.ResponseWriter, req bunrouter.Request) error {
	m, err := readStrictBody(req)
	if err != nil {
		return err
	}
	name := m.str("name", false)
	fields := modelFields(m, false)
	if name != nil && *name == "" {
		m.fail(field.CodeTooShort, "name", "must not be empty")
	}
	if err := m.doneWith(func() field.ErrorList { return h.admin.CheckDataModelFields(fields) }); err != nil {
		return err
	}
	var newName string
	if name != nil {
		newName = *name
	}
	dm, err := h.admin.UpdateDataModel(req.Context(), adminActor(req), req.Param("id"), newName, fields)
	if err != nil {
		return err
	}
	answerOne(w, 200, dm)
	return nil
}

func (h *Handler) listAdminResources(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminParams(req); err != nil {
		return err
	}
	list, err := h.admin.Resources(req.Context(), adminActor(req))
	if err != nil {
		return err
	}
	answerWhole(w, list)
	return nil
}

func (h *Handler) getAdminResource(w http.ResponseWriter, req bunrouter.Request) error {
	q, err := adminParams(req, "model_id")
	if err != nil {
		return err
	}
	doc, err := h.admin.ResourceCatalog(req.Context(), adminActor(req), req.Param("resource"), q.Get("model_id"))
	if err != nil {
		return err
	}
	answerOne(w, 200, doc)
	return nil
}

func (h *Handler) listMembers(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminParams(req); err != nil {
		return err
	}
	list, err := h.admin.Members(req.Context(), adminActor(req))
	if err != nil {
		return err
	}
	answerWhole(w, list)
	return nil
}

func (h *Handler) getMember(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminParams(req); err != nil {
		return err
	}
	m, err := h.admin.Member(req.Context(), adminActor(req), req.Param("id"))
	if err != nil {
		return err
	}
	answerOne(w, 200, m)
	return nil
}

func (h *Handler) updateMember(w http.ResponseWriter, req bunrouter.Request) error {
	m, err := readStrictBody(req)
	if err != nil {
		return err
	}
	role := m.str("role", true)
	if err := m.done(); err != nil {
		return err
	}
	member, err := h.admin.SetMemberRole(req.Context(), adminActor(req), req.Param("id"), *role)
	if err != nil {
		return err
	}
	answerOne(w, 200, member)
	return nil
}

func (h *Handler) setMemberActive(active bool) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		if err := noBody(req); err != nil {
			return err
		}
		m, err := h.admin.SetMemberActive(req.Context(), adminActor(req), req.Param("id"), active)
		if err != nil {
			return err
		}
		answerOne(w, 200, m)
		return nil
	}
}

func (h *Handler) listRoles(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminParams(req); err != nil {
		return err
	}
	list, err := h.admin.Roles(req.Context(), adminActor(req))
	if err != nil {
		return err
	}
	answerWhole(w, list)
	return nil
}

func (h *Handler) getRole(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminParams(req); err != nil {
		return err
	}
	r, err := h.admin.Role(req.Context(), adminActor(req), req.Param("name"))
	if err != nil {
		return err
	}
	answerOne(w, 200, r)
	return nil
}

// roleDefinition is a role body without its name: the members of a roles.yaml entry, which the role
// checks refuse by path when unknown or malformed.
func roleDefinition(m *strictBody) map[string]any {
	def := map[string]any{}
	for k, v := range m.obj {
		if k != "name" {
			def[k] = v
			m.used[k] = true
		}
	}
	return def
}

func (h *Handler) createRole(w http.ResponseWriter, req bunrouter.Request) error {
	m, err := readStrictBody(req)
	if err != nil {
		return err
	}
	name := m.str("name", true)
	def := roleDefinition(m)
	if err := m.done(); err != nil {
		return err
	}
	data, err := json.Marshal(def)
	if err != nil {
		return apierr.Invalid("The role could not be read: "+err.Error()+".", nil)
	}
	r, err := h.admin.CreateRole(req.Context(), adminActor(req), *name, data)
	if err != nil {
		return err
	}
	answerOne(w, 201, r)
	return nil
}

func (h *Handler) updateRole(w http.ResponseWriter, req bunrouter.Request) error {
	m, err := readStrictBody(req)
	if err != nil {
		return err
	}
	if _, ok := m.obj["name"]; ok {
		m.fail(field.CodeReadOnly, "name", "a role keeps its name; create another role instead")
	}
	def := roleDefinition(m)
	if err := m.done(); err != nil {
		return err
	}
	r, err := h.admin.UpdateRole(req.Context(), adminActor(req), req.Param("name"), def)
	if err != nil {
		return err
	}
	answerOne(w, 200, r)
	return nil
}

func (h *Handler) adminAudit(w http.ResponseWriter, req bunrouter.Request) error {
	q, err := adminParams(req, "resource", "record_id", "since", "limit", "cursor")
	if err != nil {
		return err
	}
	aq := audit.Query{Resource: q.Get("resource"), RecordID: q.Get("record_id"), Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		if aq.Limit, err = strconv.Atoi(v); err != nil || aq.Limit < 1 || aq.Limit > audit.MaxPage {
			return apierr.InvalidField(field.CodeRange, "limit", "must be an integer between 1 and "+strconv.Itoa(audit.MaxPage))
		}
	}
	if v := q.Get("since"); v != "" {
		if aq.Since, err = admin.ParseSince(v, time.Now()); err != nil {
			return err
		}
	}
	page, err := h.admin.Audit(req.Context(), adminActor(req), aq)
	if err != nil {
		return err
	}
	writeJSON(w, 200, map[string]any{"data": page.Entries, "meta": map[string]any{"next_cursor": page.NextCursor}})
	return nil
}
