package route

// ownKeyRoutes: a member's own keys, /v1/me/keys… (docs/issue-24.md).
var ownKeyRoutes = []Route{}
