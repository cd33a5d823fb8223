package route

// workspaceAdminRoutes: custom fields, data models, the workspace's catalog, members, roles and the
// audit trail (docs/issue-24.md).
var workspaceAdminRoutes = []Route{
	workspaceAdmin("GET", "/v1/admin/custom-fields", "admin.custom_fields.list"),
	workspaceAdmin("POST", "/v1/admin/custom-fields", "admin.custom_fields.create"),
	workspaceAdmin("GET", "/v1/admin/custom-fields/:id", "admin.custom_fields.get"),
	workspaceAdmin("PATCH", "/v1/admin/custom-fields/:id", "admin.custom_fields.update"),
	workspaceAdmin("POST", "/v1/admin/custom-fields/:id/archive", "admin.custom_fields.archive"),
	workspaceAdmin("POST", "/v1/admin/custom-fields/:id/restore", "admin.custom_fields.restore"),
	workspaceAdmin("GET", "/v1/admin/data-models", "admin.data_models.list"),
	workspaceAdmin("POST", "/v1/admin/data-models", "admin.data_models.create"),
	workspaceAdmin("GET", "/v1/admin/data-models/:id", "admin.data_models.get"),
	workspaceAdmin("PATCH", "/v1/admin/data-models/:id", "admin.data_models.update"),
	workspaceAdmin("GET", "/v1/admin/resources", "admin.resources.list"),
	workspaceAdmin("GET", "/v1/admin/resources/:resource", "admin.resources.get"),
	workspaceAdmin("GET", "/v1/admin/members", "admin.members.list"),
	workspaceAdmin("GET", "/v1/admin/members/:id", "admin.members.get"),
	workspaceAdmin("PATCH", "/v1/admin/members/:id", "admin.members.update"),
	workspaceAdmin("POST", "/v1/admin/members/:id/deactivate", "admin.members.deactivate"),
	workspaceAdmin("POST", "/v1/admin/members/:id/activate", "admin.members.activate"),
	workspaceAdmin("GET", "/v1/admin/roles", "admin.roles.list"),
	workspaceAdmin("POST", "/v1/admin/roles", "admin.roles.create"),
	workspaceAdmin("GET", "/v1/admin/roles/:name", "admin.roles.get"),
	workspaceAdmin("PATCH", "/v1/admin/roles/:name", "admin.roles.update"),
	workspaceAdmin("GET", "/v1/admin/audit", "admin.audit.list"),
}

// workspaceAdmin is a documented route of the admin API (admin keys whose owner holds api.manage).
func workspaceAdmin(method, path, label string) Route {
	return Route{Method: method, Path: path, Endpoint: Admin, Label: label, Key: true, Scope: ScopeAdmin, Documented: true}
}
