package customfields_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// The data model operations of the registry: a model refused is an *InvalidError (ErrInvalidModel, its
// problems by field, worded "invalid argument" as recordsctl has always printed it), a name taken an
// *ExistsError, a model of another workspace ErrModelNotFound; and an update is served by the same
// registry at once, without waiting for MaxAge. (Written by a helper on a parallel branch, adapted.)
func TestModelOperations(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			be := servertest.OpenBackend(t, b)
			ws, err := be.Members.CreateWorkspace(ctx, "Models", "growth")
			if err != nil {
				t.Fatal(err)
			}
			other, err := be.Members.CreateWorkspace(ctx, "Other", "growth")
			if err != nil {
				t.Fatal(err)
			}
			reg := be.Current().Custom

			_, err = reg.CreateModel(ctx, ws.ID, "Bad", map[string]customfields.ModelField{"x": {Type: "colour"}, "p": {Type: "reference", Target: "compnies"}})
			var invalid *customfields.InvalidError
			var list field.ErrorList
			if !errors.As(err, &invalid) || !errors.Is(err, customfields.ErrInvalidModel) || errors.Is(err, customfields.ErrInvalid) || !errors.As(err, &list) || len(list) != 2 ||
				list[0].Field != "fields.p.target" || list[1].Field != "fields.x.type" || !strings.HasPrefix(err.Error(), "invalid argument: ") {
				t.Fatalf("refused model: %v (%#v)", err, list)
			}
			id, err := reg.CreateModel(ctx, ws.ID, "Vendors", map[string]customfields.ModelField{"category": {Type: "string"}})
			if err != nil {
				t.Fatal(err)
			}
			var exists *customfields.ExistsError
			if _, err := reg.CreateModel(ctx, ws.ID, "Vendors", nil); !errors.As(err, &exists) || !errors.Is(err, customfields.ErrInvalidModel) {
				t.Errorf("a name taken: %v", err)
			}
			if _, err := reg.Model(ctx, other.ID, id); !errors.Is(err, customfields.ErrModelNotFound) || err.Error() != "model "+id+": "+customfields.ErrModelNotFound.Error() {
				t.Errorf("another workspace's model: %v", err)
			}
			if _, err := reg.UpdateModelIn(ctx, other.ID, id, "Mine", nil, nil); !errors.Is(err, customfields.ErrModelNotFound) {
				t.Errorf("another workspace's model updated: %v", err)
			}

			// The clock stands still: only the update itself can make the registry read the fields again.
			now := time.Now()
			customfields.SetClock(reg, func() time.Time { return now })
			if f, err := reg.ForModel(ctx, ws.ID, id); err != nil || len(f.Defs) != 1 {
				t.Fatalf("model fields: %v, %v", f, err)
			}
			if err := reg.UpdateModel(ctx, id, "Suppliers", map[string]customfields.ModelField{"category": {Type: "string"}, "size": {Type: "integer"}}); err != nil {
				t.Fatal(err)
			}
			if f, err := reg.ForModel(ctx, ws.ID, id); err != nil {
				t.Fatal(err)
			} else if _, ok := f.ByKey("size"); !ok {
				t.Error("the registry that stored the update serves the fields from before it")
			}
			if m, err := reg.Model(ctx, ws.ID, id); err != nil || m.Name != "Suppliers" || len(m.Fields) != 2 {
				t.Errorf("model after update: %+v, %v", m, err)
			}
			if l, err := reg.ListModels(ctx, ws.ID); err != nil || len(l) != 1 || l[0].ID != id {
				t.Errorf("model list: %+v, %v", l, err)
			}
		})
	}
}
