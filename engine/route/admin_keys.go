package route

// keyAdminRoutes: every member's keys, usage, webhooks and their deliveries (docs/issue-24.md).
var keyAdminRoutes = []Route{
	keyAdminRoute("GET", "/v1/admin/keys", AdminKeysList, "admin.keys.list"),
	keyAdminRoute("GET", "/v1/admin/keys/:id", AdminKeysGet, "admin.keys.get"),
	keyAdminRoute("POST", "/v1/admin/keys/:id/revoke", AdminKeysRevoke, "admin.keys.revoke"),
	keyAdminRoute("GET", "/v1/admin/usage", AdminUsage, "admin.usage"),
	keyAdminRoute("GET", "/v1/admin/webhooks", AdminWebhooksList, "admin.webhooks.list"),
	keyAdminRoute("POST", "/v1/admin/webhooks", AdminWebhooksCreate, "admin.webhooks.create"),
	keyAdminRoute("GET", "/v1/admin/webhooks/:id", AdminWebhooksGet, "admin.webhooks.get"),
	keyAdminRoute("PATCH", "/v1/admin/webhooks/:id", AdminWebhooksUpdate, "admin.webhooks.update"),
	keyAdminRoute("DELETE", "/v1/admin/webhooks/:id", AdminWebhooksDelete, "admin.webhooks.delete"),
	keyAdminRoute("POST", "/v1/admin/webhooks/:id/rotate-secret", AdminWebhooksRotateSecret, "admin.webhooks.rotate_secret"),
	keyAdminRoute("GET", "/v1/admin/webhooks/:id/deliveries", AdminWebhooksDeliveries, "admin.webhooks.deliveries"),
	keyAdminRoute("POST", "/v1/admin/webhooks/:id/replay", AdminWebhooksReplay, "admin.webhooks.replay"),
}

// keyAdminRoute is a documented route of the admin API (/v1/admin/…), for admin keys only.
func keyAdminRoute(method, path string, op AdminOp, label string) Route {
	return Route{Method: method, Path: path, Endpoint: Admin, AdminOp: op, Label: label, Key: true, Scope: ScopeAdmin, Documented: true}
}
