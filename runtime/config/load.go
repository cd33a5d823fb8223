package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// The config file is named by this flag or, without it, this environment variable.
const (
	ConfigFlag = "config"
	ConfigEnv  = "RECORDS_CONFIG"
)

// sources remembers where a Config's values come from, so that a later source (a flag, or a
// --config naming another file) can be layered in without losing the others. Copies of a Config
// share it.
type sources struct {
	getenv func(string) string
	cmd    Command // the program bound with Bind; 0: every setting is in scope
	// flagFile is the file --config names; "" falls back to RECORDS_CONFIG.
	flagFile string
	// file is the path the last resolve read ("" when none), fileVals its values by setting name and
	// fileErr what was wrong with it.
	file     string
	fileVals map[string]any
	fileErr  error
	// flags holds the values the command line set, by setting name.
	flags map[string]any
	// err is every problem the last resolve found in the file and the environment.
	err error
}

// Default returns the configuration of a program that was given no flags: the defaults, overlaid
// with the config file RECORDS_CONFIG names (if any), overlaid with the RECORDS_* environment
// (getenv may be os.Getenv; an empty variable counts as unset). Problems with the file or the
// environment do not stop it: Validate reports them, and so does LoadErr once flags are bound.
func Default(getenv func(string) string) Config {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	c := Config{src: &sources{getenv: getenv, flags: map[string]any{}}}
	c.src.resolve(&c)
	return c
}

// Bind registers on fs the flags of cmd's settings and --config, all writing into *c (from Default;
// a zero Config gets an empty environment). It may be called for several flag sets sharing c, as
// recordsctl does for the flags before and after the command name. Precedence, whatever the order on
// the command line: flag > environment > config file > default. Settings that are not cmd's stay at
// their defaults and are not validated, so one config file can serve both programs.
//
// The flags' help shows the defaults of the table, never a value from the environment or a file: those
// may be secrets.
func Bind(fs *flag.FlagSet, c *Config, cmd Command) {
	if c.src == nil {
		c.src = &sources{getenv: func(string) string { return "" }, flags: map[string]any{}}
	}
	c.src.cmd = cmd
	c.src.resolve(c)
	for _, s := range Settings() {
		if s.Flag == "" || s.Subcommand != "" || s.Commands&cmd == 0 {
			continue
		}
		usage := strings.ReplaceAll(s.Help, "`", "")
		if s.Env != "" {
			usage += " (env " + s.Env + ")"
		}
		fs.Var(&flagValue{s: s, c: c}, s.Flag, usage)
	}
	fs.Var(&configFlag{c: c}, ConfigFlag, "YAML file of settings; flags and the environment override it (env "+ConfigEnv+")")
}

// LoadErr returns, after fs.Parse, the problems found in the config file and the environment of the
// Config bound to fs with Bind; nil when there are none or nothing is bound. Validate reports them too.
func LoadErr(fs *flag.FlagSet) error {
	f := fs.Lookup(ConfigFlag)
	if f == nil {
		return nil
	}
	cf, ok := f.Value.(*configFlag)
	if !ok || cf.c.src == nil {
		return nil
	}
	return cf.c.src.err
}

// File returns the config file c was read from, "" when none.
func (c Config) File() string {
	if c.src == nil {
		return ""
	}
	return c.src.file
}

func (c Config) loadErr() error {
	if c.src == nil {
		return nil
	}
	return c.src.err
}

// inScope reports whether s is read and validated for the bound program.
func (src *sources) inScope(s Setting) bool {
	return src == nil || src.cmd == 0 || s.Commands&src.cmd != 0
}

// resolve computes every setting from the sources into c and records the problems in src.err.
func (src *sources) resolve(c *Config) {
	path := src.flagFile
	if path == "" {
		path = src.getenv(ConfigEnv)
	}
	if path != src.file { // a file is read once per path
		src.file, src.fileVals, src.fileErr = "", nil, nil
		if path != "" {
			src.file = path
			src.fileVals, src.fileErr = readFile(path)
		}
	}
	errs := []error{src.fileErr}
	for _, s := range Settings() {
		v := s.defaultValue()
		if src.inScope(s) {
			if fv, ok := src.fileVals[s.Name]; ok {
				v = fv
			}
			if s.Env != "" {
				if text := src.getenv(s.Env); text != "" {
					ev, err := s.parse(text)
					if err != nil {
						errs = append(errs, fmt.Errorf("%s: %w", s.Env, err))
					} else {
						v = ev
					}
				}
			}
			if fv, ok := src.flags[s.Name]; ok {
				v = fv
			}
		}
		s.set(c, v)
	}
	src.err = errors.Join(errs...)
}

