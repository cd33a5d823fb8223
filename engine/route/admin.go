package route

// adminRoutes are the routes of the admin API (/v1/admin/…, ScopeAdmin) and of one's own keys
// (/v1/me/keys…, ScopeAny): docs/issue-24.md. Each has Endpoint Admin and a Label unique among them,
// which names its handler (httpapi) and its OpenAPI operation (engine/catalog); each area keeps its rows in
// a file of its own.
var adminRoutes = concatRoutes(workspaceAdminRoutes, keyAdminRoutes, ownKeyRoutes)

func concatRoutes(lists ...[]Route) []Route {
	var out []Route
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// AdminLabels returns the labels of the admin routes, in table order, each once.
func AdminLabels() []string {
	var out []string
	seen := map[string]bool{}
	for _, rt := range adminRoutes {
		if !seen[rt.Label] {
			seen[rt.Label] = true
			out = append(out, rt.Label)
		}
	}
	return out
}
