package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
)

// Workspace is what one workspace adds to its document (OpenAPIFor), as one caller may see it.
type Workspace struct {
	// Name is the workspace's name, for the document's description.
	Name string
	// Resources holds, for each resource the caller may read, its custom fields: the workspace's custom
	// fields of the resource, or for a model-scoped resource the fields of the workspace's data models.
	// A resource that is absent keeps the generic, untyped custom_fields.
	Resources map[string][]CustomField
}

// CustomField is one custom field of a resource in a workspace.
type CustomField struct {
	// Field is the field as records hold it: Key is its write key (custom_fields.<key>, cf__<key>).
	Field *model.Field
	// Model names the data model whose field it is ("" for a custom field of the workspace).
	Model string
}

// description tells the reader of a workspace's document what it adds.
func (ws *Workspace) description() string {
	names := make([]string, 0, len(ws.Resources))
	fields := 0
	for name, cf := range ws.Resources {
		if len(cf) > 0 {
			names = append(names, "`"+name+"`")
			fields += len(cf)
		}
	}
	sort.Strings(names)
	text := fmt.Sprintf("**This workspace's document.** Served for the key that asked, in the workspace %q: the %d custom fields "+
		"(data model fields included) of the resources this key may read are typed properties of `custom_fields` and `cf__<key>` "+
		"members", ws.Name, fields)
	if len(names) > 0 {
		text += " (" + strings.Join(names, ", ") + ")"
	}
	return text + ". Resources the key may not read keep the generic, untyped custom fields. Generate clients again after " +
		"the workspace changes its custom fields; `GET /v1/openapi.json` without a key is the generic document."
}

// customProps returns the typed custom fields of r in the workspace's document, keyed by write key: their
// response form (nullable, formats described) when resp, else their write form. typed is false in the
// generic document and for a resource the caller may not read. A key that two data models declare
// differently takes either form.
func (d *doc) customProps(r *model.Resource, resp bool) (props map[string]any, typed bool) {
	if d.ws == nil {
		return nil, false
	}
	fields, ok := d.ws.Resources[r.Name]
	if !ok {
		return nil, false
	}
	props = map[string]any{}
	models := map[string][]string{}
	var keys []string
	for _, cf := range fields {
		f := cf.Field
		var p map[string]any
		if resp {
			p = responseProperty(f)
		} else {
			p = withNumberFormat(schema.Property(f))
			delete(p, "default")
			if f.Required {
				// Required means present on create; an update may leave the field out.
				p["description"] = strings.TrimSpace(desc(p) + " Required.")
			}
		}
		prev, seen := props[f.Key]
		switch {
		case !seen:
			keys = append(keys, f.Key)
		case reflect.DeepEqual(prev, p):
			p = prev.(map[string]any)
		default:
			alts, _ := prev.(map[string]any)["anyOf"].([]any)
			if alts == nil {
				alts = []any{prev}
			}
			p = map[string]any{"anyOf": append(alts, p)}
		}
		props[f.Key] = p
		if cf.Model != "" {
			models[f.Key] = append(models[f.Key], cf.Model)
		}
	}
	for _, k := range keys {
		if m := models[k]; len(m) > 0 {
			p := props[k].(map[string]any)
			p["description"] = strings.TrimSpace(desc(p) + " Field of the data model" + plural(len(m)) + " " + strings.Join(m, ", ") + ".")
		}
	}
	return props, true
}

// requiredCustom returns the write keys of r's required custom fields in the workspace's document.
func (d *doc) requiredCustom(r *model.Resource) []string {
	if d.ws == nil {
		return nil
	}
	var out []string
	for _, cf := range d.ws.Resources[r.Name] {
		if cf.Field.Required && !r.ModelScoped {
			out = append(out, cf.Field.Key)
		}
	}
	return out
}

// Fingerprint identifies what ws changes in the document: two workspaces with the same fingerprint have
// the same document, so a server may keep documents by it.
func (ws *Workspace) Fingerprint() string {
	names := make([]string, 0, len(ws.Resources))
	for name := range ws.Resources {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := []any{ws.Name}
	for _, name := range names {
		fields := []any{name}
		for _, cf := range ws.Resources[name] {
			fields = append(fields, []any{cf.Field.Key, cf.Model, schema.Property(cf.Field), responseProperty(cf.Field)})
		}
		parts = append(parts, fields)
	}
	data, err := json.Marshal(parts)
	if err != nil {
		panic("catalog: fingerprint: " + err.Error()) // maps of JSON values always encode
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
