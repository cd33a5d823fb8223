package route

// workspaceAdminRoutes: custom fields, data models, the workspace's catalog, members, roles and the
// audit trail (docs/issue-24.md).
var workspaceAdminRoutes = []Route{}
