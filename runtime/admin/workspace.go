package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
)

// The workspace's definitions: custom fields, data models and the catalog they make (docs/issue-24.md).

// workspace is the actor's workspace id.
func (a Actor) workspace() string { return a.Principal.Workspace.ID }

func (a Actor) author() audit.Author {
	return audit.Author{Workspace: a.workspace(), Member: a.Principal.Member.ID, Key: a.Principal.Key.ID, RequestID: a.RequestID}
}

// scoped is ctx inside the actor's workspace: the audit row of a change is written under its row-level
// security (PostgreSQL).
func (a Actor) scoped(ctx context.Context) context.Context {
	return store.WithWorkspace(ctx, a.workspace())
}

// record writes the audit entry of one admin write inside its transaction q.
func (s *Service) record(ctx context.Context, q store.Querier, a Actor, resource, id, action string, changes, previous map[string]any) error {
	return audit.Write(ctx, q, s.cfg.Store.Dialect(), a.author(), time.Now().UTC(), []audit.Entry{{Resource: resource, RecordID: id, Action: action, Changes: changes, Previous: previous}})
}

// CustomField is a custom field as the admin API (and recordsctl field list) shows it: its definition with the key records are written
// with (write_key, cf__<key>) and the key lists filter and sort by (filter_key, cfv:<id>).
type CustomField struct {
	ID          string   `json:"id"`
	Resource    string   `json:"resource"`
	Key         string   `json:"key"`
	WriteKey    string   `json:"write_key"`
	FilterKey   string   `json:"filter_key"`
	Type        string   `json:"type"`
	Label       string   `json:"label"`
	Description string   `json:"description"`
	Required    bool     `json:"required"`
	Unique      bool     `json:"unique"`
	Options     []string `json:"options"`
	Target      *string  `json:"target"`
	Archived    bool     `json:"archived"`
}

// CustomFieldOf is d as the API shows it.
func CustomFieldOf(d *customfields.Def) CustomField {
	f := CustomField{ID: d.ID, Resource: d.Resource, Key: d.Key, WriteKey: "cf__" + d.Key, FilterKey: d.FilterKey(), Type: d.Type, Label: d.Label,
		Description: d.Description, Required: d.Required, Unique: d.Unique, Options: d.Options, Archived: d.Archived}
	if f.Options == nil {
		f.Options = []string{}
	}
	if d.Target != "" {
		t := d.Target
		f.Target = &t
	}
	return f
}

// values is v's JSON members, for an audit entry.
func values(v any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("admin: audit values of %T: %v", v, err))
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		panic(fmt.Sprintf("admin: audit values of %T: %v", v, err))
	}
	return out
}

// diff returns the members of after whose value differs from before's, and before's values of them.
func diff(before, after map[string]any) (changes, previous map[string]any) {
	changes, previous = map[string]any{}, map[string]any{}
	for k, v := range after {
		if !audit.Same(before[k], v) {
			changes[k], previous[k] = v, before[k]
		}
	}
	return changes, previous
}

// CustomFields lists the workspace's custom fields, of resource only when it is not "", the archived
// ones only with archived (else the active ones).
func (s *Service) CustomFields(ctx context.Context, a Actor, resource string, archived bool) ([]CustomField, error) {
	if resource != "" {
		if _, ok := s.cfg.Catalog.Resource(resource); !ok {
			return nil, apierr.New(apierr.UnknownResource, "There is no resource named "+resource+"; GET /v1/admin/resources lists them.")
		}
	}
	defs, err := s.cfg.Custom.List(ctx, a.workspace())
	if err != nil {
		return nil, err
	}
	out := []CustomField{}
	for _, d := range defs {
		if (resource == "" || d.Resource == resource) && d.Archived == archived {
			out = append(out, CustomFieldOf(d))
		}
	}
	return out, nil
}

// CustomField returns custom field id of the workspace.
func (s *Service) CustomField(ctx context.Context, a Actor, id string) (CustomField, error) {
	d, err := s.cfg.Custom.Get(ctx, a.workspace(), id)
	if err != nil {
		return CustomField{}, explain("custom field", err)
	}
	return CustomFieldOf(d), nil
}

// NewCustomField is a custom field to create: the members of `recordsctl field create`.
type NewCustomField struct {
	Resource, Key, Type, Label, Description, Target string
	Required, Unique                                bool
	Options                                         []string
}

// CheckCustomField returns the problems of a custom field to create, by member (nil: none), without
// creating it: the handler reports them with those of the body's shape, all at once.
func (s *Service) CheckCustomField(in NewCustomField) field.ErrorList {
	return s.cfg.Custom.Check(in.def())
}

func (in NewCustomField) def() customfields.Def {
	return customfields.Def{Resource: in.Resource, Key: in.Key, Type: in.Type, Label: in.Label, Description: in.Description, Required: in.Required,
		Unique: in.Unique, Options: in.Options, Target: in.Target}
}

// CreateCustomField adds a custom field with the checks of recordsctl field create.
func (s *Service) CreateCustomField(ctx context.Context, a Actor, in NewCustomField) (CustomField, error) {
	d, err := s.cfg.Custom.CreateThen(a.scoped(ctx), a.workspace(), in.def(),
		func(q store.Querier, d *customfields.Def) error {
			return s.record(a.scoped(ctx), q, a, audit.AdminCustomFields, d.ID, audit.ActionCreate, values(CustomFieldOf(d)), nil)
		})
	if err != nil {
		return CustomField{}, explain("custom field", err)
	}
	return CustomFieldOf(d), nil
}

