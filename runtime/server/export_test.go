package server

import (
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/records"
)

// GenerationRef lets the tests watch the lifetime of one generation (generation.go).
type GenerationRef struct{ g *generation }

// ServedGeneration returns the generation s serves now.
func (s *Server) ServedGeneration() GenerationRef { return GenerationRef{s.backend.gen.Load()} }

// Refs is the number of references to the generation: 1 for being served, plus one per request or
// webhook drain running on it; 0 once drained.
func (r GenerationRef) Refs() int64 { return r.g.refs.Load() }

// PluginUsers is the number of generations not yet drained that use the generation's plugin host.
func (r GenerationRef) PluginUsers() int32 { return r.g.host.users.Load() }

// Version is the definitions version of the generation.
func (r GenerationRef) Version() string { return r.g.Set.ID }

// Records is the generation's record service.
func (r GenerationRef) Records() *records.Service { return r.g.Records }

// PluginPIDs are the processes of the generation's plugin host (none once it stopped).
func (r GenerationRef) PluginPIDs() []int {
	var pids []int
	for _, st := range r.g.Plugins.Statuses() {
		if st.Running && st.PID > 0 {
			pids = append(pids, st.PID)
		}
	}
	return pids
}

// Catalog is the generation's catalog.
func (r GenerationRef) Catalog() *model.Catalog { return r.g.Catalog }
