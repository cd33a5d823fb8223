// Package sdk is the contract between recordsd and its rules plugins, and the helper that makes a plugin
// a few lines:
//
//	func main() {
//		sdk.Serve("deal-rules", "1.0.0", sdk.Rules{Before: before})
//	}
//
// Plugins are separate programs that recordsd starts with github.com/hashicorp/go-plugin and talks to
// over gRPC (plugins/sdk/proto/hooks.proto, version ProtocolVersion). A Before hook sees the workspace,
// the member, the resource, the operation, the stored record (on update, archive and restore) and the
// incoming changes; it may set values, or refuse the write with field errors (422) or a conflict (409). An
// After hook is told what was written once it is committed; its failure is logged and never undoes the
// write. Hooks may read stored records of the same workspace through Call.Lookup, inside the write's
// transaction.
//
// This package imports neither the server's runtime nor its engine: plugins depend on it alone.
package sdk

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-plugin"
)

// ProtocolVersion is the version of the hook contract. A host refuses a plugin built for another one.
const ProtocolVersion = 1

// Handshake is go-plugin's handshake for records plugins: a plugin binary run by hand says it must be
// started by recordsd, and a host and a plugin of different protocol versions refuse each other.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "RECORDS_PLUGIN",
	MagicCookieValue: "workspace-records-hooks",
}

// PluginName is the name under which the hooks are dispensed.
const PluginName = "hooks"

// Operation is the write a hook is called for; its value is the one the wire (hookspb.Call.operation)
// and the host's logs carry.
type Operation string

// Operations a hook is called for.
const (
	OpCreate  Operation = "create"
	OpUpdate  Operation = "update"
	OpArchive Operation = "archive"
	OpRestore Operation = "restore"
)

// HookPhase names a hook: Before, inside the write's transaction, or After, once it is committed. Its
// value is the host's metrics label (hook="before").
type HookPhase string

// The two hooks.
const (
	HookBefore HookPhase = "before"
	HookAfter  HookPhase = "after"
)

// Call is one write a hook is told about. Records and changes are JSON-shaped: strings, json.Number for
// numbers, bools, nil, []any and map[string]any, exactly as the API shows them.
type Call struct {
	Workspace string
	Member    string
	Resource  string
	Operation Operation
	RequestID string
	Stored    map[string]any // the stored record; nil on create
	Changes   map[string]any // field key -> new value
	Lookup    Lookup         // reads stored records of the workspace; nil in After hooks
}

// Value returns the value key will have after the write: from Changes when present, else from Stored.
func (c *Call) Value(key string) any {
	if v, ok := c.Changes[key]; ok {
		return v
	}
	return c.Stored[key]
}

// Changed reports whether the write sets key.
func (c *Call) Changed(key string) bool {
	_, ok := c.Changes[key]
	return ok
}

// FieldError is one refused field.
type FieldError struct {
	Field   string
	Code    string
	Message string
}

// Result is what a Before hook decides. The zero Result lets the write through unchanged.
type Result struct {
	Set      map[string]any // values to set, over the changes (validated by the host like any write)
	Errors   []FieldError   // refuse with 422 validation_failed
	Conflict string         // refuse with 409 conflict
}

// SetValue sets key to v.
func (r *Result) SetValue(key string, v any) {
	if r.Set == nil {
		r.Set = map[string]any{}
	}
	r.Set[key] = v
}

// Refuse adds a field error.
func (r *Result) Refuse(field, code, message string) {
	r.Errors = append(r.Errors, FieldError{Field: field, Code: code, Message: message})
}

// Filter is one list filter, as in the API.
type Filter struct {
	Field string `json:"field"`
	Op    string `json:"op"`
	Value any    `json:"value,omitempty"`
}

// Lookup reads stored records of the call's workspace (archived ones included), inside the write's
// transaction.
type Lookup interface {
	Get(ctx context.Context, resource, id string) (map[string]any, bool, error)
	// List returns up to limit (at most 100) records matching every filter, newest first, and whether
	// more match.
	List(ctx context.Context, resource string, filters []Filter, limit int) ([]map[string]any, bool, error)
}

// Rules is a plugin's implementation: either function may be nil.
type Rules struct {
	// Resources limits the resources the plugin is called for; empty means every resource whose
	// definition names it in hooks.
	Resources []string
	Before    func(ctx context.Context, c *Call) (*Result, error)
	After     func(ctx context.Context, c *Call, record map[string]any) error
}

// Serve runs rules as a plugin named name. It returns only when the host stops the plugin. The
// plugin's process ends by itself, within HostPoll, once the host that started it is gone, whichever way
// it went (exitWithHost).
func Serve(name, version string, rules Rules) {
	if os.Getenv(Handshake.MagicCookieKey) != Handshake.MagicCookieValue {
		fmt.Fprintf(os.Stderr, "%s is a Workspace Records plugin: put it in recordsd's --plugins directory and name it in a definition's hooks.\n", name)
		os.Exit(1)
	}
	go exitWithHost(os.Getppid(), HostPoll, func() { os.Exit(1) })
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         map[string]plugin.Plugin{PluginName: &grpcPlugin{impl: &served{name: name, version: version, rules: rules}}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

// HostPoll is how often a served plugin checks that the host that started it still runs.
const HostPoll = 200 * time.Millisecond

// exitWithHost calls exit once the process's parent is no longer parent, checking every poll. A
// process whose parent dies is handed to another one (init, or the nearest subreaper), so a changed
// parent means that the host that started the plugin is gone, even when nothing could tell the plugin:
// a SIGKILL gives the host no chance to stop its plugins. On Linux the host also has the kernel kill its
// plugins when it dies (runtime/plugins, Pdeathsig); this is the plugin's own half, which works wherever
// a parent's death changes the parent (not on Windows). A plugin has nothing left to do without its host,
// since every call it serves comes from that host.
func exitWithHost(parent int, poll time.Duration, exit func()) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != parent {
			exit()
			return
		}
	}
}
