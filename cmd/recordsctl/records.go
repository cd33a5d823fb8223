package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server"
)

func resourceOf(b *server.Backend, name string) (*model.Resource, error) {
	r, ok := b.Current().Catalog.Resource(name)
	if !ok {
		return nil, errors.New(suggest.Unknown("resource", name, b.Current().Catalog.ResourceNames(false)))
	}
	return r, nil
}

func cmdImport(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	res := fs.String("resource", "", "resource name")
	file := fs.String("file", "", "JSON Lines file, one record body per line")
	modelID := fs.String("model-id", "", "data model id (data_model_records)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "records import --workspace W --resource R --file F.jsonl"), required("workspace", *ws), required("resource", *res), required("file", *file)); err != nil {
			return err
		}
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		var bodies []map[string]any
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if text == "" {
				continue
			}
			dec := json.NewDecoder(strings.NewReader(text))
			dec.UseNumber()
			var body map[string]any
			if err := dec.Decode(&body); err != nil || body == nil {
				return fmt.Errorf("%s:%d: not a JSON object", *file, line)
			}
			bodies = append(bodies, body)
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read %s: %w", *file, err)
		}
		return withBackendFor(e, cfg, server.AdminOptions{Schemas: true}, func(b *server.Backend) error {
			r, err := resourceOf(b, *res)
			if err != nil {
				return err
			}
			a := records.Actor{Workspace: strings.ToLower(*ws)}
			if _, err := b.Current().Records.Collection(e.ctx, a, r, *modelID); err != nil {
				return err
			}
			if err := workspaceExists(b, e.ctx, a.Workspace); err != nil {
				return err
			}
			n, err := b.Current().Records.Import(e.ctx, a, r, strings.ToLower(*modelID), bodies)
			if err != nil {
				return err
			}
			if b.Events != nil {
				// Number the import's events now, as a server does after its writes, so the feed (and
				// webhook deliveries) have them without waiting for a server's sweep.
				if _, err := b.Events.Stamp(e.ctx, a.Workspace); err != nil {
					return fmt.Errorf("imported %d %s, but numbering their events failed (a running server's sweep will): %w", n, r.Name, err)
				}
			}
			return e.emit(map[string]any{"imported": n}, fmt.Sprintf("imported %d %s", n, r.Name))
		})
	}
}

func workspaceExists(b *server.Backend, ctx context.Context, id string) error {
	if _, err := b.Directory.Workspace(ctx, id); err != nil {
		return err
	}
	return nil
}
