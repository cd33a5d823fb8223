package route

// adminRoutes are the routes of the admin API (/v1/admin/…, ScopeAdmin) and of one's own keys
// (/v1/me/keys…, ScopeAny): docs/issue-24.md. Each has Endpoint Admin and an AdminOp of its own, which the
// compiler joins to its handler (httpapi.Handler.adminHandlers) and its OpenAPI operation
// (engine/catalog's adminOperations), and a Label unique among them, which names it in the access log and
// the metrics; each area keeps its rows in a file of its own.
var adminRoutes = concatRoutes(workspaceAdminRoutes, keyAdminRoutes, ownKeyRoutes)

// AdminOp names the operation of an admin route (Endpoint Admin): the route table declares each admin
// route with one, runtime/httpapi binds each to its handler and engine/catalog to its OpenAPI operation,
// both keyed by these constants, so that a misspelt name fails to compile. Each serves exactly one route
// (TestAdminRoutes); a route without a handler or an operation, or a handler or an operation without a
// route, fails those packages' tests.
type AdminOp uint8

// The admin operations, by area: the workspace (admin_workspace.go), keys, usage and webhooks
// (admin_keys.go), one's own keys (ownkeys.go).
const (
	AdminCustomFieldsList AdminOp = iota + 1
	AdminCustomFieldsCreate
	AdminCustomFieldsGet
	AdminCustomFieldsUpdate
	AdminCustomFieldsArchive
	AdminCustomFieldsRestore
	AdminDataModelsList
	AdminDataModelsCreate
	AdminDataModelsGet
	AdminDataModelsUpdate
	AdminResourcesList
	AdminResourcesGet
	AdminMembersList
	AdminMembersGet
	AdminMembersUpdate
	AdminMembersDeactivate
	AdminMembersActivate
	AdminRolesList
	AdminRolesCreate
	AdminRolesGet
	AdminRolesUpdate
	AdminAuditList

	AdminKeysList
	AdminKeysGet
	AdminKeysRevoke
	AdminUsage
	AdminWebhooksList
	AdminWebhooksCreate
	AdminWebhooksGet
	AdminWebhooksUpdate
	AdminWebhooksDelete
	AdminWebhooksRotateSecret
	AdminWebhooksDeliveries
	AdminWebhooksReplay

	OwnKeysList
	OwnKeysCreate
	OwnKeysRoll
	OwnKeysRevoke

	adminOpEnd // one past the last
)

// AdminOps returns every admin operation, in declaration order.
func AdminOps() []AdminOp {
	out := make([]AdminOp, 0, adminOpEnd-1)
	for op := AdminOp(1); op < adminOpEnd; op++ {
		out = append(out, op)
	}
	return out
}

func concatRoutes(lists ...[]Route) []Route {
	var out []Route
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
