package records

import (
	"context"
	"fmt"

	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/model"
)

// WorkspaceFields returns what a's workspace adds to its OpenAPI document (catalog.OpenAPIFor) for a
// caller who may read the resources readable accepts: the custom fields of those resources, and the
// fields of the workspace's data models when it may read the model-scoped resource. What it may not read
// is left out, so its document tells nothing of it. name is the workspace's name.
func (s *Service) WorkspaceFields(ctx context.Context, a Actor, name string, readable func(*model.Resource) bool) (*catalog.Workspace, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	ws := &catalog.Workspace{Name: name, Resources: map[string][]catalog.CustomField{}}
	for _, r := range s.cat.Resources {
		if !readable(r) {
			continue
		}
		var fields []catalog.CustomField
		switch {
		case r.ModelScoped && s.custom != nil:
			models, err := s.custom.Models(ctx, a.Workspace)
			if err != nil {
				return nil, err
			}
			for _, m := range models {
				fs, err := s.models(ctx, a.Workspace, m.ID)
				if err != nil {
					return nil, fmt.Errorf("data model %s: %w", m.ID, err)
				}
				for _, d := range fs.Defs {
					fields = append(fields, catalog.CustomField{Field: fs.Field(d), Model: m.Name})
				}
			}
		case !r.ModelScoped:
			fs, err := s.customFields(ctx, a.Workspace, r)
			if err != nil {
				return nil, err
			}
			for _, d := range fs.Defs {
				fields = append(fields, catalog.CustomField{Field: fs.Field(d)})
			}
		}
		ws.Resources[r.Name] = fields
	}
	return ws, nil
}

// OpenAPIFor returns the document of the service's definitions for ws (nil: the generic document).
func (s *Service) OpenAPIFor(ws *catalog.Workspace) map[string]any {
	return catalog.OpenAPIFor(s.cat, s.schemas, ws)
}
