package catalog

import "github.com/workspace-records/records/engine/route"

// keyOrSession is the security of routes that take a key or a console session (the cookie and, with it,
// the CSRF header).
var keyOrSession = []any{map[string]any{"bearerAuth": []any{}}, map[string]any{"consoleSession": []any{}, "csrfToken": []any{}}}

// ownKeyOperations adds the operations of one's own keys (/v1/me/keys…) to ops, by admin operation
// (docs/issue-24.md).
func (d *doc) ownKeyOperations(ops map[route.AdminOp]map[string]any) {
	idParam := map[string]any{"name": "id", "in": "path", "required": true, "description": "The key's id.", "schema": map[string]any{"type": "string"}}
	secretAnswer := func(desc string, extra map[string]any) map[string]any {
		props := map[string]any{"key": schemaRef("ApiKey"), "secret": map[string]any{"type": "string", "pattern": "^wsk_[0-9a-f]{64}$",
			"description": "The new key's secret: shown in this answer only, never again. Store it now."}}
		req := []string{"key", "secret"}
		for k, v := range extra {
			props[k] = v
			req = append(req, k)
		}
		return map[string]any{"description": desc, "headers": headerRefs(append([]string{"X-Request-Id"}, usageHeaders...)...),
			"content": jsonContent(map[string]any{"type": "object", "required": []string{"data"}, "additionalProperties": false,
				"properties": map[string]any{"data": map[string]any{"type": "object", "additionalProperties": false, "required": req, "properties": props}}})}
	}
	ops[route.OwnKeysList] = withResponses(map[string]any{"operationId": "listOwnKeys", "tags": []string{"keys"}, "security": keyOrSession,
		"summary": "Your keys", "description": "The caller's own API keys, newest first: never a secret. Any key of the caller, or a console session."},
		"200", list("Your keys.", schemaRef("ApiKey")), "400", "401", "403", "429", "500", "503")
	ops[route.OwnKeysCreate] = withResponses(map[string]any{"operationId": "createOwnKey", "tags": []string{"keys"}, "security": keyOrSession,
		"summary": "Create a key", "description": "Creates an API key for the caller and answers its secret once. Only from a console session signed in within the last 15 minutes: " +
			"the key records that sign-in as the assurance it delegates (a new MFA factor verified after it makes the key answer 401 `key_assurance_stale`). " +
			"With an API key: 403 `insufficient_scope`; with an older session: 401 `key_assurance_stale` (sign in again). `read` and `write` keys need `api.access`; " +
			"an `admin` key (the admin API only) needs `api.manage` too.",
		"requestBody": map[string]any{"required": true, "content": jsonContent(map[string]any{"type": "object", "additionalProperties": false, "required": []string{"access"},
			"properties": map[string]any{
				"access":     map[string]any{"type": "string", "enum": []string{"read", "write", "admin"}, "description": "What the key may do."},
				"resources":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Only these resources (default: every resource)."},
				"allow_ips":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Only from these addresses or CIDR ranges (default: any)."},
				"expires_in": map[string]any{"type": "string", "description": "Lifetime, at most one year: `90d`, `720h` (default `90d`)."},
				"name":       map[string]any{"type": "string", "maxLength": 100, "description": "Your label for the key."},
			}})}},
		"201", secretAnswer("The key, and its secret shown once.", nil), "400", "401", "403", "413", "422", "429", "500", "503")
	ops[route.OwnKeysRoll] = withResponses(map[string]any{"operationId": "rollOwnKey", "tags": []string{"keys"}, "security": keyOrSession,
		"summary": "Roll a key", "description": "Replaces one of your keys, as Stripe rolls keys: a new key with the same access, restrictions and name (and the old key's expiry, " +
			"or 90 days when the old key would expire within the overlap), its secret shown once; the old key stays valid for `overlap` (0 to 7 days, default 24 hours), then expires. " +
			"Only from a console session signed in within the last 15 minutes, as creating a key. A revoked, expired or already rolled key: 409 `conflict`.",
		"parameters": []any{idParam},
		"requestBody": map[string]any{"required": false, "content": jsonContent(map[string]any{"type": "object", "additionalProperties": false,
			"properties": map[string]any{"overlap": map[string]any{"type": "string", "description": "How long the old key stays valid: `0` to `168h` (`7d`); default `24h`."}}})}},
		"201", secretAnswer("The new key and its secret shown once, and the rolled key as it now is.", map[string]any{"rolled": schemaRef("ApiKey")}),
		"400", "401", "403", "404", "409", "413", "422", "429", "500", "503")
	ops[route.OwnKeysRevoke] = withResponses(map[string]any{"operationId": "revokeOwnKey", "tags": []string{"keys"}, "security": keyOrSession,
		"summary": "Revoke a key", "description": "Revokes one of your keys at once, on every server. Revoking a revoked key answers it unchanged. Another member's key: 404.",
		"parameters": []any{idParam}},
		"200", ok("The revoked key.", schemaRef("ApiKey")), "400", "401", "403", "404", "413", "422", "429", "500", "503")
}