// readFile reads a config file: a YAML mapping from setting keys to values, optionally with
// "version: 1". Unknown keys, duplicate keys and values of the wrong type are errors, all reported at
// once, each with the file, the line and the key. Keys of the other program are accepted.
func readFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return map[string]any{}, nil
		}
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return map[string]any{}, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config file %s: line %d: want a mapping of settings (key: value)", path, root.Line)
	}
	byKey := map[string]Setting{}
	for _, s := range Settings() {
		if s.Key != "" {
			byKey[s.Key] = s
		}
	}
	vals := map[string]any{}
	seen := map[string]bool{}
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		at := fmt.Sprintf("config file %s: line %d: key %q", path, k.Line, k.Value)
		if seen[k.Value] {
			errs = append(errs, fmt.Errorf("%s: set twice", at))
			continue
		}
		seen[k.Value] = true
		if k.Value == "version" {
			if v.Kind != yaml.ScalarNode || v.Value != "1" {
				errs = append(errs, fmt.Errorf("%s: unsupported version %q, want 1", at, v.Value))
			}
			continue
		}
		s, ok := byKey[k.Value]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: unknown key%s", at, suggest(k.Value, byKey)))
			continue
		}
		val, err := decodeNode(s, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
			continue
		}
		vals[s.Name] = val
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return vals, nil
}

// decodeNode reads a YAML scalar of the setting's kind. Only the YAML type itself is accepted: a
// duration is a string such as 10s, a bool is true or false, a string is a string (quote numbers).
func decodeNode(s Setting, n *yaml.Node) (any, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("want a %s, not a list or mapping", s.Kind)
	}
	show := n.Value
	if s.Secrecy != Public {
		show = "…"
	}
	switch s.Kind {
	case KindBool:
		var b bool
		if n.Tag != "!!bool" || n.Decode(&b) != nil {
			return nil, fmt.Errorf("want true or false, got %s %q", strings.TrimPrefix(n.Tag, "!!"), show)
		}
		return b, nil
	case KindInt:
		if n.Tag != "!!int" {
			return nil, fmt.Errorf("want a whole number, got %s %q", strings.TrimPrefix(n.Tag, "!!"), show)
		}
		return s.parse(n.Value)
	case KindDuration:
		if n.Tag != "!!str" {
			return nil, fmt.Errorf("want a duration such as 10s, got %s %q", strings.TrimPrefix(n.Tag, "!!"), show)
		}
		return s.parse(n.Value)
	default:
		if n.Tag != "!!str" {
			return nil, fmt.Errorf("want a string, got %s %q (quote it)", strings.TrimPrefix(n.Tag, "!!"), show)
		}
		return s.parse(n.Value)
	}
}

// suggest returns ` (did you mean "x"?)` for a known key that differs from key only in case, dashes
// or underscores, else "".
func suggest(key string, known map[string]Setting) string {
	norm := func(s string) string { return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(s)) }
	for k := range known {
		if norm(k) == norm(key) {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}
	}
	return ""
}

// flagValue is the flag.Value of one setting.
type flagValue struct {
	s Setting
	c *Config
}

// String returns the table's default, which the flag package shows in help ("false" shows as none).
func (v *flagValue) String() string {
	if v == nil || v.c == nil || v.s.Default == "false" {
		return ""
	}
	return v.s.Default
}

func (v *flagValue) Set(text string) error {
	val, err := v.s.parse(text)
	if err != nil {
		return err
	}
	v.c.src.flags[v.s.Name] = val
	v.s.set(v.c, val)
	return nil
}

// IsBoolFlag lets a bool setting be given as --dev without a value.
func (v *flagValue) IsBoolFlag() bool { return v.s.Kind == KindBool }

// configFlag is the flag.Value of --config: setting it reads the file and layers it in.
type configFlag struct{ c *Config }

func (f *configFlag) String() string { return "" }

func (f *configFlag) Set(path string) error {
	if path == "" {
		return errors.New("empty file name")
	}
	f.c.src.flagFile = path
	f.c.src.resolve(f.c)
	return f.c.src.fileErr
}
