package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
)

// Demo is what SeedDemo created.
type Demo struct {
	Workspace string
	Admin     string
	Secret    string
	Records   int
}

// groupOrder seeds vocabularies before the records that point at them.
var groupOrder = []string{"sales_vocabulary", "activity_vocabulary", "delivery_vocabulary", "workspace", "crm", "delivery", "custom"}

// demoCounts is how many records of each group the demo holds.
var demoCounts = map[string]int{"sales_vocabulary": 6, "activity_vocabulary": 5, "delivery_vocabulary": 5, "workspace": 6, "crm": 40, "delivery": 25, "custom": 10}

// SeedDemo fills an empty database with a demo workspace on the growth plan: an admin, two more
// members, a write key for the admin and realistic records across every resource. It returns nil when
// the database already holds a workspace.
func SeedDemo(ctx context.Context, b *Backend, now time.Time) (*Demo, error) {
	g := b.Current()
	found, err := store.QueryOne(ctx, b.Store, b.Store.Dialect().Bind("SELECT 1 FROM workspaces"), func([]any) error { return nil })
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if found {
		return nil, nil
	}
	w, err := b.Members.CreateWorkspace(ctx, "Demo Workspace", "growth")
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	admin, err := b.Members.CreateMember(ctx, w.ID, members.MemberProfile{Email: "ada.admin@demo.example", Role: "admin", FirstName: "Ada", LastName: "Admin"})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	for _, m := range []members.MemberProfile{
		{Email: "sam.rivera@demo.example", Role: "member", FirstName: "Sam", LastName: "Rivera"},
		{Email: "vic.chen@demo.example", Role: "viewer", FirstName: "Vic", LastName: "Chen"},
	} {
		if _, err := b.Members.CreateMember(ctx, w.ID, m); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
	}
	_, secret, err := b.Directory.CreateKey(ctx, admin.ID, auth.KeyOptions{Access: "write", ExpiresIn: auth.MaxKeyLifetime})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	demo := &Demo{Workspace: w.ID, Admin: admin.ID, Secret: secret}
	modelID, err := g.Custom.CreateModel(ctx, w.ID, "Vendors", map[string]customfields.ModelField{
		"category": {Type: "string", Label: "Category", Options: []string{"software", "hardware", "services"}},
		"website":  {Type: "url", Label: "Website"},
	})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	gen := sample.New(42)
	a := records.Actor{Workspace: w.ID, Member: admin.ID}
	gen.SetLookup(b.SampleLookup(ctx, a))
	ids := map[string][]string{}
	refs := func(resource string) []string { return ids[resource] }
	byGroup := map[string][]*model.Resource{}
	for _, r := range g.Catalog.CreationOrder() {
		byGroup[r.Group] = append(byGroup[r.Group], r)
	}
	for _, group := range groupOrder {
		for _, r := range byGroup[group] {
			if r.Name == "entity_members" {
				continue // the members above are its records
			}
			mid := ""
			if r.ModelScoped {
				mid = modelID
			}
			bodies := make([]map[string]any, demoCounts[group])
			for i := range bodies {
				bodies[i] = gen.Body(r, refs, now)
			}
			n, err := g.Records.Import(ctx, a, r, mid, bodies)
			if err != nil {
				return nil, fmt.Errorf("demo %s: %w", r.Name, err)
			}
			demo.Records += n
			if !r.ModelScoped {
				if ids[r.Name], err = g.Records.IDs(ctx, w.ID, r, "", 1000); err != nil {
					return nil, err
				}
			}
		}
		if group == "workspace" {
			if em, ok := g.Catalog.Resource("entity_members"); ok {
				if ids["entity_members"], err = g.Records.IDs(ctx, w.ID, em, "", 1000); err != nil {
					return nil, err
				}
			}
		}
	}
	return demo, nil
}

// WriteKeyFile writes secret to path (mode 0600), creating its directory.
func WriteKeyFile(path, secret string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SampleLookup reads records of a's workspace for the sample generator (sample.Generator.SetLookup),
// as the API would show them to a, caching each one: generated bodies then keep the rules that depend
// on the records they refer to. A record that cannot be read is unknown (nil).
func (b *Backend) SampleLookup(ctx context.Context, a records.Actor) sample.Lookup {
	g := b.Current()
	cache := map[string]map[string]any{}
	return func(resource, id string) map[string]any {
		if rec, ok := cache[id]; ok {
			return rec
		}
		var out map[string]any
		if r, ok := g.Catalog.Resource(resource); ok && !r.ModelScoped {
			if c, err := g.Records.Collection(ctx, a, r, ""); err == nil {
				if rec, err := g.Records.Get(ctx, c, id, nil); err == nil {
					out = jsonShaped(rec)
				}
			}
		}
		cache[id] = out
		return out
	}
}

// jsonShaped returns rec as a JSON round trip with UseNumber shows it.
func jsonShaped(rec records.Record) map[string]any {
	data, err := json.Marshal(rec)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out map[string]any
	if dec.Decode(&out) != nil {
		return nil
	}
	return out
}
