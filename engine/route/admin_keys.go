package route

// keyAdminRoutes: every member's keys, usage, webhooks and their deliveries (docs/issue-24.md).
var keyAdminRoutes = []Route{
	keyAdminRoute("GET", "/v1/admin/keys", "admin.keys.list"),
	keyAdminRoute("GET", "/v1/admin/keys/:id", "admin.keys.get"),
	keyAdminRoute("POST", "/v1/admin/keys/:id/revoke", "admin.keys.revoke"),
	keyAdminRoute("GET", "/v1/admin/usage", "admin.usage"),
	keyAdminRoute("GET", "/v1/admin/webhooks", "admin.webhooks.list"),
	keyAdminRoute("POST", "/v1/admin/webhooks", "admin.webhooks.create"),
	keyAdminRoute("GET", "/v1/admin/webhooks/:id", "admin.webhooks.get"),
	keyAdminRoute("PATCH", "/v1/admin/webhooks/:id", "admin.webhooks.update"),
	keyAdminRoute("DELETE", "/v1/admin/webhooks/:id", "admin.webhooks.delete"),
	keyAdminRoute("POST", "/v1/admin/webhooks/:id/rotate-secret", "admin.webhooks.rotate_secret"),
	keyAdminRoute("GET", "/v1/admin/webhooks/:id/deliveries", "admin.webhooks.deliveries"),
	keyAdminRoute("POST", "/v1/admin/webhooks/:id/replay", "admin.webhooks.replay"),
}

// keyAdminRoute is a documented route of the admin API (/v1/admin/…), for admin keys only.
func keyAdminRoute(method, path, label string) Route {
	return Route{Method: method, Path: path, Endpoint: Admin, Label: label, Key: true, Scope: ScopeAdmin, Documented: true}
}
