// Package catalog renders the discovery documents of GET /v1/resources and GET /v1/resources/{resource}
// from the model and the compiled write schemas.
package catalog

import (
	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/engine/schema"
)

// Summary is one entry of GET /v1/resources: the resource, its operations and, where its records have a
// history (route.Histories), the path of a record's history.
func Summary(r *model.Resource) map[string]any {
	ops := make([]string, 0, 7)
	for _, op := range r.Ops.List() {
		ops = append(ops, op.String())
	}
	out := map[string]any{
		"name":         r.Name,
		"label":        r.Label,
		"label_plural": r.LabelPlural,
		"group":        r.Group,
		"description":  r.Description,
		"path":         "/v1/" + r.Name,
		"operations":   ops,
		"read_only":    r.ReadOnly(),
		"searchable":   len(r.Search) > 0,
		"model_scoped": r.ModelScoped,
	}
	if route.Histories(r) {
		out["history_path"] = route.OpenAPIPath(route.Pattern(r.Name, route.History))
	}
	return out
}

// Field renders one field for the catalog.
func Field(f *model.Field) map[string]any {
	out := map[string]any{
		"key":        f.Key,
		"label":      f.Label,
		"type":       f.Type.String(),
		"required":   f.Required,
		"writable":   f.Writable(),
		"read_only":  !f.Writable(),
		"managed":    f.Managed,
		"sortable":   f.Sortable,
		"filterable": f.Filterable,
		"unique":     f.Unique,
	}
	if f.Description != "" {
		out["description"] = f.Description
	}
	if f.Formula != nil {
		out["formula"] = f.Formula.Expr
	}
	if f.Filterable {
		out["filter_key"] = f.Key
	}
	if len(f.Options) > 0 {
		out["options"] = f.Options
	}
	if f.Type.Textual() {
		out["max_length"] = f.MaxLength
		if f.MinLength > 0 {
			out["min_length"] = f.MinLength
		}
	}
	if f.Minimum != nil {
		out["minimum"] = *f.Minimum
	}
	if f.Maximum != nil {
		out["maximum"] = *f.Maximum
	}
	if f.Target != "" {
		out["target"] = f.Target
	}
	if f.Default != nil {
		out["default"] = model.JSONValue(f, f.Default)
	}
	return out
}

// Document is the field catalog of r as pol's caller sees it: GET /v1/resources/{resource}. Each field
// says whether this caller may write it and whether it is visible, masked or hidden; sort keys, filter
// keys and search leave out what the caller cannot read. reach tells which resources the caller may use
// at all (nil: every one): a reference field into a resource it does not reach is not writable, and an
// association is writable (and its attributes with it) only when pol allows writes and the caller
// reaches its target, as for a link.
func Document(r *model.Resource, sch *schema.Resource, pol *access.Policy, reach func(resource string) bool) map[string]any {
	if reach == nil {
		reach = func(string) bool { return true }
	}
	// reaches reports whether a value of f points only where the caller may go.
	reaches := func(f *model.Field) bool { return f.Type != model.Reference || reach(f.Target) }
	// canWrite: the caller may write values of r at all.
	canWrite := pol.Level == access.Write && !r.ReadOnly()
	doc := Summary(r)
	fields := make([]any, 0, len(r.Fields))
	var required []string
	var sortKeys []string
	for _, f := range r.Fields {
		entry := Field(f)
		readable := pol.Readable(f.Key)
		entry["visibility"] = pol.Visibility(f.Key).String()
		writable := canWrite && pol.Writable(f) && reaches(f)
		entry["writable"] = writable
		entry["read_only"] = !writable
		entry["sortable"] = f.Sortable && readable
		entry["filterable"] = f.Filterable && readable
		if !readable {
			delete(entry, "filter_key")
		}
		fields = append(fields, entry)
		if f.Required && f.Writable() {
			required = append(required, f.Key)
		}
		if f.Sortable && readable {
			sortKeys = append(sortKeys, f.Key)
		}
	}
	filters := []any{}
	for _, f := range r.FilterFields() {
		if pol.Readable(f.Key) {
			filters = append(filters, map[string]any{"key": f.Key, "field": f.Key, "type": f.Type.String(), "ops": f.Ops()})
		}
	}
	// Filter paths: the relations a filter key may cross (relation.key, one level), those whose reference
	// field the caller can read and filter on, into resources the caller reaches; the keys are the
	// target's own filter keys, as its catalog lists them for the caller.
	paths := []any{}
	for _, rel := range r.Relations() {
		if (rel.Field != nil && !(rel.Field.Filterable && pol.Readable(rel.Field.Key))) || !reach(rel.Target) {
			continue
		}
		entry := map[string]any{"relation": rel.Name, "target": rel.Target, "keys": rel.Name + ".<a filter key of " + rel.Target + ">"}
		if rel.Field != nil {
			entry["kind"], entry["field"], entry["matches"] = "reference", rel.Field.Key, "the referenced record matches"
		} else {
			entry["kind"], entry["matches"] = "association", "at least one linked record matches"
		}
		paths = append(paths, entry)
	}
	assocs := []any{}
	for _, a := range r.Associations {
		// A link is written from a resource that takes updates, by a caller who may write it and use the
		// target (engine/route and httpapi's association check).
		linkable := canWrite && r.Ops.Has(model.OpUpdate) && reach(a.Target)
		attrs := make([]any, 0, len(a.Attributes))
		for _, f := range a.Attributes {
			entry := Field(f)
			writable := linkable && f.Writable() && reaches(f)
			entry["writable"], entry["read_only"] = writable, !writable
			attrs = append(attrs, entry)
		}
		entry := map[string]any{"name": a.Name, "label": a.Label, "target": a.Target, "attributes": attrs, "path": "/v1/" + r.Name + "/{id}/" + a.Name, "writable": linkable}
		if a.Inverse != "" {
			entry["inverse"] = a.Inverse
		}
		assocs = append(assocs, entry)
	}
	search := make([]string, 0, len(r.Search))
	searchable := len(r.Search) > 0
	for _, f := range r.Search {
		search = append(search, f.Key)
		searchable = searchable && pol.Readable(f.Key)
	}
	if required == nil {
		required = []string{}
	}
	doc["fields"] = fields
	doc["required"] = required
	doc["sort_keys"] = sortKeys
	doc["unique_keys"] = UniqueKeys(r)
	doc["record_rule"] = pol.Rule.String()
	doc["default_sort"] = map[string]any{"key": "created_at", "order": "desc"}
	doc["filter_keys"] = filters
	doc["filter_join"] = []string{"and", "or"}
	doc["filter_paths"] = paths
	doc["search"] = map[string]any{"supported": searchable, "fields": search}
	doc["searchable"] = searchable
	doc["associations"] = assocs
	doc["custom_fields"] = []any{}
	doc["custom_field_forms"] = []string{"cf__<key>", "custom_fields"}
	if sch != nil && !r.ReadOnly() {
		doc["schema"] = map[string]any{"create": sch.Doc(schema.Create), "update": sch.Doc(schema.Update)}
	}
	return doc
}

// UniqueKeys lists the declared fields of r that are unique keys: at most one active (non-archived)
// record of a workspace holds each value. Archived records hold none, so restoring one whose value is
// now taken is refused with 409 conflict.
func UniqueKeys(r *model.Resource) []string {
	keys := []string{}
	for _, f := range r.Fields {
		if f.Unique {
			keys = append(keys, f.Key)
		}
	}
	return keys
}
