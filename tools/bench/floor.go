package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/workspace-records/records/runtime/store"
)

// The floor server is the least any JSON-over-HTTP API on these tables must do: net/http, the database
// driver and encoding/json, with no authentication, limits, validation, middleware or logging. It runs
// as its own process, like recordsd, with the same database pool defaults; the ratio of recordsd to it
// is what the engine, auth and limits cost.
//
//	GET   /{table}/{id}
//	GET   /{table}?limit=N[&after_created=T&after_id=ID][&column=C&value=V][&custom_field=F&value=V]
//	POST  /{table}         (a JSON object of column values)
//	PATCH /{table}/{id}    (a JSON object of column values)
func runFloor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	dsn := fs.String("db", "", "database (recordsd --db form)")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	workspace := fs.String("workspace", "", "the workspace every statement is scoped to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx := context.Background()
	d, err := openDB(ctx, *dsn, 0)
	if err != nil {
		return err
	}
	defer d.close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	f := &floor{db: d, workspace: *workspace}
	fmt.Printf("floor serving on %s\n", ln.Addr())
	return http.Serve(ln, f)
}

type floor struct {
	db        *db
	workspace string
}

func (f *floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	table, id, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	table = "rec_" + table
	if _, ok := f.db.columns[table]; !ok {
		http.Error(w, "no such table", http.StatusNotFound)
		return
	}
	var v any
	var err error
	status := http.StatusOK
	switch {
	case r.Method == http.MethodGet && id != "":
		v, err = f.one(r.Context(), f.db.getSQL(table), f.workspace, id)
	case r.Method == http.MethodGet:
		v, err = f.list(r, table)
	case r.Method == http.MethodPost && id == "":
		status = http.StatusCreated
		v, err = f.write(r, table, "")
	case r.Method == http.MethodPatch && id != "":
		v, err = f.write(r, table, id)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch {
	case errors.Is(err, errNotFound):
		http.Error(w, "not found", http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

var errNotFound = errors.New("not found")

func (f *floor) rows(ctx context.Context, q string, args ...any) ([]map[string]any, error) {
	var out []map[string]any
	err := f.db.query(ctx, q, args, func(cols []string, vals []any) error {
		row := make(map[string]any, len(cols))
		for i, c := range cols {
			row[c] = jsonValue(c, vals[i])
		}
		out = append(out, row)
		return nil
	})
	return out, err
}

func (f *floor) one(ctx context.Context, q string, args ...any) (any, error) {
	rows, err := f.rows(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errNotFound
	}
	return map[string]any{"data": rows[0]}, nil
}

func (f *floor) list(r *http.Request, table string) (any, error) {
	q := r.URL.Query()
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit < 1 || limit > 100 {
		limit = 25
	}
	args := []any{f.workspace, f.db.archived(), limit + 1}
	var stmt string
	switch {
	case q.Has("after_id"):
		stmt = f.db.pageSQL(table, true)
		args = append(args, q.Get("after_created"), q.Get("after_id"))
	case q.Has("column"):
		if !f.db.hasColumn(table, q.Get("column")) {
			return nil, errNotFound
		}
		stmt = f.db.filterSQL(table, q.Get("column"))
		args = append(args, q.Get("value"))
	case q.Has("custom_field"):
		stmt = f.db.customSQL(table)
		args = append(args, q.Get("custom_field"), q.Get("value"))
	default:
		stmt = f.db.pageSQL(table, false)
	}
	rows, err := f.rows(r.Context(), stmt, args...)
	if err != nil {
		return nil, err
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	return map[string]any{"data": rows, "meta": map[string]any{"has_more": more, "page_size": limit}}, nil
}

func (f *floor) write(r *http.Request, table, id string) (any, error) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return nil, err
	}
	var cols []string
	var vals []any
	for k, v := range body {
		if f.db.hasColumn(table, k) {
			cols = append(cols, k)
			vals = append(vals, v)
		}
	}
	now := f.db.now()
	if id == "" {
		return f.one(r.Context(), f.db.insertSQL(table, cols), append([]any{f.workspace, store.NewID(), now, now}, vals...)...)
	}
	return f.one(r.Context(), f.db.updateSQL(table, cols), append([]any{f.workspace, id, now}, vals...)...)
}

func (d *db) hasColumn(table, col string) bool {
	for _, c := range d.columns[table] {
		if c == col && c != "workspace_id" && c != "id" {
			return true
		}
	}
	return false
}
