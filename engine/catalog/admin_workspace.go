package catalog

// workspaceAdminOperations adds the operations of its admin routes to ops, by route label (docs/issue-24.md).
func (d *doc) workspaceAdminOperations(ops map[string]map[string]any) {}
