package audit

import (
	"slices"
	"strings"

	"github.com/workspace-records/records/engine/model"
)

// The resources of the admin API's entries in the trail (docs/issue-24.md): each admin write leaves one,
// in its transaction, with the object's id as record id.
const (
	AdminCustomFields = "admin.custom_fields"
	AdminDataModels   = "admin.data_models"
	AdminMembers      = "admin.members"
	AdminRoles        = "admin.roles"
	AdminAPIKeys      = "admin.api_keys"
	AdminWebhooks     = "admin.webhook_endpoints"
)

// AdminResources lists them.
var AdminResources = []string{AdminCustomFields, AdminDataModels, AdminMembers, AdminRoles, AdminAPIKeys, AdminWebhooks}

// The actions of admin entries besides create, update, archive and restore.
const (
	ActionRevoke       = "revoke"
	ActionRoll         = "roll"
	ActionDeactivate   = "deactivate"
	ActionActivate     = "activate"
	ActionDelete       = "delete"
	ActionRotateSecret = "rotate_secret"
	ActionReplay       = "replay"
)

// IsAdminResource reports whether name is the resource of admin entries.
func IsAdminResource(name string) bool {
	return strings.HasPrefix(name, "admin.") && slices.Contains(AdminResources, name)
}

// readsAdmin reports whether a reader of role sees the admin entries: the operator (nil) and roles
// holding api.manage.
func readsAdmin(role *model.Role) bool {
	return role == nil || slices.Contains(role.Permissions, "api.manage")
}
