package catalog

import (
	"fmt"
	"sort"

	"github.com/workspace-records/records/engine/route"
)

// customFieldTypes are the types of custom fields (runtime/customfields.Types), for the documents.
var customFieldTypes = []string{"text", "long_text", "integer", "decimal", "boolean", "date", "datetime", "select", "multi_select", "email", "url", "phone", "reference"}

// workspaceAdminOperations adds the operations of its admin routes to ops, by admin operation (docs/issue-24.md).
func (d *doc) workspaceAdminOperations(ops map[route.AdminOp]map[string]any) {
	schemas := d.comps["schemas"].(map[string]any)
	for name, s := range workspaceAdminSchemas() {
		schemas[name] = s
	}
	const (
		cfTag, modelTag, catTag, memberTag, roleTag, auditTag = "admin-custom-fields", "admin-data-models", "admin-catalog", "admin-members", "admin-roles", "admin-audit"
	)
	read := []string{"400", "401", "403", "429", "500", "503"}
	readOne := []string{"400", "401", "403", "404", "429", "500", "503"}
	create := []string{"400", "401", "403", "409", "413", "422", "429", "500", "503"}
	change := []string{"400", "401", "403", "404", "409", "413", "422", "429", "500", "503"}
	op := func(id, tag, summary, desc string, params []any, body map[string]any, success string, resp map[string]any, statuses []string) map[string]any {
		o := map[string]any{"operationId": id, "tags": []string{tag}, "summary": summary, "description": desc + adminNote}
		if len(params) > 0 {
			o["parameters"] = params
		}
		if body != nil {
			o["requestBody"] = body
		}
		return withResponses(o, success, resp, statuses...)
	}
	cfID := []any{wsPathParam("id", "The custom field's id.", map[string]any{"type": "string", "format": "uuid"})}
	modelID := []any{wsPathParam("id", "The data model's id.", map[string]any{"type": "string", "format": "uuid"})}
	memberID := []any{wsPathParam("id", "The member's id.", map[string]any{"type": "string", "format": "uuid"})}
	roleName := []any{wsPathParam("name", "The role's name.", map[string]any{"type": "string"})}

	ops[route.AdminCustomFieldsList] = op("adminListCustomFields", cfTag, "Custom fields",
		"The workspace's custom fields, every resource's (or `resource`'s), active ones unless `archived=true`. Never paged.",
		[]any{wsQueryParam("resource", "Only the custom fields of this resource.", schemaRef("ResourceName")),
			wsQueryParam("archived", "`true`: the archived custom fields instead of the active ones.", map[string]any{"type": "string", "enum": []string{"true", "false"}})},
		nil, "200", wsList("The custom fields.", schemaRef("AdminCustomField")), readOne)
	ops[route.AdminCustomFieldsCreate] = op("adminCreateCustomField", cfTag, "Create a custom field",
		"Adds a custom field to a resource, with the checks of `recordsctl field create`: every problem is in `details.errors` by member (422); a key the resource already has is 409. "+
			"The field is in the resource's catalog and writable as `cf__<key>` at once on this server and within about a second on every other. Audited as `admin.custom_fields` `create`.",
		nil, wsBody("The custom field.", schemaRef("AdminCustomFieldCreate")), "201", wsOne("The custom field created.", schemaRef("AdminCustomField")), create)
	ops[route.AdminCustomFieldsGet] = op("adminGetCustomField", cfTag, "A custom field", "One custom field, archived or not.",
		cfID, nil, "200", wsOne("The custom field.", schemaRef("AdminCustomField")), readOne)
	ops[route.AdminCustomFieldsUpdate] = op("adminUpdateCustomField", cfTag, "Change a custom field",
		"Changes the label, description, required flag or options (select and multi-select only) of a custom field; absent members are kept. Audited as `update` with the values replaced.",
		cfID, wsBody("The members to change.", schemaRef("AdminCustomFieldUpdate")), "200", wsOne("The custom field as changed.", schemaRef("AdminCustomField")), change)
	ops[route.AdminCustomFieldsArchive] = op("adminArchiveCustomField", cfTag, "Archive a custom field",
		"Hides a custom field from records, catalogs and lists; its values are kept and come back on restore. No body (or `{}`). Audited as `archive`.",
		cfID, nil, "200", wsOne("The custom field, archived.", schemaRef("AdminCustomField")), change)
	ops[route.AdminCustomFieldsRestore] = op("adminRestoreCustomField", cfTag, "Restore a custom field",
		"Brings an archived custom field back with its values. No body (or `{}`). Audited as `restore`.",
		cfID, nil, "200", wsOne("The custom field, restored.", schemaRef("AdminCustomField")), change)

	ops[route.AdminDataModelsList] = op("adminListDataModels", modelTag, "Data models", "The workspace's data models, by name. Never paged.",
		nil, nil, "200", wsList("The data models.", schemaRef("AdminDataModel")), read)
	ops[route.AdminDataModelsCreate] = op("adminCreateDataModel", modelTag, "Create a data model",
		"Creates a data model with the checks of `recordsctl model create` (422 by member); a name the workspace uses is 409. Audited as `admin.data_models` `create`.",
		nil, wsBody("The data model.", schemaRef("AdminDataModelCreate")), "201", wsOne("The data model created.", schemaRef("AdminDataModel")), create)
	ops[route.AdminDataModelsGet] = op("adminGetDataModel", modelTag, "A data model", "One data model with its fields.",
		modelID, nil, "200", wsOne("The data model.", schemaRef("AdminDataModel")), readOne)
	ops[route.AdminDataModelsUpdate] = op("adminUpdateDataModel", modelTag, "Change a data model",
		"Renames a data model and/or replaces its fields (absent members are kept). Values of removed fields stay stored and come back with a field of the same key. Audited as `update`.",
		modelID, wsBody("The members to change.", schemaRef("AdminDataModelUpdate")), "200", wsOne("The data model as changed.", schemaRef("AdminDataModel")), change)

	ops[route.AdminResourcesList] = op("adminListResources", catTag, "The workspace's resources",
		"Every resource with its label and operations, and how many custom fields the workspace gave it. Never paged.",
		nil, nil, "200", wsList("The resources.", schemaRef("AdminResource")), read)
	ops[route.AdminResourcesGet] = op("adminGetResourceCatalog", catTag, "A resource's field catalog as defined",
		"The field catalog of a resource as `GET /v1/resources/{resource}` gives it — built-in and custom fields, each custom field with its write key `cf__<key>` and filter key `cfv:<id>` — "+
			"as the workspace defines it: no role's access or field masks apply.",
		[]any{wsPathParam("resource", "The resource.", schemaRef("ResourceName")),
			wsQueryParam("model_id", "The data model, for `data_model_records`.", map[string]any{"type": "string", "format": "uuid"})},
		nil, "200", wsOne("The field catalog.", schemaRef("FieldCatalog")), readOne)

	ops[route.AdminMembersList] = op("adminListMembers", memberTag, "Members", "The workspace's members, by email. Never paged.",
		nil, nil, "200", wsList("The members.", schemaRef("AdminMember")), read)
	ops[route.AdminMembersGet] = op("adminGetMember", memberTag, "A member", "One member.",
		memberID, nil, "200", wsOne("The member.", schemaRef("AdminMember")), readOne)
	ops[route.AdminMembersUpdate] = op("adminUpdateMember", memberTag, "Change a member's role",
		"Gives the member a built-in or workspace role. A role granting anything your own role lacks (a permission, more access to a resource, a broader record rule, a field your role masks or hides) is 403 `permission_denied`; "+
			"taking `api.manage` from the last active member holding it is 409. Audited as `admin.members` `update`.",
		memberID, wsBody("The new role.", schemaRef("AdminMemberUpdate")), "200", wsOne("The member as changed.", schemaRef("AdminMember")), change)
	ops[route.AdminMembersDeactivate] = op("adminDeactivateMember", memberTag, "Deactivate a member",
		"Deactivates the member, revokes every key they own and ends their console sessions, for good. The last active member holding `api.manage` cannot be deactivated (409). No body (or `{}`). Audited as `deactivate`.",
		memberID, nil, "200", wsOne("The member, inactive.", schemaRef("AdminMember")), change)
	ops[route.AdminMembersActivate] = op("adminActivateMember", memberTag, "Activate a member",
		"Activates the member again; their revoked keys stay revoked and their console sessions ended (they sign in again). No body (or `{}`). Audited as `activate`.",
		memberID, nil, "200", wsOne("The member, active.", schemaRef("AdminMember")), change)

	ops[route.AdminRolesList] = op("adminListRoles", roleTag, "Roles", "The built-in roles (definitions/roles.yaml), then the workspace's, by name. Never paged.",
		nil, nil, "200", wsList("The roles.", schemaRef("AdminRole")), read)
	ops[route.AdminRolesCreate] = op("adminCreateRole", roleTag, "Create a role",
		"Creates a workspace role: `name` and the members of a roles.yaml entry, checked as `recordsctl role create` checks them (422 by member). "+
			"A role granting anything your own role lacks is 403 `permission_denied`; a name taken (built-in or the workspace's) is 422 or 409. Audited as `admin.roles` `create`, record id a UUID derived from the workspace and the name.",
		nil, wsBody("The role.", schemaRef("AdminRoleCreate")), "201", wsOne("The role created.", schemaRef("AdminRole")), create)
	ops[route.AdminRolesGet] = op("adminGetRole", roleTag, "A role", "One role, built-in or the workspace's.",
		roleName, nil, "200", wsOne("The role.", schemaRef("AdminRole")), readOne)
	ops[route.AdminRolesUpdate] = op("adminUpdateRole", roleTag, "Change a role",
		"Replaces the members given of a workspace role (absent ones are kept), checked as on create. Built-in roles do not change (409); "+
			"a change granting anything your own role lacks is 403; taking `api.manage` from the last active members holding it is 409. Audited as `update`. Members' keys see the change on their next request.",
		roleName, wsBody("The members to change.", schemaRef("AdminRoleUpdate")), "200", wsOne("The role as changed.", schemaRef("AdminRole")), change)

	ops[route.AdminAuditList] = op("adminListAudit", auditTag, "Audit trail",
		"The workspace's audit trail, newest first, with the filters of `recordsctl audit list`, as your role sees it: entries of resources and records your role cannot read are left out, "+
			"masked fields are masked and hidden ones left out and named in `withheld`, as is a link's association when your role does not see the other record (its resource unreadable, or the record outside your record rule); the admin API's own entries (`admin.custom_fields`, `admin.data_models`, `admin.members`, `admin.roles`, `admin.api_keys`, `admin.webhook_endpoints`) are shown to roles holding `api.manage`.",
		[]any{wsQueryParam("resource", "Only entries of this resource (a resource name or an `admin.*` name).", map[string]any{"type": "string"}),
			wsQueryParam("record_id", "Only entries of this record (or admin object).", map[string]any{"type": "string", "format": "uuid"}),
			wsQueryParam("since", "Only entries from this time on: an RFC 3339 time or a duration ago (`90m`, `24h`, `7d`).", map[string]any{"type": "string"}),
			wsQueryParam("limit", fmt.Sprintf("Entries per page, 1 to %d (default %d).", 1000, 50), map[string]any{"type": "integer", "minimum": 1, "maximum": 1000}),
			wsQueryParam("cursor", "`meta.next_cursor` of the previous page of the same query.", map[string]any{"type": "string"})},
		nil, "200", wsList("A page of the audit trail.", schemaRef("AdminAuditEntry")), read)
}

