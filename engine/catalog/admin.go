package catalog

import "github.com/workspace-records/records/engine/route"

// adminOperations describes the admin routes (route.Admin) by their route.AdminOp: the admin API and one's
// own keys (docs/issue-24.md). Each area adds its operations in its own file. The document's build panics
// for an admin route without an operation here; TestAdminOperations fails for an operation without a route.
func (d *doc) adminOperations() map[route.AdminOp]map[string]any {
	ops := map[route.AdminOp]map[string]any{}
	for _, area := range []func(map[route.AdminOp]map[string]any){d.workspaceAdminOperations, adminJobOperations, d.keyAdminOperations, d.ownKeyOperations} {
		area(ops)
	}
	for _, op := range ops {
		if _, set := op["security"]; !set {
			op["security"] = keyOrSession // an admin key, or a console session with its CSRF token
		}
	}
	return ops
}

// adminTags are the tags of the admin routes' operations (docs/issue-24.md).
var adminTags = []any{
	map[string]any{"name": "admin-custom-fields", "x-displayName": "Admin: custom fields", "description": "The workspace's custom fields: create, change, archive and restore them (what `recordsctl field` does)."},
	map[string]any{"name": "admin-data-models", "x-displayName": "Admin: data models", "description": "The workspace's data models and their fields (what `recordsctl model` does)."},
	map[string]any{"name": "admin-catalog", "x-displayName": "Admin: catalog", "description": "The workspace's resources and their field catalogs as the workspace defines them, for the console."},
	map[string]any{"name": "admin-members", "x-displayName": "Admin: members", "description": "The workspace's members: their roles, deactivation and activation."},
	map[string]any{"name": "admin-roles", "x-displayName": "Admin: roles", "description": "The built-in roles and the workspace's own, in the format of roles.yaml."},
	map[string]any{"name": "admin-jobs", "x-displayName": "Admin: bulk jobs", "description": "Every member's bulk imports and exports of the workspace (the console's Jobs page): the jobs of `/v1/jobs` as a holder of `api.manage` sees them, their progress, cancel, and an export's file."},
	map[string]any{"name": "admin-audit", "x-displayName": "Admin: audit trail", "description": "The workspace's audit trail with the filters of `recordsctl audit list`, the admin API's own writes included."},
	map[string]any{"name": "keys", "x-displayName": "Your keys", "description": "Your own API keys: list, create and roll (from a console session signed in recently), revoke."},
	map[string]any{"name": "admin-keys", "x-displayName": "Keys and usage", "description": "Administration (an admin key or a console session of a member whose role holds `api.manage`): every member's API keys, never a secret; revocation; requests and refusals per key and day, and the monthly quota."},
	map[string]any{"name": "admin-webhooks", "x-displayName": "Webhooks", "description": "Administration (an admin key or a console session of a member whose role holds `api.manage`): webhook endpoints, their signing secrets (shown once), deliveries and replays, as `recordsctl webhook`."},
	map[string]any{"name": "console", "x-displayName": "Console session", "description": "Sign-in to the web console at `/console` with a one-time link, its session and sign-out."},
}

func adminTagNames() []string {
	out := make([]string, len(adminTags))
	for i, t := range adminTags {
		out[i] = t.(map[string]any)["name"].(string)
	}
	return out
}
