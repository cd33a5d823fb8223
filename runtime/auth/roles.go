package auth

import (
	"encoding/json"
	"fmt"

	"github.com/workspace-records/records/engine/model"
)

// The roles of a member, as every request resolves them: a built-in role of the definitions version, or
// a role of the member's workspace, stored as JSON (runtime/members writes them).

// ResolveRole returns cat's built-in role name or, failing that, the workspace role stored as def (nil
// when the workspace has no such role either).
func ResolveRole(cat *model.Catalog, name string, def any) (*model.Role, error) {
	if r, ok := cat.Role(name); ok {
		return r, nil
	}
	if def == nil {
		return nil, nil
	}
	r, err := DecodeRole(name, def)
	if err != nil {
		return nil, fmt.Errorf("role %s: %w", name, err)
	}
	return r, nil
}

// DecodeRole reads the workspace role name stored as def (JSON text, bytes, or a decoded object).
func DecodeRole(name string, def any) (*model.Role, error) {
	var r model.Role
	var data []byte
	switch x := def.(type) {
	case string:
		data = []byte(x)
	case []byte:
		data = x
	case map[string]any:
		data, _ = json.Marshal(x)
	default:
		return nil, fmt.Errorf("unexpected role definition %T", def)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	r.Name = name
	return &r, nil
}