// consoleSessionOperations adds the operations of the console's session (/console/session) to ops, by
// endpoint (docs/issue-24.md), and the schema they answer with to the document's components.
func (d *doc) consoleSessionOperations(ops map[route.Endpoint]map[string]any) {
	schemas := d.comps["schemas"].(map[string]any)
	schemas["ConsoleSession"] = consoleSessionSchema()
	session := map[string]any{"description": "The signed-in member, the session's times and its CSRF token.", "headers": headerRefs("X-Request-Id"),
		"content": jsonContent(map[string]any{"type": "object", "required": []string{"data"}, "additionalProperties": false,
			"properties": map[string]any{"data": schemaRef("ConsoleSession")}})}
	signedIn := map[string]any{"description": session["description"], "content": session["content"],
		"headers": map[string]any{"X-Request-Id": ref("headers", "X-Request-Id"), "Set-Cookie": map[string]any{
			"description": "`records_session`: the new session's secret; HttpOnly, SameSite=Strict, Path=/, Secure over TLS.", "schema": map[string]any{"type": "string"}}}}
	ops[route.ConsoleSignIn] = withResponses(map[string]any{"operationId": "consoleSignIn", "tags": []string{"console"}, "security": []any{map[string]any{}},
		"summary": "Sign in to the console", "description": "Redeems a one-time sign-in link's token (`recordsctl console-link --member M`) at most once, before it expires, " +
			"for an active member, and starts a console session with a new secret in the `records_session` cookie (a cookie the browser brought is never taken over). " +
			"The body must be `application/json` and the request must come from the server's own pages (`Origin`, `Sec-Fetch-Site`): 403 `forbidden` otherwise. " +
			"An unknown, used or expired token: 401 `invalid_api_key`.",
		"requestBody": map[string]any{"required": true, "content": jsonContent(map[string]any{"type": "object", "additionalProperties": false, "required": []string{"token"},
			"properties": map[string]any{"token": map[string]any{"type": "string", "description": "The token of the link's `#sign-in=` fragment."}}})}},
		"200", signedIn, "400", "401", "403", "413", "422", "429", "500", "503")
	ops[route.ConsoleSession] = withResponses(map[string]any{"operationId": "getConsoleSession", "tags": []string{"console"}, "security": []any{map[string]any{"consoleSession": []any{}}},
		"summary": "The console session", "description": "The signed-in member, the session's times and the CSRF token every other console request sends in `X-CSRF-Token`. " +
			"401 without a live session (signed out, idle for 30 minutes, 12 hours after sign-in, member deactivated, even if activated again since; `key_assurance_stale` after a new MFA factor)."},
		"200", session, "400", "401", "403", "500", "503")
	ops[route.ConsoleSignOut] = withResponses(map[string]any{"operationId": "consoleSignOut", "tags": []string{"console"}, "security": []any{map[string]any{"consoleSession": []any{}, "csrfToken": []any{}}},
		"summary": "Sign out of the console", "description": "Ends the session on every server and clears the cookie. Needs the CSRF token."},
		"204", map[string]any{"description": "Signed out.", "headers": map[string]any{"X-Request-Id": ref("headers", "X-Request-Id"),
			"Set-Cookie": map[string]any{"description": "Clears `records_session`.", "schema": map[string]any{"type": "string"}}}},
		"400", "403", "500", "503")
}

func consoleSessionSchema() map[string]any {
	ts := map[string]any{"type": "string", "format": "date-time"}
	return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"session", "member", "workspace", "permissions", "csrf_token"},
		"description": "A console session.",
		"properties": map[string]any{
			"session": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"id", "signed_in_at", "expires_at", "idle_expires_at", "recent_sign_in_until"},
				"properties": map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}, "signed_in_at": ts, "expires_at": ts, "idle_expires_at": ts,
					"recent_sign_in_until": map[string]any{"type": "string", "format": "date-time", "description": "Until when keys may be created and rolled without signing in again."}}},
			"member": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"id", "email", "role", "department_id"},
				"properties": map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}, "email": str("The member's email address."), "role": str("The member's role."),
					"department_id": map[string]any{"type": []string{"string", "null"}, "description": "The member's department, if any."}}},
			"workspace": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"id", "name", "plan"},
				"properties": map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}, "name": str("The workspace's name."), "plan": str("The workspace's plan.")}},
			"permissions": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The member's role's permissions (`api.access`, `api.manage`)."},
			"csrf_token":  str("Send it in `X-CSRF-Token` with every console request."),
		}}
}
