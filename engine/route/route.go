// Package route describes the record API's routes as data: which method and path serve which operation
// of which resource. The same operation sets drive routing, 405 Allow headers, catalogs and the OpenAPI
// document, so they cannot disagree.
package route

import (
	"sort"
	"strings"

	"github.com/workspace-records/records/engine/model"
)

// Shape is the form of a record path.
type Shape uint8

// Record path shapes.
const (
	Collection Shape = iota + 1 // /v1/{resource}
	Query                       // /v1/{resource}/query
	Item                        // /v1/{resource}/{id}
	Restore                     // /v1/{resource}/{id}/restore
	Links                       // /v1/{resource}/{id}/{association}
	Link                        // /v1/{resource}/{id}/{association}/{target_id}
)

// Route is one method on one path pattern (bunrouter syntax).
type Route struct {
	Method   string
	Path     string
	Resource *model.Resource
	Op       model.Operation
	Shape    Shape
}

// opRoute says where each operation lives.
var opRoute = map[model.Operation]struct {
	method string
	shape  Shape
}{
	model.OpList:    {"GET", Collection},
	model.OpCreate:  {"POST", Collection},
	model.OpQuery:   {"POST", Query},
	model.OpGet:     {"GET", Item},
	model.OpUpdate:  {"PATCH", Item},
	model.OpArchive: {"DELETE", Item},
	model.OpRestore: {"POST", Restore},
}

// Where returns the method and path shape that serve op.
func Where(op model.Operation) (method string, shape Shape) {
	w := opRoute[op]
	return w.method, w.shape
}

// Pattern returns the path pattern of shape for resource name.
func Pattern(name string, s Shape) string {
	switch s {
	case Query:
		return "/v1/" + name + "/query"
	case Item:
		return "/v1/" + name + "/:id"
	case Restore:
		return "/v1/" + name + "/:id/restore"
	}
	return "/v1/" + name
}

// Table returns every route the catalog's resources allow.
func Table(cat *model.Catalog) []Route {
	var out []Route
	for _, r := range cat.Resources {
		for _, op := range r.Ops.List() {
			w := opRoute[op]
			out = append(out, Route{Method: w.method, Path: Pattern(r.Name, w.shape), Resource: r, Op: op, Shape: w.shape})
		}
	}
	return out
}

// Allow returns the methods r allows on shape, sorted. Links are listed with GET; a link is put and
// deleted on resources that take updates.
func Allow(r *model.Resource, s Shape) []string {
	switch s {
	case Links:
		return []string{"GET"}
	case Link:
		if r.Ops.Has(model.OpUpdate) {
			return []string{"DELETE", "PUT"}
		}
		return nil
	}
	var out []string
	for _, op := range r.Ops.List() {
		if w := opRoute[op]; w.shape == s {
			out = append(out, w.method)
		}
	}
	sort.Strings(out)
	return out
}

// Match classifies a request path under /v1 that no route served. It returns the resource and shape when
// the path has the form of a record path of a known resource; unknownResource is true when the first
// segment after /v1 is not a resource name.
func Match(cat *model.Catalog, path string) (r *model.Resource, s Shape, unknownResource bool) {
	rest, ok := strings.CutPrefix(path, "/v1/")
	if !ok || rest == "" {
		return nil, 0, false
	}
	segs := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	name := segs[0]
	switch name {
	case "resources", "me", "openapi.json":
		return nil, 0, false
	}
	r, ok = cat.Resource(name)
	if !ok {
		return nil, 0, true
	}
	switch {
	case len(segs) == 1:
		return r, Collection, false
	case len(segs) == 2 && segs[1] == "query":
		return r, Query, false
	case len(segs) == 2:
		return r, Item, false
	case len(segs) == 3 && segs[2] == "restore":
		return r, Restore, false
	case len(segs) == 3 && isAssociation(r, segs[2]):
		return r, Links, false
	case len(segs) == 4 && isAssociation(r, segs[2]):
		return r, Link, false
	}
	return nil, 0, false
}

func isAssociation(r *model.Resource, name string) bool {
	_, ok := r.Association(name)
	return ok
}
