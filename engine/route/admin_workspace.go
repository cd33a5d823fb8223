package route

// workspaceAdminRoutes: custom fields, data models, the workspace's catalog, members, roles and the
// audit trail (docs/issue-24.md).
var workspaceAdminRoutes = []Route{
	workspaceAdmin("GET", "/v1/admin/custom-fields", AdminCustomFieldsList, "admin.custom_fields.list"),
	workspaceAdmin("POST", "/v1/admin/custom-fields", AdminCustomFieldsCreate, "admin.custom_fields.create"),
	workspaceAdmin("GET", "/v1/admin/custom-fields/:id", AdminCustomFieldsGet, "admin.custom_fields.get"),
	workspaceAdmin("PATCH", "/v1/admin/custom-fields/:id", AdminCustomFieldsUpdate, "admin.custom_fields.update"),
	workspaceAdmin("POST", "/v1/admin/custom-fields/:id/archive", AdminCustomFieldsArchive, "admin.custom_fields.archive"),
	workspaceAdmin("POST", "/v1/admin/custom-fields/:id/restore", AdminCustomFieldsRestore, "admin.custom_fields.restore"),
	workspaceAdmin("GET", "/v1/admin/data-models", AdminDataModelsList, "admin.data_models.list"),
	workspaceAdmin("POST", "/v1/admin/data-models", AdminDataModelsCreate, "admin.data_models.create"),
	workspaceAdmin("GET", "/v1/admin/data-models/:id", AdminDataModelsGet, "admin.data_models.get"),
	workspaceAdmin("PATCH", "/v1/admin/data-models/:id", AdminDataModelsUpdate, "admin.data_models.update"),
	workspaceAdmin("GET", "/v1/admin/resources", AdminResourcesList, "admin.resources.list"),
	workspaceAdmin("GET", "/v1/admin/resources/:resource", AdminResourcesGet, "admin.resources.get"),
	workspaceAdmin("GET", "/v1/admin/members", AdminMembersList, "admin.members.list"),
	workspaceAdmin("GET", "/v1/admin/members/:id", AdminMembersGet, "admin.members.get"),
	workspaceAdmin("PATCH", "/v1/admin/members/:id", AdminMembersUpdate, "admin.members.update"),
	workspaceAdmin("POST", "/v1/admin/members/:id/deactivate", AdminMembersDeactivate, "admin.members.deactivate"),
	workspaceAdmin("POST", "/v1/admin/members/:id/activate", AdminMembersActivate, "admin.members.activate"),
	workspaceAdmin("GET", "/v1/admin/roles", AdminRolesList, "admin.roles.list"),
	workspaceAdmin("POST", "/v1/admin/roles", AdminRolesCreate, "admin.roles.create"),
	workspaceAdmin("GET", "/v1/admin/roles/:name", AdminRolesGet, "admin.roles.get"),
	workspaceAdmin("PATCH", "/v1/admin/roles/:name", AdminRolesUpdate, "admin.roles.update"),
	workspaceAdmin("GET", "/v1/admin/audit", AdminAuditList, "admin.audit.list"),
	// The workspace's bulk jobs, every member's (the console's Jobs page): the /v1/jobs handlers, as a
	// holder of api.manage sees them.
	workspaceAdmin("GET", "/v1/admin/jobs", AdminJobsList, "admin.jobs.list"),
	workspaceAdmin("GET", "/v1/admin/jobs/:id", AdminJobsGet, "admin.jobs.get"),
	workspaceAdmin("POST", "/v1/admin/jobs/:id/cancel", AdminJobsCancel, "admin.jobs.cancel"),
	workspaceAdmin("GET", "/v1/admin/jobs/:id/download", AdminJobsDownload, "admin.jobs.download"),
}

// workspaceAdmin is a documented route of the admin API (admin keys whose owner holds api.manage).
func workspaceAdmin(method, path string, op AdminOp, label string) Route {
	return Route{Method: method, Path: path, Endpoint: Admin, AdminOp: op, Label: label, Key: true, Scope: ScopeAdmin, Documented: true}
}
