package records

import (
	"context"
	"slices"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/events"
	"github.com/workspace-records/records/runtime/feed"
)

// Events returns one page of a's workspace's change feed as a may see it (feed.Reader.Page): events of
// resources a cannot reach (key allowlist, plan, role) and of records outside a's record rule (as the
// record is now, as for a read of it) are left out; values of fields a's role masks are masked, those
// it hides removed and named in withheld; a link or unlink whose other record a does not see (its
// resource out of a's reach, or the record outside a's record rule: linkShown) is withheld.
func (s *Service) Events(ctx context.Context, a Actor, q feed.Query) (*feed.Page, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	return s.feed.Page(ctx, s.viewer(a), q)
}

// EventFor is e as a may see it (a webhook endpoint's payload, as its owner sees it), or false when a
// may not see it: the rules of the feed (Events).
func (s *Service) EventFor(ctx context.Context, a Actor, e events.Stored) (feed.Event, bool, error) {
	if err := s.live(); err != nil {
		return feed.Event{}, false, err
	}
	return s.feed.Event(ctx, s.viewer(a), e)
}

// viewer is a as the feed's reader.
func (s *Service) viewer(a Actor) feed.Viewer {
	return feed.Viewer{Workspace: a.Workspace, Member: a.Member, Manages: a.manages(), Reaches: a.reaches, Policy: a.Policy,
		Visible: func(ctx context.Context, pol *access.Policy, id string, seen map[string]bool) (bool, error) {
			return s.within(ctx, a, pol, id, seen)
		},
		Linked: func(ctx context.Context, other *model.Resource, id string, seen map[string]bool) (bool, error) {
			return s.linkShown(ctx, a, other, id, seen)
		}}
}

// manages reports whether a manages the workspace's API (the admin path, or a role with api.manage).
func (a Actor) manages() bool {
	return a.Role == nil || slices.Contains(a.Role.Permissions, "api.manage")
}
