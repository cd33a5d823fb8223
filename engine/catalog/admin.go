package catalog

// adminOperations describes the admin routes (route.Admin) by label: the admin API and one's own keys
// (docs/issue-24.md). Each area adds its operations in its own file.
func (d *doc) adminOperations() map[string]map[string]any {
	ops := map[string]map[string]any{}
	for _, area := range []func(map[string]map[string]any){d.workspaceAdminOperations, d.keyAdminOperations, d.ownKeyOperations} {
		area(ops)
	}
	return ops
}
