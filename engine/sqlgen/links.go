package sqlgen

import (
	"fmt"
	"time"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/model"
)

// Link addresses the links of one record through one association. Links are stored once, under the
// owning side of the association (model.Association.StoredAs); the other side reads the same rows.
type Link struct {
	Workspace string
	Resource  string // the owning side's resource
	Name      string // the owning side's association name
	FromOwner bool   // the caller's record is on the owning side
	FromID    string
	Other     *model.Resource // the resource at the other end
	// OtherPolicy's record rule limits which records at the other end are visible.
	OtherPolicy *access.Policy
}

func (l Link) cols() (from, other string) {
	if l.FromOwner {
		return "owner_id", "target_id"
	}
	return "target_id", "owner_id"
}

// ListLinks selects (other id, attributes, created_at, updated_at) of l's links whose other record
// exists and is visible, oldest first, after (afterTime, afterID) when afterID is set.
func (d Dialect) ListLinks(l Link, afterTime time.Time, afterID string, limit, offset int) Stmt {
	a := &args{d: d}
	from, other := l.cols()
	q := fmt.Sprintf(`SELECT l.%s, l."attributes", l."created_at", l."updated_at" FROM "associations" l JOIN %s o ON o."workspace_id" = l."workspace_id" AND o."id" = l.%s
WHERE %s AND l."owner_resource" = %s AND l."name" = %s AND l.%s = %s`,
		Quote(other), Quote(l.Other.Table), Quote(other), a.scope(`l."workspace_id"`, l.Workspace), a.add(l.Resource), a.add(l.Name), Quote(from), a.add(l.FromID))
	if rule := d.rule(l.OtherPolicy, l.Workspace, a, "o."); rule != "" {
		q += " AND " + rule
	}
	if afterID != "" {
		q += fmt.Sprintf(` AND (l."created_at", l.%s) > (%s, %s)`, Quote(other), a.add(afterTime), a.add(afterID))
	}
	q += fmt.Sprintf(` ORDER BY l."created_at", l.%s LIMIT %s`, Quote(other), a.add(int64(limit)))
	if offset > 0 {
		q += " OFFSET " + a.add(int64(offset))
	}
	return Stmt{SQL: q, Args: a.vals}
}

// linkKey renders the primary key of the link between l.FromID and otherID.
func (d Dialect) linkKey(l Link, otherID string, a *args) string {
	owner, target := l.FromID, otherID
	if !l.FromOwner {
		owner, target = otherID, l.FromID
	}
	return fmt.Sprintf(`%s AND "owner_resource" = %s AND "name" = %s AND "owner_id" = %s AND "target_id" = %s`,
		a.scope(`"workspace_id"`, l.Workspace), a.add(l.Resource), a.add(l.Name), a.add(owner), a.add(target))
}

// GetLink selects (attributes, created_at, updated_at) of one link.
func (d Dialect) GetLink(l Link, otherID string) Stmt {
	a := &args{d: d}
	return Stmt{SQL: `SELECT "attributes", "created_at", "updated_at" FROM "associations" WHERE ` + d.linkKey(l, otherID, a), Args: a.vals}
}

// PutLink inserts one link or replaces its attributes. storedTarget is the resource of the non-owning
// side (the other resource when the caller owns, the caller's resource otherwise).
func (d Dialect) PutLink(l Link, otherID, storedTarget, attributes string, now time.Time) Stmt {
	a := &args{d: d}
	owner, target := l.FromID, otherID
	if !l.FromOwner {
		owner, target = otherID, l.FromID
	}
	q := fmt.Sprintf(`INSERT INTO "associations" ("workspace_id", "owner_resource", "name", "owner_id", "target_resource", "target_id", "attributes", "created_at", "updated_at")
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT ("workspace_id", "owner_resource", "name", "owner_id", "target_id") DO UPDATE SET "attributes" = excluded."attributes", "updated_at" = excluded."updated_at"`,
		a.add(l.Workspace), a.add(l.Resource), a.add(l.Name), a.add(owner), a.add(storedTarget), a.add(target), a.add(attributes), a.add(now), a.add(now))
	return Stmt{SQL: q, Args: a.vals}
}

// DeleteLink removes one link.
func (d Dialect) DeleteLink(l Link, otherID string) Stmt {
	a := &args{d: d}
	return Stmt{SQL: `DELETE FROM "associations" WHERE ` + d.linkKey(l, otherID, a), Args: a.vals}
}
