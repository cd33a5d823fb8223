package auth

import (
	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/model"
)

// ResourceAccess returns what p may do with resource, combining the key's access and allowlist with
// the owner's role.
func (p *Principal) ResourceAccess(resource *model.Resource) access.Level {
	if !p.ResourceAccessByKey(resource.Name) {
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