// adminNote ends the description of every admin operation.
const adminNote = "\n\nNeeds an admin key (`access: admin`; a data key is 403 `insufficient_scope`) whose owner's role holds `api.manage` (else 403 `permission_denied`). " +
	"Acts in the key's workspace only: another workspace's ids are 404."

func wsPathParam(name, desc string, schema map[string]any) map[string]any {
	return map[string]any{"name": name, "in": "path", "required": true, "description": desc, "schema": schema}
}

func wsQueryParam(name, desc string, schema map[string]any) map[string]any {
	return map[string]any{"name": name, "in": "query", "description": desc, "schema": schema}
}

func wsBody(desc string, schema map[string]any) map[string]any {
	return map[string]any{"required": true, "description": desc, "content": jsonContent(schema)}
}

// wsOne is an answer of one admin object: {"data": {...}}.
func wsOne(desc string, s any) map[string]any { return ok(desc, s) }

// wsList is an answer of a list never paged: {"data": [...], "meta": {"next_cursor": null}}.
func wsList(desc string, item any) map[string]any {
	return map[string]any{"description": desc, "headers": headerRefs(append([]string{"X-Request-Id"}, usageHeaders...)...),
		"content": jsonContent(map[string]any{"type": "object", "required": []string{"data", "meta"}, "additionalProperties": false,
			"properties": map[string]any{"data": map[string]any{"type": "array", "items": item}, "meta": schemaRef("AdminListMeta")}})}
}

