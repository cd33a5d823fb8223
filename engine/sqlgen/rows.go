package sqlgen

import (
	"fmt"
	"strings"
	"sync"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/model"
)

// SelectColumns returns the fields a record select reads, in order. A row holds workspace_id first, then
// these fields: the reader checks the workspace of every row it is handed (a second guard behind the
// workspace predicate of every statement).
func SelectColumns(r *model.Resource) []*model.Field {
	return r.Fields
}

func (d Dialect) selectList(r *model.Resource) string {
	if s, ok := selectLists.Load(r); ok {
		return s.(string)
	}
	s := buildSelectList(r)
	selectLists.Store(r, s)
	return s
}

// selectLists holds each resource's select list (the same on both backends), built once: a definition
// is never changed once loaded, and a reload makes new *model.Resource values.
var selectLists sync.Map

func buildSelectList(r *model.Resource) string {
	cols := SelectColumns(r)
	parts := make([]string, len(cols)+1)
	parts[0] = Quote("workspace_id")
	for i, f := range cols {
		parts[i+1] = Quote(f.Column)
	}
	return strings.Join(parts, ", ")
}

// Key identifies one record.
type Key struct {
	Workspace string
	ModelID   string // for model-scoped resources
	ID        string
	// Policy's record rule limits which records the key can reach; nil is unrestricted.
	Policy *access.Policy
}

func (d Dialect) whereKey(r *model.Resource, k Key, a *args) string {
	w := a.scope(Quote("workspace_id"), k.Workspace)
	if r.ModelScoped {
		w += " AND " + Quote("model_id") + " = " + a.add(k.ModelID)
	}
	w += " AND " + Quote("id") + " = " + a.add(k.ID)
	if rule := d.rule(k.Policy, k.Workspace, a, ""); rule != "" {
		w += " AND " + rule
	}
	return w
}

// rule renders p's record rule over the record columns qualified by alias ("" or "o."), or "" when
// every record is visible.
func (d Dialect) rule(p *access.Policy, workspace string, a *args, alias string) string {
	if p == nil || p.Rule == access.All {
		return ""
	}
	owner := alias + Quote("owner_id")
	own := owner + " = " + a.add(p.Member)
	if p.Rule == access.Owned || p.Department == "" {
		return own
	}
	return fmt.Sprintf("(%s OR %s IN (SELECT %s FROM %s WHERE %s AND %s = %s))", own, owner,
		Quote("id"), Quote("members"), a.scope(Quote("workspace_id"), workspace), Quote("department_id"), a.add(p.Department))
}

// Get reads one record.
func (d Dialect) Get(r *model.Resource, k Key) Stmt {
	a := &args{d: d}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s", d.selectList(r), Quote(r.Table), d.whereKey(r, k, a))
	return Stmt{SQL: sql, Args: a.vals}
}

// GetForUpdate reads one record and locks it until the transaction ends (PostgreSQL; SQLite has a
// single writer, so the transaction already excludes others).
func (d Dialect) GetForUpdate(r *model.Resource, k Key) Stmt {
	s := d.Get(r, k)
	if d.kind == Postgres {
		s.SQL += " FOR UPDATE"
	}
	return s
}

// Insert writes a new record. values holds canonical values keyed by column; managed columns are
// included by the caller (id, owner_id, created_at, updated_at, custom_fields).
func (d Dialect) Insert(r *model.Resource, k Key, values map[string]any) Stmt {
	return d.InsertMany(r, k.Workspace, k.ModelID, []map[string]any{values}, []string{k.ID})
}

// InsertMany writes several records of one workspace in one statement.
func (d Dialect) InsertMany(r *model.Resource, workspace, modelID string, rows []map[string]any, ids []string) Stmt {
	return d.InsertRows(d.RecordRows(r, workspace, modelID, rows, ids))
}

// RecordRows are the rows of new records of r in workspace (values keyed by column, as for Insert),
// for InsertRows or the bulk path: workspace_id, id, model_id when model-scoped, every column but
// archived (its default), and the search text of a searched resource.
func (d Dialect) RecordRows(r *model.Resource, workspace, modelID string, rows []map[string]any, ids []string) Rows {
	cols := []string{"workspace_id", "id"}
	if r.ModelScoped {
		cols = append(cols, "model_id")
	}
	var fields []*model.Field
	for _, f := range r.Fields {
		if f.Key != "id" && f.Key != "archived" {
			fields = append(fields, f)
			cols = append(cols, f.Column)
		}
	}
	searched := len(r.Search) > 0
	if searched {
		cols = append(cols, SearchColumn)
	}
	out := Rows{Table: r.Table, Columns: cols, Values: make([][]any, len(rows))}
	flat := make([]any, len(rows)*len(cols)) // one allocation for every row's values
	for i, row := range rows {
		vals := flat[i*len(cols) : i*len(cols) : (i+1)*len(cols)]
		vals = append(vals, d.Arg(workspace), d.Arg(ids[i]))
		if r.ModelScoped {
			vals = append(vals, d.Arg(modelID))
		}
		for _, f := range fields {
			vals = append(vals, d.Arg(row[f.Column]))
		}
		if searched {
			vals = append(vals, d.Arg(SearchText(r, func(f *model.Field) any { return row[f.Column] })))
		}
		out.Values[i] = vals
	}
	return out
}

// Update sets the given columns of one record. values is keyed by column; updated_at must be included.
// An update that changes a search field must also set SearchColumn to the record's new SearchText.
func (d Dialect) Update(r *model.Resource, k Key, values map[string]any) Stmt {
	a := &args{d: d}
	var sets []string
	for _, f := range r.Fields {
		if v, ok := values[f.Column]; ok {
			sets = append(sets, Quote(f.Column)+" = "+a.add(v))
		}
	}
	if v, ok := values[SearchColumn]; ok && len(r.Search) > 0 {
		sets = append(sets, Quote(SearchColumn)+" = "+a.add(v))
	}
	sql := fmt.Sprintf("UPDATE %s SET %s WHERE %s", Quote(r.Table), strings.Join(sets, ", "), d.whereKey(r, k, a))
	return Stmt{SQL: sql, Args: a.vals}
}

// Returning makes the INSERT or UPDATE s of one record of r answer the row it wrote, with the columns
// of Get: the write and its read-back in one statement.
func (d Dialect) Returning(r *model.Resource, s Stmt) Stmt {
	return Stmt{SQL: s.SQL + " RETURNING " + d.selectList(r), Args: s.Args}
}

// ExistingIDs returns the statement selecting which of ids exist in r for workspace inside pol's record
// rule (nil: any record of the workspace).
func (d Dialect) ExistingIDs(r *model.Resource, workspace string, pol *access.Policy, ids []string) Stmt {
	a := &args{d: d}
	ph := make([]string, len(ids))
	w := a.scope(Quote("workspace_id"), workspace)
	for i, id := range ids {
		ph[i] = a.add(id)
	}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s AND %s IN (%s)", Quote("id"), Quote(r.Table), w, Quote("id"), strings.Join(ph, ", "))
	if rule := d.rule(pol, workspace, a, ""); rule != "" {
		sql += " AND " + rule
	}
	return Stmt{SQL: sql, Args: a.vals}
}
