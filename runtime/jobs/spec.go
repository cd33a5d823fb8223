package jobs

import (
	"strings"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/records"
)

// ReadSpec reads a job's creation body (POST /v1/jobs; recordsctl jobs builds one from its flags) in
// catalog cat: its type, resource and spec, or a 400 naming every member that is wrong.
func ReadSpec(cat *model.Catalog, body map[string]any) (string, *model.Resource, Spec, error) {
	var errs field.ErrorList
	bad := func(name string, code field.Code, msg string) {
		errs = append(errs, field.New(code, field.NewPath(name), msg))
	}
	text := func(name string) string {
		v, ok := body[name]
		if !ok {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			bad(name, field.CodeType, "must be a string")
		}
		return s
	}
	kind, resource, format := text("type"), text("resource"), text("format")
	var spec Spec
	allowed := map[string]bool{"type": true, "resource": true, "format": true, "model_id": true}
	switch kind {
	case KindImport:
		for _, k := range []string{"operation", "key", "mapping", "dry_run"} {
			allowed[k] = true
		}
	case KindExport:
		allowed["query"] = true
	case "":
		bad("type", field.CodeRequired, "is required: import or export")
	default:
		bad("type", field.CodeOption, "must be import or export")
	}
	for k := range body {
		if !allowed[k] {
			bad(k, field.CodeUnknown, "is not a member of a job of this type")
		}
	}
	switch format {
	case "":
		format = "csv"
	case "csv", "ndjson":
	default:
		bad("format", field.CodeOption, "must be csv or ndjson")
	}
	spec.Format = format
	r, ok := cat.Resource(resource)
	switch {
	case resource == "":
		bad("resource", field.CodeRequired, "is required")
	case !ok:
		bad("resource", field.CodeOption, "is not a resource of this API")
	}
	// A data model's records: the job names the model (as a list or a write of them does).
	spec.ModelID = strings.ToLower(text("model_id"))
	if q, isObj := body["query"].(map[string]any); isObj && spec.ModelID == "" && kind == KindExport {
		if m, isStr := q["model_id"].(string); isStr {
			spec.ModelID = strings.ToLower(m) // an export's query may name it, as a list's does
		}
	}
	switch {
	case ok && r.ModelScoped && spec.ModelID == "":
		bad("model_id", field.CodeRequired, "is required: the data model whose records the job imports or exports")
	case ok && !r.ModelScoped && spec.ModelID != "":
		bad("model_id", field.CodeUnknown, "only "+resource+"'s data model records take a model_id")
	case spec.ModelID != "" && !model.IsUUID(spec.ModelID):
		bad("model_id", field.CodeFormat, "must be a data model's id (a UUID)")
	}
	if kind == KindImport {
		spec.Operation = text("operation")
		if spec.Operation == "" {
			spec.Operation = records.ItemCreate
		}
		spec.Key = text("key")
		if v, ok := body["dry_run"]; ok {
			b, isBool := v.(bool)
			if !isBool {
				bad("dry_run", field.CodeType, "must be a boolean")
			}
			spec.DryRun = b
		}
		if m, ok := body["mapping"]; ok {
			obj, isObj := m.(map[string]any)
			if !isObj {
				bad("mapping", field.CodeType, "must be an object of column names to field keys")
			}
			spec.Mapping = map[string]string{}
			for col, v := range obj {
				s, isStr := v.(string)
				if !isStr {
					bad("mapping."+col, field.CodeType, "must be a field key, or \"\" to skip the column")
				}
				spec.Mapping[col] = s
			}
		}
		if ok && r != nil {
			switch spec.Operation {
			case records.ItemCreate:
				if !r.Ops.Has(model.OpCreate) {
					bad("operation", field.CodeInvalid, "the resource takes no creates")
				}
			case records.ItemUpdate:
				if !r.Ops.Has(model.OpUpdate) {
					bad("operation", field.CodeInvalid, "the resource takes no updates")
				}
			case records.ItemUpsert:
				if !r.Ops.Has(model.OpCreate) || !r.Ops.Has(model.OpUpdate) {
					bad("operation", field.CodeInvalid, "the resource takes no upserts")
				} else if spec.Key == "" {
					bad("key", field.CodeRequired, "an upsert names the unique key its rows are matched by")
				}
			default:
				bad("operation", field.CodeOption, "must be create, update or upsert")
			}
			if spec.Key != "" && spec.Operation != records.ItemUpsert {
				bad("key", field.CodeInvalid, "only an upsert takes a key")
			}
		}
	}
	if kind == KindExport {
		q := map[string]any{}
		if v, ok := body["query"]; ok {
			obj, isObj := v.(map[string]any)
			if !isObj {
				bad("query", field.CodeType, "must be an object: the body of POST /v1/{resource}/query")
			}
			q = obj
		}
		for _, k := range []string{"page", "page_size", "cursor", "count", "expand"} {
			if _, ok := q[k]; ok {
				bad("query."+k, field.CodeUnknown, "an export walks every record; it takes no "+k)
			}
		}
		spec.Query = q
	}
	if len(errs) > 0 {
		return "", nil, spec, apierr.Invalid("", errs)
	}
	return kind, r, spec, nil
}