func workspaceAdminSchemas() map[string]any {
	strList := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	ts := func(desc string) map[string]any {
		return map[string]any{"type": "string", "format": "date-time", "description": desc}
	}
	nullable := func(t, desc string) map[string]any {
		return map[string]any{"type": []string{t, "null"}, "description": desc}
	}
	obj := func(desc string, required []string, props map[string]any) map[string]any {
		out := map[string]any{"type": "object", "additionalProperties": false, "description": desc, "properties": props}
		if len(required) > 0 {
			sort.Strings(required)
			out["required"] = required
		}
		return out
	}
	cfType := map[string]any{"type": "string", "enum": customFieldTypes, "description": "The field's type."}
	modelField := obj("One field of a data model.", []string{"type"}, map[string]any{
		"type":     str("The field's type (a type of the definitions format: string, text, integer, decimal, boolean, date, datetime, email, url, phone, reference, …)."),
		"label":    str("Its label."),
		"required": map[string]any{"type": "boolean", "description": "Must be given on create."},
		"options":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The options of a select."},
		"target":   str("The target resource of a reference."),
	})
	roleProps := func(withName bool) map[string]any {
		p := map[string]any{
			"label":        map[string]any{"type": "string", "minLength": 1, "maxLength": 100, "description": "Display name."},
			"description":  map[string]any{"type": "string", "maxLength": 1000, "description": "What the role is for."},
			"permissions":  map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"api.access", "api.manage"}}, "description": "`api.access` (use keys), `api.manage` (administer)."},
			"resources":    map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string", "enum": []string{"none", "read", "write"}}, "description": "Access by resource; `*` is the default."},
			"record_rules": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string", "enum": []string{"all", "owned", "department"}}, "description": "Which records by resource; `*` is the default."},
			"field_rules": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string", "enum": []string{"masked", "hidden"}}},
				"description": "Masked or hidden fields by resource."},
		}
		if withName {
			p["name"] = map[string]any{"type": "string", "pattern": "^[a-z][a-z0-9_]{0,62}$", "description": "The role's name (not a built-in role's)."}
		}
		return p
	}
	return map[string]any{
		"AdminListMeta": obj("About the list.", []string{"next_cursor"}, map[string]any{
			"next_cursor": map[string]any{"type": []string{"string", "null"}, "description": "Send verbatim as `cursor` for the next page; null when the list is complete (lists that are never paged: always null)."}}),
		"AdminCustomField": obj("A custom field of the workspace.", []string{"id", "resource", "key", "write_key", "filter_key", "type", "label", "description", "required", "unique", "options", "target", "archived"}, map[string]any{
			"id":          map[string]any{"type": "string", "format": "uuid", "description": "The field's id."},
			"resource":    schemaRef("ResourceName"),
			"key":         str("The field's key."),
			"write_key":   str("The member records are written with: `cf__<key>`."),
			"filter_key":  str("The key filters and sorts use: `cfv:<id>`."),
			"type":        cfType,
			"label":       str("Display name."),
			"description": str("What the field holds."),
			"required":    map[string]any{"type": "boolean", "description": "Must be given on create."},
			"unique":      map[string]any{"type": "boolean", "description": "At most one active record of the workspace holds each value."},
			"options":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The options of a select or multi-select (else empty)."},
			"target":      nullable("string", "The target resource of a reference (else null)."),
			"archived":    map[string]any{"type": "boolean", "description": "Archived: hidden, values kept."},
		}),
		"AdminCustomFieldCreate": obj("A custom field to create (the members of `recordsctl field create`).", []string{"resource", "key", "type"}, map[string]any{
			"resource":    str("The resource (one that takes writes)."),
			"key":         str("The key: lowercase snake_case, at most 63 characters; written as `cf__<key>`."),
			"type":        str("`text`, `long_text`, `integer`, `decimal`, `boolean`, `date`, `datetime`, `select`, `multi_select`, `email`, `url`, `phone` or `reference`."),
			"label":       str("Display name (at most 100 characters; default: the key with spaces)."),
			"description": str("What the field holds (at most 1000 characters)."),
			"required":    map[string]any{"type": "boolean", "description": "Must be given on create."},
			"unique":      map[string]any{"type": "boolean", "description": "A unique key (text, select, email, phone, integer, decimal, date, datetime, reference)."},
			"options":     strList,
			"target":      str("The target resource of a reference."),
		}),
		"AdminCustomFieldUpdate": obj("The members of a custom field to change.", nil, map[string]any{
			"label":       str("Display name."),
			"description": str("What the field holds."),
			"required":    map[string]any{"type": "boolean", "description": "Must be given on create."},
			"options":     strList,
		}),
		"AdminDataModel": obj("A data model of the workspace.", []string{"id", "workspace_id", "name", "fields", "created_at", "updated_at"}, map[string]any{
			"id":           map[string]any{"type": "string", "format": "uuid", "description": "The model's id (`model_id` of its records)."},
			"workspace_id": map[string]any{"type": "string", "format": "uuid", "description": "The workspace."},
			"name":         str("The model's name."),
			"fields":       map[string]any{"type": "object", "additionalProperties": modelField, "description": "Its fields by key."},
			"created_at":   ts("Created."),
			"updated_at":   ts("Last changed."),
		}),
		"AdminDataModelCreate": obj("A data model to create.", []string{"name", "fields"}, map[string]any{
			"name":   map[string]any{"type": "string", "minLength": 1, "maxLength": 200, "description": "Its name, unique in the workspace."},
			"fields": map[string]any{"type": "object", "additionalProperties": modelField, "description": "Its fields by key."},
		}),
		"AdminDataModelUpdate": obj("The members of a data model to change.", nil, map[string]any{
			"name":   map[string]any{"type": "string", "minLength": 1, "maxLength": 200, "description": "A new name."},
			"fields": map[string]any{"type": "object", "additionalProperties": modelField, "description": "Its fields by key, replacing them all."},
		}),
		"AdminResource": map[string]any{"allOf": []any{schemaRef("ResourceSummary"), map[string]any{"type": "object", "required": []string{"custom_fields", "archived_custom_fields"},
			"properties": map[string]any{
				"custom_fields":          map[string]any{"type": "integer", "minimum": 0, "description": "How many active custom fields the workspace gave it."},
				"archived_custom_fields": map[string]any{"type": "integer", "minimum": 0, "description": "How many archived ones."},
			}}}, "description": "A resource of the workspace."},
		"AdminMember": obj("A member of the workspace.", []string{"id", "workspace_id", "email", "role", "department_id", "active", "mfa_verified_at", "created_at", "updated_at"}, map[string]any{
			"id":              map[string]any{"type": "string", "format": "uuid", "description": "The member's id."},
			"workspace_id":    map[string]any{"type": "string", "format": "uuid", "description": "The workspace."},
			"email":           str("Sign-in email."),
			"role":            str("Their role's name."),
			"department_id":   map[string]any{"type": []string{"string", "null"}, "format": "uuid", "description": "Their department (an `entity_departments` record), or null."},
			"active":          map[string]any{"type": "boolean", "description": "Inactive members' keys are revoked."},
			"mfa_verified_at": map[string]any{"type": []string{"string", "null"}, "format": "date-time", "description": "When their MFA factor was last verified."},
			"created_at":      ts("Joined."),
			"updated_at":      ts("Last changed."),
		}),
		"AdminMemberUpdate": obj("A member's new role.", []string{"role"}, map[string]any{"role": str("A built-in role or one of the workspace's.")}),
		"AdminRole": obj("A role: built-in (definitions/roles.yaml) or the workspace's.", []string{"id", "name", "label", "description", "builtin", "permissions", "resources", "record_rules", "field_rules"}, func() map[string]any {
			p := roleProps(true)
			p["id"] = map[string]any{"type": "string", "format": "uuid", "description": "The role's id in the audit trail (derived from the workspace and the name)."}
			p["builtin"] = map[string]any{"type": "boolean", "description": "A built-in role (does not change)."}
			p["name"] = str("The role's name.")
			return p
		}()),
		"AdminRoleCreate": obj("A workspace role to create: its name and a roles.yaml entry.", []string{"name", "label", "permissions", "resources"}, roleProps(true)),
		"AdminRoleUpdate": obj("The members of a workspace role to replace.", nil, roleProps(false)),
		"AdminAuditEntry": obj("One write of the audit trail as the caller may see it.", []string{"id", "resource", "record_id", "action", "member_id", "key_id", "request_id", "changes", "previous", "created_at"}, map[string]any{
			"id":         map[string]any{"type": "string", "format": "uuid", "description": "The entry's id."},
			"resource":   str("The resource written, or `admin.*` for the admin API's writes."),
			"record_id":  map[string]any{"type": "string", "format": "uuid", "description": "The record (or admin object) written."},
			"action":     str("`create`, `update`, `archive`, `restore`, `link`, `unlink`, `import`; for admin writes also `deactivate`, `activate`, `revoke`, `roll`, `delete`, `rotate_secret`, `replay`."),
			"member_id":  map[string]any{"type": []string{"string", "null"}, "format": "uuid", "description": "Who wrote (null on the operator's path)."},
			"key_id":     map[string]any{"type": []string{"string", "null"}, "format": "uuid", "description": "With which key (null on the operator's path)."},
			"request_id": nullable("string", "The request's `X-Request-Id` (null on the operator's path)."),
			"changes":    map[string]any{"type": "object", "additionalProperties": true, "description": "The values written, by key."},
			"previous":   map[string]any{"type": []string{"object", "null"}, "additionalProperties": true, "description": "For an update, the values replaced; otherwise null."},
			"withheld":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Present when something was left out: fields your role hides; for `link` and `unlink`, the association, left out (with the other record's id) when your role does not see the other record (its resource unreadable, or the record outside your record rule)."},
			"created_at": ts("When the write happened."),
		}),
	}
}
