package catalog

import (
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
)

// expandHelp is how expand works, for the parameter and the query body member.
var expandHelp = fmt.Sprintf("Each expanded relation adds a member named after it beside the record's fields "+
	"(the reference field, such as `company_id`, stays): a reference's record (`company`), or null when there is none or the key "+
	"may not read it; an association's first %d linked records (`contacts`: `{data, has_more, url}`, oldest link first; "+
	"`url` is the association list endpoint, which pages through all), or null when the key may not read the target resource. "+
	"Expanded records are what a read of them gives this key: masks, hidden fields and record rules apply. "+
	"A second level as `deal.company` (which expands `deal` too); at most %d expansions per request, a second level counting its first; "+
	"`fields` selects inside them (`fields=name,company.name`), and an expansion `fields` does not select inside is whole. "+
	"Expanding a reference whose field your role masks is refused (400).",
	listplan.ExpandedLinks, listplan.MaxExpansions)

// expandParam is the expand query parameter of r's list and get.
func (d *doc) expandParam(r *model.Resource) map[string]any {
	return map[string]any{"name": "expand", "in": "query",
		"description": "Comma-separated relations to expand. " + d.relationNames(r) + " " + expandHelp,
		"schema":      map[string]any{"type": "string"}}
}

// expandMember is the expand member of r's query body.
func (d *doc) expandMember(r *model.Resource) map[string]any {
	return map[string]any{"type": "array", "maxItems": listplan.MaxFields, "items": map[string]any{"type": "string"},
		"description": "Relations to expand, as `expand` in list. " + d.relationNames(r)}
}

// relationNames describes what r's records can expand.
func (d *doc) relationNames(r *model.Resource) string {
	rels := listplan.Expandable(d.cat, r, nil)
	if len(rels) == 0 {
		return "This resource has no relations to expand."
	}
	parts := make([]string, len(rels))
	for i, rel := range rels {
		parts[i] = "`" + rel.Name + "` (" + rel.Target + ")"
	}
	return "Relations: " + strings.Join(parts, ", ") + "."
}

// recordLevels are the suffixes of the record schemas by expansion level (see recordSchema).
var recordLevels = []string{"Record", "Expanded", "Plain"}

// expandLevels says, for each schema level, which resources need it: every resource at level 0, the
// targets of any relation at level 1, and at level 2 the targets of the relations of those and every
// resource that takes writes (writes answer <Name>Plain). A resource no relation leads to has no
// <Name>Expanded schema, and a read-only one that no second-level expansion reaches no <Name>Plain (an
// unused component).
func (d *doc) expandLevels() []map[string]bool {
	if d.levels != nil {
		return d.levels
	}
	levels := make([]map[string]bool, len(recordLevels))
	levels[0] = map[string]bool{}
	for _, r := range d.cat.Resources {
		levels[0][r.Name] = true
	}
	for l := 1; l < len(levels); l++ {
		levels[l] = map[string]bool{}
		for _, r := range d.cat.Resources {
			if !levels[l-1][r.Name] {
				continue
			}
			for _, rel := range listplan.Expandable(d.cat, r, nil) {
				levels[l][rel.Target] = true
			}
		}
	}
	for _, r := range d.cat.Resources {
		if !r.ReadOnly() {
			levels[2][r.Name] = true
		}
	}
	d.levels = levels
	return levels
}

// expansionProps adds to props, the properties of r's record schema, the members its expansions add,
// whose records are of the schema named by suffix.
func (d *doc) expansionProps(r *model.Resource, props map[string]any, suffix string) {
	for _, rel := range listplan.Expandable(d.cat, r, nil) {
		t, _ := d.cat.Resource(rel.Target)
		rec := schemaRef(SchemaName(t) + suffix)
		if !rel.Many() {
			props[rel.Name] = map[string]any{"anyOf": []any{rec, map[string]any{"type": "null"}},
				"description": "With `expand=" + rel.Name + "`: the " + rel.Target + " record `" + rel.Field.Key + "` names, as this key reads it; null when it names none or the key may not read it."}
			continue
		}
		props[rel.Name] = map[string]any{"anyOf": []any{map[string]any{"type": "object", "required": []string{"data", "has_more", "url"}, "additionalProperties": false,
			"properties": map[string]any{
				"data":     map[string]any{"type": "array", "maxItems": listplan.ExpandedLinks, "items": rec, "description": fmt.Sprintf("The first %d linked records the key may read, oldest link first.", listplan.ExpandedLinks)},
				"has_more": map[string]any{"type": "boolean", "description": "More linked records follow: read them at `url`."},
				"url":      map[string]any{"type": "string", "description": "The association list endpoint of this record's " + rel.Name + "."},
			}}, map[string]any{"type": "null"}},
			"description": "With `expand=" + rel.Name + "`: the first linked " + rel.Target + " records; null when the key may not read " + rel.Target + "."}
	}
}
