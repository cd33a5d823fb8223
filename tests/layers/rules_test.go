package layers_test

import "strings"

// The rules, as data. Patterns are those of `go list`: "./x" is the module's package x, "./x/..." is x and
// everything below it, "..." elsewhere matches any text (./plugins/...-rules), and a pattern without "./"
// is an import path outside the module ("net/http", "github.com/jackc/pgx/v5/...").
//
// Adding a package is one line: put its pattern in the layer it belongs to, or insert a new layer where it
// sits (as runtime/audit sits between runtime/records and the services). Forbidding an import is one
// line of denials.

// layers lists the layers of the module from the top down. A package may import (directly or through
// others) packages of its own layer and of the layers below it, never of a layer above. Every package of
// the module is in exactly one layer: a new package fails the test until it is placed.
//
// Within a layer, a package may import another package of the same layer only when the edge is listed in
// siblings: packages of one layer are peers by default (runtime/auth does not import runtime/limits); an
// edge between peers is a decision, written down. The sibling rule reads direct imports: a listed edge
// A → B lets A reach whatever B may reach.
var layers = []layer{
	{"dev programs and black-box tests", pkgs("./tools/...", "./tests/...",
		"./runtime/server/solo", "./runtime/server/unscoped")}, // behaviour tests in processes of their own
	{"process harness", pkgs("./internal/proc")},
	{"commands and plugin programs", pkgs("./cmd/...", "./plugins/...-rules")},
	{"server test helpers", pkgs("./runtime/server/servertest/...")},
	{"composition root", pkgs("./runtime/server")},
	{"HTTP API", pkgs("./runtime/httpapi")},
	{"definitions versions", pkgs("./runtime/defset")},
	{"workspace administration", pkgs("./runtime/admin")},
	{"bulk jobs", pkgs("./runtime/jobs")}, // imports and exports, run by any server through the record service
	{"webhook dispatch", pkgs("./runtime/dispatch")},
	{"records", pkgs("./runtime/records")},
	{"change feed reads", pkgs("./runtime/feed")}, // the feed as one reader may see it, over the trail's redaction
	{"audit trail and change feed", pkgs("./runtime/audit", "./runtime/events")},
	// Members, roles and limits are written here; auth resolves them for each request, and is told of a
	// change (Forget) and of a member losing access (EndAccess) within it.
	{"members and roles", pkgs("./runtime/members")},
	{"services", pkgs("./runtime/auth", "./runtime/limits", "./runtime/idempotency",
		"./runtime/customfields", "./runtime/migrate", "./runtime/plugins")},
	{"member notices", pkgs("./runtime/notices")}, // notifications and key expiry reminders (auth schedules them)
	{"store", pkgs("./runtime/store/...")},
	{"runtime leaves", pkgs("./runtime/config", "./runtime/metrics", "./runtime/version", "./runtime/jsonenc",
		"./runtime/webhooks")},
	// The engine, in the order of STYLE.md §2: field ← spec ← model ← {schema, listplan, catalog, route},
	// sqlgen ← {model, listplan}.
	{"engine documents", pkgs("./engine/catalog")},
	{"engine planners", pkgs("./engine/sqlgen", "./engine/route", "./engine/schema", "./engine/sample",
		"./engine/model/modeltest")},
	{"engine list plans", pkgs("./engine/listplan")},
	{"engine access", pkgs("./engine/access")},
	{"engine model", pkgs("./engine/model")},
	{"engine spec and error codes", pkgs("./engine/spec", "./engine/apierr")},
	{"engine leaves", pkgs("./engine/field", "./engine/strictjson", "./engine/suggest", "./engine/fulltext")},
	// The plugin contract and the definitions are peers at the bottom: neither imports the other.
	{"contract and data", pkgs("./plugins/sdk/...", "./definitions")},
	// A bounded memory of pure results, for any layer (the definitions' validation, plugins' checksums).
	{"memory", pkgs("./internal/memo")},
}

// siblings lists the imports allowed between packages of one layer, as "importer → imported".
var siblings = []edge{
	{"./plugins/sdk", "./plugins/sdk/internal/hookspb"}, // the contract's generated protobuf code
	// The isolation matrix and the pool leak, shared by runtime/server and runtime/server/unscoped, drive
	// servertest's servers.
	{"./runtime/server/servertest/tenancy", "./runtime/server/servertest"},
}

// denials lists imports forbidden beyond the layer order: the importer's pattern, the denied patterns,
// whether only a direct import counts (for packages the standard library itself reaches, such as os
// through fmt, or for a package allowed below but not at this level), and why.
var denials = []denial{
	{"./engine/...", pkgs("net/http", "database/sql", "log/slog", "github.com/jackc/pgx/v5/...", "modernc.org/sqlite/...",
		"github.com/uptrace/bunrouter/...", "github.com/hashicorp/go-plugin/...", "google.golang.org/grpc/..."),
		reach, "the engine is pure: it produces plans; runtime serves, executes, logs and runs plugins"},
	{"./engine/...", pkgs("os"), direct, "the engine reads definitions through an fs.FS only"},
	{"./engine/...", pkgs("./plugins/..."), reach, "plugins are a runtime concern"},
	{"./plugins/...-rules", pkgs("./engine/...", "./runtime/...", "./definitions"), reach,
		"rule programs import plugins/sdk only: they get data, not the engine"},
	{"./cmd/...", pkgs("./runtime/httpapi"), direct,
		"runtime/server serves the API; recordsctl encodes the OpenAPI document with engine/catalog"},
	{"./runtime/httpapi", pkgs("./engine/listplan", "./engine/sqlgen", "./runtime/store"), direct,
		"httpapi translates HTTP to the record service's typed inputs: plans and SQL are the service's"},
	{"./internal/proc", pkgs("./..."), reach, "the harness runs the module's binaries; it links none of it"},
	{"./runtime/config", pkgs("./..."), reach, "configuration is a leaf every runtime package may use"},
	{"./runtime/metrics", pkgs("./..."), reach, "metrics are a leaf every runtime package may use"},
	{"./runtime/version", pkgs("./..."), reach, "the build's version is a leaf every program may use"},
	{"./runtime/jsonenc", pkgs("./..."), reach, "the JSON encoder of answers is a leaf every runtime package may use"},
	{"./runtime/webhooks", pkgs("./..."), reach,
		"the webhook delivery primitives are a leaf of the standard library: signatures, the address check, one attempt"},
	{"./engine/suggest", pkgs("./..."), reach, "the wording of unknown names is a leaf every package may use"},
}

// isHelper reports whether a package is a test helper, which no other package may import outside its
// tests: a package named *test (servertest, modeltest, sdktest) and everything below it.
func isHelper(rel string) bool {
	for _, elem := range strings.Split(rel, "/") {
		if len(elem) > len("test") && strings.HasSuffix(elem, "test") {
			return true
		}
	}
	return false
}
