package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server"
)

func cmdModelCreate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	name := fs.String("name", "", "model name")
	file := fs.String("fields-file", "", "YAML or JSON file: field key -> {type, label, required, options, target}")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "model create --workspace W --name N --fields-file F"), required("workspace", *ws), required("name", *name), required("fields-file", *file)); err != nil {
			return err
		}
		fields, err := readModelFields(*file)
		if err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			id, err := b.Current().Custom.CreateModel(e.ctx, *ws, *name, fields)
			if err != nil {
				return err
			}
			return e.emit(map[string]any{"id": id}, id)
		})
	}
}

// readModelFields reads a fields file: field key -> {type, label, required, options, target}.
func readModelFields(file string) (map[string]customfields.ModelField, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	fields := map[string]customfields.ModelField{}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&fields); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return fields, nil
}

func cmdModelUpdate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	name := fs.String("name", "", "new name")
	file := fs.String("fields-file", "", "YAML or JSON file replacing the fields")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 1, "model update ID [--name N] [--fields-file F]"); err != nil {
			return err
		}
		var fields map[string]customfields.ModelField
		if *file != "" {
			var err error
			if fields, err = readModelFields(*file); err != nil {
				return err
			}
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			if err := b.Current().Custom.UpdateModel(e.ctx, pos[0], *name, fields); err != nil {
				return err
			}
			return e.emit(map[string]any{"id": strings.ToLower(pos[0])}, pos[0])
		})
	}
}

func cmdRolePut(create bool) func(*flag.FlagSet) func(*env, config.Config, []string) error {
	return func(fs *flag.FlagSet) func(*env, config.Config, []string) error {
		ws := fs.String("workspace", "", "workspace id")
		file := fs.String("file", "", "YAML file in the format of definitions/roles.yaml")
		return func(e *env, cfg config.Config, pos []string) error {
			if err := errors.Join(need(pos, 0, fs.Name()+" --workspace W --file ROLES.yaml"), required("workspace", *ws), required("file", *file)); err != nil {
				return err
			}
			data, err := os.ReadFile(*file)
			if err != nil {
				return err
			}
			return withBackend(e, cfg, func(b *server.Backend) error {
				names, err := b.Members.PutRoles(e.ctx, *ws, filepath.Base(*file), data, create)
				if err != nil {
					return err
				}
				return e.emit(map[string]any{"workspace": strings.ToLower(*ws), "roles": names}, strings.Join(names, "\n"))
			})
		}
	}
}

func ptrBool(b bool) *bool { return &b }

func cmdFieldCreate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	res := fs.String("resource", "", "resource name")
	key := fs.String("key", "", "write key (written as cf__<key>)")
	typ := fs.String("type", "", "text, long_text, integer, decimal, boolean, date, datetime, select, multi_select, email, url, phone, reference")
	req := fs.Bool("required", false, "must be given on create")
	unique := fs.Bool("unique", false, "a unique key: at most one active record of the workspace holds each value")
	options := fs.String("options", "", "comma-separated options (select, multi_select)")
	label := fs.String("label", "", "label")
	desc := fs.String("description", "", "description")
	target := fs.String("target", "", "target resource (reference)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "field create --workspace W --resource R --key K --type T"), required("workspace", *ws), required("resource", *res), required("key", *key), required("type", *typ)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			if err := workspaceExists(b, e.ctx, *ws); err != nil {
				return err
			}
			d, err := b.Current().Custom.Create(e.ctx, *ws, customfields.Def{Resource: *res, Key: *key, Type: *typ, Required: *req, Unique: *unique, Options: splitList(*options), Label: *label, Description: *desc, Target: *target})
			if err != nil {
				return err
			}
			return e.emit(map[string]any{"id": d.ID, "key": d.Key, "filter_key": d.FilterKey(), "write_key": "cf__" + d.Key}, d.ID+"  filter key "+d.FilterKey())
		})
	}
}

func cmdFieldUpdate(archive *bool) func(*flag.FlagSet) func(*env, config.Config, []string) error {
	return func(fs *flag.FlagSet) func(*env, config.Config, []string) error {
		label := fs.String("label", "", "new label")
		desc := fs.String("description", "", "new description")
		req := fs.String("required", "", "true or false")
		options := fs.String("options", "", "comma-separated options (replaces them)")
		return func(e *env, cfg config.Config, pos []string) error {
			if err := need(pos, 1, fs.Name()+" ID"); err != nil {
				return err
			}
			c := customfields.Change{Archived: archive}
			set := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
			if set["label"] {
				c.Label = label
			}
			if set["description"] {
				c.Description = desc
			}
			if set["required"] {
				v, err := strconv.ParseBool(*req)
				if err != nil {
					return errors.New("--required must be true or false")
				}
				c.Required = &v
			}
			if set["options"] {
				c.Options = splitList(*options)
			}
			return withBackend(e, cfg, func(b *server.Backend) error {
				d, err := b.Current().Custom.Update(e.ctx, pos[0], c)
				if err != nil {
					return err
				}
				return e.emit(map[string]any{"id": d.ID, "key": d.Key, "filter_key": d.FilterKey(), "archived": d.Archived}, d.ID)
			})
		}
	}
}