// CustomFieldChange is a change of a custom field: nil members are kept.
type CustomFieldChange struct {
	Label, Description *string
	Required           *bool
	Options            []string // nil: kept
}

// UpdateCustomField changes custom field id.
func (s *Service) UpdateCustomField(ctx context.Context, a Actor, id string, c CustomFieldChange) (CustomField, error) {
	return s.changeCustomField(ctx, a, id, customfields.Change{Label: c.Label, Description: c.Description, Required: c.Required, Options: c.Options}, audit.ActionUpdate)
}

// ArchiveCustomField archives custom field id (archived true) or restores it: its values are kept.
func (s *Service) ArchiveCustomField(ctx context.Context, a Actor, id string, archived bool) (CustomField, error) {
	action := audit.ActionArchive
	if !archived {
		action = audit.ActionRestore
	}
	return s.changeCustomField(ctx, a, id, customfields.Change{Archived: &archived}, action)
}

func (s *Service) changeCustomField(ctx context.Context, a Actor, id string, c customfields.Change, action string) (CustomField, error) {
	d, err := s.cfg.Custom.UpdateIn(a.scoped(ctx), a.workspace(), id, c, func(q store.Querier, before, after *customfields.Def) error {
		changes, previous := diff(values(CustomFieldOf(before)), values(CustomFieldOf(after)))
		return s.record(a.scoped(ctx), q, a, audit.AdminCustomFields, after.ID, action, changes, previous)
	})
	if err != nil {
		return CustomField{}, explain("custom field", err)
	}
	return CustomFieldOf(d), nil
}

// DataModels lists the workspace's data models, by name.
func (s *Service) DataModels(ctx context.Context, a Actor) ([]customfields.ModelEntry, error) {
	return s.cfg.Custom.ListModels(ctx, a.workspace())
}

// DataModel returns data model id of the workspace.
func (s *Service) DataModel(ctx context.Context, a Actor, id string) (customfields.ModelEntry, error) {
	m, err := s.cfg.Custom.Model(ctx, a.workspace(), id)
	return m, explain("data model", err)
}

// CheckDataModelFields returns the problems of a data model's fields (nil: none), without storing
// anything: the handler reports them with those of the body's shape, all at once.
func (s *Service) CheckDataModelFields(fields map[string]customfields.ModelField) field.ErrorList {
	return s.cfg.Custom.CheckModelFields(fields)
}

// CreateDataModel creates a data model with the checks of recordsctl model create.
func (s *Service) CreateDataModel(ctx context.Context, a Actor, name string, fields map[string]customfields.ModelField) (customfields.ModelEntry, error) {
	m, err := s.cfg.Custom.CreateModelThen(a.scoped(ctx), a.workspace(), name, fields, func(q store.Querier, m customfields.ModelEntry) error {
		return s.record(a.scoped(ctx), q, a, audit.AdminDataModels, m.ID, audit.ActionCreate, modelValues(m), nil)
	})
	return m, explain("data model", err)
}

// UpdateDataModel renames data model id (name "" keeps it) and replaces its fields (nil keeps them).
func (s *Service) UpdateDataModel(ctx context.Context, a Actor, id, name string, fields map[string]customfields.ModelField) (customfields.ModelEntry, error) {
	m, err := s.cfg.Custom.UpdateModelIn(a.scoped(ctx), a.workspace(), id, name, fields, func(q store.Querier, before, after customfields.ModelEntry) error {
		changes, previous := diff(modelValues(before), modelValues(after))
		return s.record(a.scoped(ctx), q, a, audit.AdminDataModels, after.ID, audit.ActionUpdate, changes, previous)
	})
	return m, explain("data model", err)
}

// modelValues are a data model's audited members: its name and fields.
func modelValues(m customfields.ModelEntry) map[string]any {
	return map[string]any{"name": m.Name, "fields": values(m.Fields)}
}

// Resources lists every resource of the workspace with its label, operations and how many custom
// fields it has (active and archived).
func (s *Service) Resources(ctx context.Context, a Actor) ([]map[string]any, error) {
	defs, err := s.cfg.Custom.List(ctx, a.workspace())
	if err != nil {
		return nil, err
	}
	active, archived := map[string]int{}, map[string]int{}
	for _, d := range defs {
		if d.Archived {
			archived[d.Resource]++
		} else {
			active[d.Resource]++
		}
	}
	out := make([]map[string]any, 0, len(s.cfg.Catalog.Resources))
	for _, r := range s.cfg.Catalog.Resources {
		sum := catalog.Summary(r)
		sum["custom_fields"], sum["archived_custom_fields"] = active[r.Name], archived[r.Name]
		out = append(out, sum)
	}
	return out, nil
}

// ResourceCatalog is the field catalog of resource as GET /v1/resources/{resource} gives it (built-in and
// custom fields, their write and filter keys), as the workspace defines it: no role's access or masks
// apply.
func (s *Service) ResourceCatalog(ctx context.Context, a Actor, resource, modelID string) (map[string]any, error) {
	r, ok := s.cfg.Catalog.Resource(resource)
	if !ok {
		return nil, apierr.New(apierr.UnknownResource, "There is no resource named "+resource+"; GET /v1/admin/resources lists them.")
	}
	workspace := records.Actor{Workspace: a.workspace(), RequestID: a.RequestID}
	c, err := s.cfg.Records.Collection(ctx, workspace, r, strings.ToLower(modelID))
	if err != nil {
		return nil, err
	}
	return s.cfg.Records.Describe(workspace, c), nil
}
