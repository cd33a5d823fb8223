package sqlgen

import (
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/model"
)

// Records reads the records of r with the given ids in workspace, inside pol's record rule (nil: any
// record of the workspace), archived or not, with the columns of Get: the one statement of a reference
// expansion (expand=company) for a whole page.
func (d Dialect) Records(r *model.Resource, workspace string, pol *access.Policy, ids []string) Stmt {
	a := &args{d: d}
	w := a.scope(Quote("workspace_id"), workspace)
	ph := make([]string, len(ids))
	for i, id := range ids {
		ph[i] = a.add(id)
	}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s AND %s IN (%s)", d.selectList(r), Quote(r.Table), w, Quote("id"), strings.Join(ph, ", "))
	if rule := d.rule(pol, workspace, a, ""); rule != "" {
		sql += " AND " + rule
	}
	return Stmt{SQL: sql, Args: a.vals}
}

// LinkedRecords reads, for each of the records fromIDs, the first perRecord records linked to it
// through l's association (l.FromID is not used), oldest link first as ListLinks orders them, leaving
// out records l.OtherPolicy's record rule hides: the one statement of an association expansion
// (expand=contacts) for a whole page. A row is the id it is linked from, then the columns of Get of
// l.Other. One window function over the links of all the records numbers each record's links.
func (d Dialect) LinkedRecords(l Link, fromIDs []string, perRecord int) Stmt {
	a := &args{d: d}
	from, other := l.cols()
	cols := SelectColumns(l.Other)
	inner := make([]string, len(cols)+1)
	inner[0] = `o."workspace_id"`
	for i, f := range cols {
		inner[i+1] = "o." + Quote(f.Column)
	}
	ph := make([]string, len(fromIDs))
	w := a.scope(`l."workspace_id"`, l.Workspace)
	res, name := a.add(l.Resource), a.add(l.Name)
	for i, id := range fromIDs {
		ph[i] = a.add(id)
	}
	q := fmt.Sprintf(`SELECT l.%s AS "expand_from", %s, row_number() OVER (PARTITION BY l.%s ORDER BY l."created_at", l.%s) AS "expand_n"
FROM "associations" l JOIN %s o ON o."workspace_id" = l."workspace_id" AND o."id" = l.%s
WHERE %s AND l."owner_resource" = %s AND l."name" = %s AND l.%s IN (%s)`,
		Quote(from), strings.Join(inner, ", "), Quote(from), Quote(other), Quote(l.Other.Table), Quote(other),
		w, res, name, Quote(from), strings.Join(ph, ", "))
	if rule := d.rule(l.OtherPolicy, l.Workspace, a, "o."); rule != "" {
		q += " AND " + rule
	}
	sql := fmt.Sprintf(`SELECT "expand_from", %s FROM (%s) e WHERE "expand_n" <= %s ORDER BY "expand_from", "expand_n"`,
		d.selectList(l.Other), q, a.add(int64(perRecord)))
	return Stmt{SQL: sql, Args: a.vals}
}
