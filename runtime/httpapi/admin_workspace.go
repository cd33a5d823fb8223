package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/uptrace/bunrouter"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/admin"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/customfields"
)

// The handlers of the workspace half of the admin API (docs/issue-24.md): custom fields, data models, the
// workspace's catalog, members, roles and the audit trail. Each reads its typed input here and runs one
// operation of runtime/admin, which acts inside the caller's workspace only. Handler.adminHandlers binds them
// to their routes.

func (h *Handler) listCustomFields(w http.ResponseWriter, req bunrouter.Request) error {
	q, err := adminQuery(req, "resource", "archived")
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
	if _, err := adminQuery(req); err != nil {
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
	if _, err := adminQuery(req); err != nil {
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
	if _, err := adminQuery(req); err != nil {
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
func modelFields(m *strictBody, required bool) map[string]customfields.ModelField {
	obj := m.object("fields", required)
	if obj == nil {
		return nil
	}
	out := map[string]customfields.ModelField{}
	for key := range obj.obj {
		f := obj.object(key, true)
		if f == nil {
			continue
		}
		var mf customfields.ModelField
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
	if _, err := adminQuery(req); err != nil {
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
	q, err := adminQuery(req, "model_id")
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
	if _, err := adminQuery(req); err != nil {
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
	if _, err := adminQuery(req); err != nil {
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
	if _, err := adminQuery(req); err != nil {
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
	if _, err := adminQuery(req); err != nil {
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
	q, err := adminQuery(req, "resource", "record_id", "since", "limit", "cursor")
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
