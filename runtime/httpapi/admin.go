package httpapi

import (
	"bytes"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/runtime/admin"
)

// adminHandlers binds every admin route's operation (route.AdminOp, Endpoint Admin) to its handler: the
// one place the two meet, keyed by the route table's constants, so that a misspelt or removed operation
// fails to compile and a key given twice too. TestAdminHandlers fails for a route without a handler here,
// or a handler without a route; a route without one makes routes panic.
func (h *Handler) adminHandlers() map[route.AdminOp]bunrouter.HandlerFunc {
	return map[route.AdminOp]bunrouter.HandlerFunc{
		// The workspace (admin_workspace.go).
		route.AdminCustomFieldsList:    h.listCustomFields,
		route.AdminCustomFieldsCreate:  h.createCustomField,
		route.AdminCustomFieldsGet:     h.getCustomField,
		route.AdminCustomFieldsUpdate:  h.updateCustomField,
		route.AdminCustomFieldsArchive: h.archiveCustomField(true),
		route.AdminCustomFieldsRestore: h.archiveCustomField(false),
		route.AdminDataModelsList:      h.listDataModels,
		route.AdminDataModelsCreate:    h.createDataModel,
		route.AdminDataModelsGet:       h.getDataModel,
		route.AdminDataModelsUpdate:    h.updateDataModel,
		route.AdminResourcesList:       h.listAdminResources,
		route.AdminResourcesGet:        h.getAdminResource,
		route.AdminMembersList:         h.listMembers,
		route.AdminMembersGet:          h.getMember,
		route.AdminMembersUpdate:       h.updateMember,
		route.AdminMembersDeactivate:   h.setMemberActive(false),
		route.AdminMembersActivate:     h.setMemberActive(true),
		route.AdminRolesList:           h.listRoles,
		route.AdminRolesCreate:         h.createRole,
		route.AdminRolesGet:            h.getRole,
		route.AdminRolesUpdate:         h.updateRole,
		route.AdminAuditList:           h.adminAudit,
		route.AdminJobsList:            h.listJobs,
		route.AdminJobsGet:             h.getJob,
		route.AdminJobsCancel:          h.changeJob(true),
		route.AdminJobsDownload:        h.downloadJob,
		// Keys, usage and webhooks (admin_keys.go).
		route.AdminKeysList:             h.listKeys,
		route.AdminKeysGet:              h.getKey,
		route.AdminKeysRevoke:           h.revokeKey,
		route.AdminUsage:                h.adminUsage,
		route.AdminWebhooksList:         h.listWebhooks,
		route.AdminWebhooksCreate:       h.createWebhook,
		route.AdminWebhooksGet:          h.getWebhook,
		route.AdminWebhooksUpdate:       h.updateWebhook,
		route.AdminWebhooksDelete:       h.deleteWebhook,
		route.AdminWebhooksRotateSecret: h.rotateWebhookSecret,
		route.AdminWebhooksDeliveries:   h.webhookDeliveries,
		route.AdminWebhooksReplay:       h.replayWebhook,
		// One's own keys (ownkeys.go).
		route.OwnKeysList:   h.ownKeys,
		route.OwnKeysCreate: h.createOwnKey,
		route.OwnKeysRoll:   h.rollOwnKey,
		route.OwnKeysRevoke: h.revokeOwnKey,
	}
}

// The request and answer helpers of the admin routes and one's own keys.

// adminActor is who calls an admin route.
func adminActor(req bunrouter.Request) admin.Actor {
	return admin.Actor{Principal: principal(req.Context()), RequestID: requestID(req.Context())}
}

// answerOne answers {"data": v}.
func answerOne(w http.ResponseWriter, status int, v any) {
	writeJSON(w, status, map[string]any{"data": v})
}

// answer writes {"data": v} with status, or returns err.
func answer(w http.ResponseWriter, status int, v any, err error) error {
	if err != nil {
		return err
	}
	answerOne(w, status, v)
	return nil
}

// listAnswer is a list's answer: the whole list, or a page continued by next.
func listAnswer[T any](items []T, next *string) map[string]any {
	if items == nil {
		items = []T{}
	}
	return map[string]any{"data": items, "meta": map[string]any{"next_cursor": next}}
}

// answerWhole answers a list that is never paged: {"data": [...], "meta": {"next_cursor": null}}.
func answerWhole[T any](w http.ResponseWriter, list []T) { writeJSON(w, 200, listAnswer(list, nil)) }

// adminQuery reads the query string of an admin route: each of the allowed parameters at most once, no
// other (400, every problem at once).
func adminQuery(req bunrouter.Request, allowed ...string) (url.Values, error) {
	q, err := queryOf(req.Request)
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch {
		case !slices.Contains(allowed, name):
			msg := "is not a parameter of this route"
			if len(allowed) > 0 {
				msg += "; it takes " + strings.Join(allowed, ", ")
			}
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(name), msg))
		case len(q[name]) > 1:
			errs = append(errs, field.New(field.CodeDuplicate, field.NewPath(name), "must be given once"))
		}
	}
	if errs != nil {
		return nil, apierr.Invalid("", errs)
	}
	return q, nil
}

// readObject reads a JSON object body strictly (readBody, DecodeObject: 400 when malformed, 413 past
// MaxBody). Without required, an empty body is the empty object; with it, 400.
func readObject(req bunrouter.Request, required bool) (map[string]any, error) {
	data, err := readBody(req.Request)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if required {
			return nil, apierr.New(apierr.InvalidRequest, "The request needs a JSON object body.")
		}
		return map[string]any{}, nil
	}
	obj, err := DecodeObject(data)
	if err != nil {
		return nil, malformedBody(err)
	}
	return obj, nil
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
	obj, err := readObject(req, false)
	if err != nil {
		return nil, err
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
