package records

import (
	"context"
	"errors"
	"strings"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/customfields"
)

// Collection is the resolved target of one request: a resource in one workspace (for a model-scoped
// resource, one data model of it), the workspace's custom fields of it as one snapshot, and the caller's
// policy on it. The service resolves it once per request (Service.Collection) and every operation takes
// it, so a request sees one set of definitions from its first check to its last write, and nothing
// inside a write's transaction reads definitions from the pool.
type Collection struct {
	Resource  *model.Resource
	Workspace string
	// ModelID is the data model of a model-scoped resource (lowercase UUID); "" otherwise.
	ModelID string
	// Fields are the live custom fields: the workspace's for the resource, or the data model's fields.
	Fields *customfields.Fields
	// Policy is the caller's access to the resource: level, record rule and field rules.
	Policy *access.Policy
}

// The model_id rules, all here: a model-scoped resource (data_model_records) needs the id of an existing
// data model of the workspace, given as the model_id query parameter (or, on create and query, a body
// member); any other resource refuses one.
var (
	errModelRequired = apierr.Invalid("model_id is required for data_model_records (query parameter, or body member on create and query).", nil)
	errModelNotHere  = apierr.Invalid("model_id applies to data_model_records only.", nil)
	errModelNotFound = apierr.New(apierr.NotFound, "No such data model in this workspace.")
)

// Collection resolves r for a in a's workspace; modelID is the model_id the request gave ("" for none).
func (s *Service) Collection(ctx context.Context, a Actor, r *model.Resource, modelID string) (*Collection, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	c := &Collection{Resource: r, Workspace: a.Workspace, Policy: a.Policy(r)}
	if !r.ModelScoped {
		if modelID != "" {
			return nil, errModelNotHere
		}
		fs, err := s.customFields(ctx, a.Workspace, r)
		if err != nil {
			return nil, err
		}
		c.Fields = fs
		return c, nil
	}
	switch {
	case modelID == "":
		return nil, errModelRequired
	case !model.IsUUID(modelID):
		return nil, apierr.InvalidField(field.CodeFormat, "model_id", "must be a UUID")
	}
	c.ModelID = strings.ToLower(modelID)
	fs, err := s.models(ctx, a.Workspace, c.ModelID)
	if errors.Is(err, customfields.ErrModelNotFound) {
		return nil, errModelNotFound
	}
	if err != nil {
		return nil, err
	}
	c.Fields = fs
	return c, nil
}

// ModelInBody takes model_id out of a create or query body: the data model may be named there instead of
// in the query (fromQuery), and when both name one they must agree. It returns the model id to resolve.
func ModelInBody(body map[string]any, fromQuery string) (string, error) {
	v, ok := body["model_id"]
	if !ok {
		return fromQuery, nil
	}
	delete(body, "model_id")
	s, isStr := v.(string)
	if !isStr {
		return "", apierr.InvalidField(field.CodeType, "model_id", "must be a UUID string")
	}
	s = strings.ToLower(s)
	if fromQuery != "" && !strings.EqualFold(fromQuery, s) {
		return "", apierr.Invalid("model_id in the query and in the body differ.", nil)
	}
	return s, nil
}

// customFields returns the custom fields of r in workspace.
func (s *Service) customFields(ctx context.Context, workspace string, r *model.Resource) (*customfields.Fields, error) {
	if s.custom == nil {
		return customfields.Empty(), nil
	}
	snap, err := s.custom.For(ctx, workspace)
	if err != nil {
		return nil, err
	}
	return snap.Resource(r.Name), nil
}

// models returns the fields of data model modelID, or customfields.ErrModelNotFound.
func (s *Service) models(ctx context.Context, workspace, modelID string) (*customfields.Fields, error) {
	if s.custom == nil {
		return nil, customfields.ErrModelNotFound
	}
	return s.custom.ForModel(ctx, workspace, modelID)
}
