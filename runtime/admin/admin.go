// Package admin is the workspace administration behind /v1/admin/… and one's own keys (/v1/me/keys…):
// docs/issue-24.md. Every operation acts for an Actor inside the actor's workspace only (another
// workspace's ids are ErrNotFound), never grants a permission the actor lacks, and writes its audit entry
// in the transaction of its change. It goes through the same auth.Directory, customfields.Registry and
// dispatch.Registry paths as recordsctl, so a change reaches every server as theirs do.
package admin

import (
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
)

// Config are the parts the admin operations use.
type Config struct {
	Catalog   *model.Catalog
	Store     store.Store
	Directory *auth.Directory
	Members   *members.Service
	Custom    *customfields.Registry
	Webhooks  *dispatch.Registry
	Records   *records.Service
	// CursorSecret signs the cursors of the paged lists (the audit trail, deliveries).
	CursorSecret []byte
}

// Service runs the admin operations.
type Service struct {
	cfg   Config
	trail *audit.Reader
}

// New returns the admin service.
func New(cfg Config) *Service {
	return &Service{cfg: cfg, trail: audit.NewReader(cfg.Store, cfg.Catalog, cfg.CursorSecret)}
}

// Actor is who calls: the principal of the request and its request id (for the audit entries).
type Actor struct {
	Principal *auth.Principal
	RequestID string
}
