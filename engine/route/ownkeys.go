package route

// ownKeyRoutes: a member's own keys, /v1/me/keys… (docs/issue-24.md). Listing and revoking take any key
// or a console session; creating and rolling need a console session signed in recently, which the
// handler checks.
var ownKeyRoutes = []Route{
	{Method: "GET", Path: "/v1/me/keys", Endpoint: Admin, AdminOp: OwnKeysList, Label: "own_keys_list", Key: true, Scope: ScopeAny, Documented: true},
	{Method: "POST", Path: "/v1/me/keys", Endpoint: Admin, AdminOp: OwnKeysCreate, Label: "own_keys_create", Key: true, Scope: ScopeAny, Documented: true},
	{Method: "POST", Path: "/v1/me/keys/:id/roll", Endpoint: Admin, AdminOp: OwnKeysRoll, Label: "own_keys_roll", Key: true, Scope: ScopeAny, Documented: true},
	{Method: "POST", Path: "/v1/me/keys/:id/revoke", Endpoint: Admin, AdminOp: OwnKeysRevoke, Label: "own_keys_revoke", Key: true, Scope: ScopeAny, Documented: true},
}
