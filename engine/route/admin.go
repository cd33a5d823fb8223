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
	AdminJobsList
	AdminJobsGet
	AdminJobsCancel
	AdminJobsDownload

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

// Unbound compares a binding of admin operations (their handlers, their OpenAPI operations) with the
// route table: it returns the admin routes whose operation has no entry in bound, and the operations
// bound that serve no route. The compiler checks that bound's keys are AdminOp constants, each given
// once; the tests of each binding check that both lists are empty.
func Unbound[V any](bound map[AdminOp]V) (missing []Route, extra []AdminOp) {
	routed := map[AdminOp]bool{}
	for _, rt := range fixed {
		if rt.Endpoint != Admin {
			continue
		}
		routed[rt.AdminOp] = true
		if _, ok := bound[rt.AdminOp]; !ok {
			missing = append(missing, rt)
		}
	}
	for op := range bound {
		if !routed[op] {
			extra = append(extra, op)
		}
	}
	return missing, extra
}

func concatRoutes(lists ...[]Route) []Route {
	var out []Route
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
