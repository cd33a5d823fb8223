package route

// keyAdminRoutes: every member's keys, usage, webhooks and their deliveries (docs/issue-24.md).
var keyAdminRoutes = []Route{}
