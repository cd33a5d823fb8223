package auth

import (
	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/model"
)

// ResourceAccess returns what p may do with resource, combining the key's access and allowlist with
// the owner's role.
func (p *Principal) ResourceAccess(resource *model.Resource) access.Level {
	if p.Key.Access == AccessAdmin || !p.ResourceAccessByKey(resource.Name) {
		return access.None
	}
	level := access.For(p.Role, resource, p.Member.ID, p.Member.Department).Level
	if level == access.Write && p.Key.Access == "read" {
		return access.Read
	}
	return level
}

// Policy returns p's policy on resource.
func (p *Principal) Policy(resource *model.Resource) *access.Policy {
	return access.For(p.Role, resource, p.Member.ID, p.Member.Department)
}

// Authorize checks that p may run a read or write on resource.
func (p *Principal) Authorize(resource *model.Resource, write bool) error {
	if p.Key.Access == AccessAdmin {
		return &apierr.Error{Code: apierr.InsufficientScope, Message: "This is an admin key: it administers the workspace (/v1/admin/…) and reads or writes no records; use a read or write key."}
	}
	if !p.ResourceAccessByKey(resource.Name) {
		return &apierr.Error{Code: apierr.InsufficientScope, Message: "This key is not allowed to use " + resource.Name + "."}
	}
	if write && p.Key.Access != "write" {
		return &apierr.Error{Code: apierr.InsufficientScope, Message: "This key is read-only; writes need a key with write access."}
	}
	if resource.Feature != "" && !p.Plan.HasFeature(resource.Feature) {
		return &apierr.Error{Code: apierr.FeatureUnavailable, Message: resource.Name + " needs the " + resource.Feature + " feature, which the workspace's " + p.Workspace.Plan + " plan does not include."}
	}
	switch level := p.Policy(resource).Level; {
	case level == access.None:
		return &apierr.Error{Code: apierr.Forbidden, Message: "Your role does not give access to " + resource.Name + "."}
	case write && level != access.Write:
		return &apierr.Error{Code: apierr.Forbidden, Message: "Your role can read but not change " + resource.Name + "."}
	}
	return nil
}

// ResourceAccessByKey reports whether the key's allowlist includes resource.
func (p *Principal) ResourceAccessByKey(resource string) bool {
	if p.Key.Resources == nil {
		return true
	}
	for _, r := range p.Key.Resources {
		if r == resource {
			return true
		}
	}
	return false
}

// HasPermission reports whether the principal's role holds perm (PermAccess, PermManage, …).
func (p *Principal) HasPermission(perm string) bool {
	return p.Role != nil && HasPermission(p.Role, perm)
}

// Administer checks that the principal may call the admin API: an admin key (a data key is 403
// insufficient_scope) or a console session, whose member's role holds api.manage (else 403
// permission_denied).
func (p *Principal) Administer() error {
	if p.Session == nil && p.Key.Access != AccessAdmin {
		return &apierr.Error{Code: apierr.InsufficientScope, Message: "The admin API needs an admin key (access admin); this key reads or writes records only."}
	}
	if !p.HasPermission(PermManage) {
		return &apierr.Error{Code: apierr.PermissionDenied, Message: "Administering the workspace needs the api.manage permission, which your role does not hold."}
	}
	return nil
}
