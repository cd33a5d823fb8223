# Workspace Records — developer commands. `make run` serves the demo on the embedded SQLite default;
# `make test` runs the whole suite (SQLite and PostgreSQL; PostgreSQL at RECORDS_TEST_POSTGRES,
# default postgres://postgres@127.0.0.1:5432/postgres).

GO      ?= go
BIN     := bin
# make run's address and database: make run ADDR=127.0.0.1:9090 DB=postgres://…, or else RECORDS_ADDR and
# RECORDS_DB from the environment, or else the defaults.
ADDR    ?= $(or $(RECORDS_ADDR),127.0.0.1:8080)
DB      ?= $(or $(RECORDS_DB),sqlite:./data/records.db)
FUZZTIME ?= 30s
# The version `recordsd --version` and `recordsctl --version` print: `git describe` of the checkout, or
# what make build VERSION=v1.4.0 says (empty: the module version of the build information, or "devel").
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS := $(if $(VERSION),-X github.com/workspace-records/records/runtime/version.Version=$(VERSION))

.PHONY: all build run test test-race test-race-ci lint openapi-lint docs-check docs-bundle axe-bundle console-check fuzz bench bench-quick bench-go clean proto plugins

all: lint test

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/recordsd ./cmd/recordsd
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/recordsctl ./cmd/recordsctl

run: build plugins
	$(BIN)/recordsd serve --dev --addr $(ADDR) --db $(DB)

# The whole suite, fuzz seed corpora included (go test runs every Fuzz target over its corpus), and the
# tests of the build without workspace predicates (-tags recordstest_unscoped: runtime/server/unscoped,
# whose test files build only with the tag, so it compiles those alone), run beside it. recordsd and
# recordsctl (and tools/webhookrecv, which tests/cluster runs) are built once, into a temporary directory
# every package running them reads (RECORDS_TEST_BIN). Most tests wait on databases and processes, not on the processor: TEST_P packages
# and TEST_PARALLEL parallel tests of a package run at once (go test's default is the number of
# processors for both).
TEST_P        ?= 4
TEST_PARALLEL ?= 6
TEST_FLAGS    ?=
# The longest packages first: go test starts packages in the order named (./... names each package once),
# and in alphabetical order runtime/server, the longest, started 100 s into the run, behind cmd and the
# engine's packages (make test-profile shows when each package ran).
TEST_FIRST    ?= ./runtime/server/ ./runtime/server/solo/ ./tests/cluster/ ./cmd/
# The unscoped run's flags: TEST_FLAGS unless told (make test reads its log for its verdict, so never
# -json: make test-profile passes TEST_FLAGS=-json and UNSCOPED_FLAGS without it). UNSCOPED_LOG, when
# set, keeps that log.
UNSCOPED_FLAGS ?= $(TEST_FLAGS)
UNSCOPED_LOG   ?=
test:
	@bin=$$(mktemp -d "$${TMPDIR:-/tmp}/records-test-bin.XXXXXX") || exit 1; \
	trap 'rm -rf "$$bin"' EXIT; \
	$(GO) build -o "$$bin/" ./cmd/recordsd ./cmd/recordsctl ./tools/webhookrecv || exit 1; \
	export RECORDS_TEST_BIN="$$bin"; \
	$(GO) test -tags recordstest_unscoped -count=1 -timeout 15m -v -run '^TestUnscoped' $(UNSCOPED_FLAGS) ./runtime/server/unscoped/ > "$$bin/unscoped.log" 2>&1 & unscoped=$$!; \
	rc=0; $(GO) test -count=1 -timeout 15m -p $(TEST_P) -parallel $(TEST_PARALLEL) $(TEST_FLAGS) $(TEST_FIRST) ./... || rc=$$?; \
	urc=0; wait $$unscoped || urc=$$?; \
	echo "--- go test -tags recordstest_unscoped -run '^TestUnscoped' ./runtime/server/unscoped/"; grep -E '^(--- |ok|FAIL|panic)' "$$bin/unscoped.log"; \
	if [ $$urc -ne 0 ]; then cat "$$bin/unscoped.log"; fi; \
	if ! grep -q '^--- PASS: TestUnscoped' "$$bin/unscoped.log" || grep -q -- '--- SKIP' "$$bin/unscoped.log"; then \
		echo "no TestUnscoped test ran to a pass (or one skipped): go test passes when -run matches nothing"; urc=1; fi; \
	if [ -n "$(UNSCOPED_LOG)" ]; then cp "$$bin/unscoped.log" "$(UNSCOPED_LOG)"; fi; \
	[ $$rc -eq 0 ] && [ $$urc -eq 0 ]

# Where make test's time goes: make test with go test -json, its output kept in TEST_PROFILE and the
# unscoped run's -v log beside it (TEST_PROFILE's name with .unscoped.log), then tools/testprofile
# prints the 20 slowest top-level tests and subtests and the packages by elapsed time (and the
# failures). Exits as make test did.
TEST_PROFILE ?= $(BIN)/test-profile.json
.PHONY: test-profile
test-profile:
	@mkdir -p $(dir $(TEST_PROFILE))
	@log='$(basename $(TEST_PROFILE)).unscoped.log'; rm -f "$$log"; \
	rc=0; $(MAKE) --no-print-directory test TEST_FLAGS='-json $(TEST_FLAGS)' UNSCOPED_FLAGS='$(TEST_FLAGS)' \
		UNSCOPED_LOG="$$log" > '$(TEST_PROFILE)' || rc=$$?; \
	text=; [ -f "$$log" ] && text="-text=github.com/workspace-records/records/runtime/server [recordstest_unscoped]=$$log"; \
	$(GO) run ./tools/testprofile $${text:+"$$text"} '$(TEST_PROFILE)'; \
	[ $$rc -eq 0 ] || echo "make test failed (exit $$rc): its output is in $(TEST_PROFILE)"; \
	exit $$rc

test-race:
	$(GO) test -race -count=1 -timeout 15m ./...

# The race detector, as .ci/run runs it after make test: of the runtime packages but runtime/server and
# runtime/server/solo, those whose code or tests start goroutines (a `go` statement or a WaitGroup's Go:
# the detector finds nothing where one goroutine runs; config, jsonenc, records, members… have none), in
# full; and of runtime/server (whose behaviour suites make test runs without it, and which take a
# quarter of an hour under -race on 2 cores) the tests whose point is concurrency: parallel writers,
# idempotent and hooked concurrent creates, exact limits under load, concurrent migrations, the key
# cache, plugins killed during writes, the pool's workspace setting. (solo holds the long chaos and
# fault suites of runtime/server, which were never in this selection.) make test-race runs everything
# under -race.
RACE_SERVER_RUN ?= ^(TestParallelPatches|TestRuleInvariantsUnderParallelWriters|TestIdempotentConcurrentCreates|TestIdempotencyConcurrentHookedCreates|TestRateLimitExact|TestConcurrentMigrations|TestKeyCache|TestPluginKilledDuringWrites|TestPoolWorkspaceLeak|TestUniqueKeyConcurrentCreates|TestUniqueCustomField|TestUpsertConcurrent)$$
RACE_PKGS = $$($(GO) list -f '{{.ImportPath}} {{.Dir}}' ./runtime/... | grep -v -e '/runtime/server ' -e '/runtime/server/solo ' | \
	while read -r pkg dir; do grep -qE '^[[:space:]]*go (func|[[:alnum:]_.]+[(])|[.]Go[(]' "$$dir"/*.go 2>/dev/null && echo "$$pkg"; done)
# The two runs go side by side (runtime/defset alone takes a minute under -race, runtime/server's
# selection 40 s); runtime/server's output follows the packages'.
test-race-ci:
	@log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	$(GO) test -race -count=1 -timeout 10m -parallel $(TEST_PARALLEL) -run '$(RACE_SERVER_RUN)' $(TEST_FLAGS) ./runtime/server/ > "$$log" 2>&1 & server=$$!; \
	rc=0; $(GO) test -race -count=1 -timeout 10m -p $(TEST_P) -parallel $(TEST_PARALLEL) $(TEST_FLAGS) $(RACE_PKGS) || rc=$$?; \
	src=0; wait $$server || src=$$?; \
	echo "--- go test -race -run '$(RACE_SERVER_RUN)' ./runtime/server/"; cat "$$log"; \
	[ $$rc -eq 0 ] && [ $$src -eq 0 ]

# test-race-ci's packages compiled with -race and run with no test selected: .ci/run starts it beside
# make test, so that the race run after it finds its binaries built.
.PHONY: test-race-build
test-race-build:
	$(GO) test -race -count=1 -run '^$$' $(RACE_PKGS) ./runtime/server/ >/dev/null

lint: openapi-lint
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run ./cmd/recordsctl definitions lint definitions

# The OpenAPI document recordsd serves, linted by Redocly CLI (its recommended rules, warnings raised to
# errors) and by Spectral (its spectral:oas ruleset, any result fails), both pinned in tools/openapi from
# the npm registry: zero errors and zero warnings, or the target fails.
openapi-lint: tools/openapi/node_modules
	@mkdir -p $(BIN)
	$(GO) run ./cmd/recordsctl openapi > $(BIN)/openapi.json
	cd tools/openapi && ./node_modules/.bin/redocly lint ../../$(BIN)/openapi.json --config redocly.yaml
	cd tools/openapi && ./node_modules/.bin/spectral lint ../../$(BIN)/openapi.json --ruleset spectral.yaml --fail-severity hint

# Rewrite docs/openapi.json, the committed OpenAPI document of the shipped definitions (recordsctl openapi,
# indented): the behaviour tests hold every response to it, and tests/openapi fails while it is stale.
.PHONY: openapi-golden
openapi-golden:
	$(GO) test -count=1 -run '^TestOpenAPIGolden$$' ./tests/openapi -args -update

tools/openapi/node_modules: tools/openapi/package.json tools/openapi/package-lock.json
	cd tools/openapi && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The /docs reference in headless Chromium (Debian's chromium), rendered from the shipped definitions (make
# test renders a small set: RECORDS_DOCS_FULL); the screenshot is kept in bin/docs.png.
docs-check:
	@mkdir -p $(BIN)
	RECORDS_DOCS_FULL=1 RECORDS_DOCS_SCREENSHOT=$(CURDIR)/$(BIN)/docs.png $(GO) test -count=1 -run TestDocsPageInChromium -v ./runtime/server/

# Refresh the Redoc bundle served at /docs (committed) from the pinned npm package. The one remote asset
# the bundle names (the footer's logo image on Redocly's CDN) becomes an inline empty image: the page
# loads nothing from outside this server.
docs-bundle: tools/openapi/node_modules
	sed 's#https://cdn.redoc.ly/redoc/logo-mini.svg#data:image/gif;base64,R0lGODlhAQABAAAAACw=#' \
		tools/openapi/node_modules/redoc/bundles/redoc.standalone.js > runtime/httpapi/docs/redoc.standalone.js
	cp tools/openapi/node_modules/redoc/bundles/redoc.standalone.js.LICENSE.txt runtime/httpapi/docs/redoc.standalone.js.LICENSE.txt

# The axe-core build the console's browser test injects to check accessibility (committed under
# runtime/server/testdata/axe with its licence), refreshed from the pinned npm package: npm pack checks
# the tarball against the registry's integrity hash. Change AXE_VERSION to move to another release.
AXE_VERSION := 4.10.3
axe-bundle:
	rm -rf $(BIN)/axe && mkdir -p $(BIN)/axe runtime/server/testdata/axe
	cd $(BIN)/axe && npm pack --silent --no-fund axe-core@$(AXE_VERSION) > /dev/null && tar -xzf axe-core-$(AXE_VERSION).tgz
	cp $(BIN)/axe/package/axe.min.js $(BIN)/axe/package/LICENSE runtime/server/testdata/axe/
	echo $(AXE_VERSION) > runtime/server/testdata/axe/VERSION
	rm -rf $(BIN)/axe

# The console's browser tests (headless Chromium, both backends), the pages' looks (axe-core, widths,
# screenshots) checked on both backends' walks (make test checks them on PostgreSQL's only); screenshots of
# every page at 1280x800 and 390x844 are written to bin/console-screens/.
console-check:
	RECORDS_CONSOLE_LOOKS=all $(GO) test -count=1 -run 'TestConsole' -v ./runtime/server/

# Rewrite docs/errors.md's table of error codes from engine/apierr.Table (a test checks it).
.PHONY: errors-doc
errors-doc:
	ERRORS_DOC_UPDATE=1 $(GO) test -count=1 -run '^TestErrorsDoc$$' ./engine/apierr

# Rewrite README.md's configuration table from the settings table of runtime/config (a test checks it).
.PHONY: config-doc
config-doc:
	$(GO) run ./tools/configdoc

# Regenerate the hook contract's Go code (committed) from plugins/sdk/proto/hooks.proto. Needs protoc
# (Debian: apt-get install protobuf-compiler); the Go generators come from the module proxy.
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
proto:
	GOBIN=$(CURDIR)/$(BIN)/tools $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(CURDIR)/$(BIN)/tools $(GO) install $(PROTOC_GEN_GO_GRPC)
	PATH=$(CURDIR)/$(BIN)/tools:$$PATH protoc -I plugins/sdk/proto \
		--go_out=plugins/sdk/internal/hookspb --go_opt=paths=source_relative \
		--go-grpc_out=plugins/sdk/internal/hookspb --go-grpc_opt=paths=source_relative \
		plugins/sdk/proto/hooks.proto

# The shipped rules plugins, into plugins/bin (the directory recordsd --plugins reads by default).
plugins:
	@for p in $$(ls plugins | grep -v -e '^sdk$$' -e '^bin$$'); do $(GO) build -o plugins/bin/$$p ./plugins/$$p || exit 1; done

# The performance harness (tools/bench, docs/benchmarks.md): recordsd on PostgreSQL with 1,000,000
# companies seeded by recordsctl seed, driven at c=1/8/32 next to a bare net/http floor server and raw
# SQL, with the targets checked. BENCH_BACKEND=sqlite or both adds the embedded default; BENCH_ARGS
# passes more flags (e.g. -profile DIR for CPU profiles of recordsd). About 11 minutes.
BENCH_BACKEND ?= postgres
BENCH_ARGS    ?=
bench: build plugins
	$(GO) run ./tools/bench -backend $(BENCH_BACKEND) -rows 1000000 -duration 4s -warmup 1s $(BENCH_ARGS)

# The same on 100,000 records with shorter phases: under 3 minutes.
bench-quick: build plugins
	$(GO) run ./tools/bench -backend $(BENCH_BACKEND) -rows 100000 -duration 1500ms -warmup 300ms -repeats 3 -rounds 2 $(BENCH_ARGS)

# Three recordsd replicas over one PostgreSQL and one Redis (tests/cluster, docs/deployment.md), long
# form: limits of 100/min, a quota of 300, 100 concurrent idempotent POSTs, five rounds of every
# propagation check, six kill points (SIGKILL and SIGTERM) and a real wait for abandoned idempotency
# leases; then TestWebhooksSurviveKills with 100 kill points (two replicas, a webhook receiver).
# About 5 minutes. The short forms (about 30 s each) run in make test.
.PHONY: cluster-test
cluster-test:
	RECORDS_TIMING=strict CLUSTER_LONG=1 $(GO) test -count=1 -timeout 20m -v -run '^(TestCluster|TestWebhooksSurviveKills)$$' ./tests/cluster/

# The crash test (tests/crash), long form: one recordsd killed with SIGKILL at 200 random moments over
# PostgreSQL (20 over SQLite) while six clients send idempotent creates, updates and archives; every
# request left without an answer is retried with its Idempotency-Key, abandoned claims wait for their
# real lease (60 s). The short form (20 + 4 kill points, leases ended in the database) runs in make test.
.PHONY: crash-test
crash-test:
	CRASH_LONG=1 $(GO) test -count=1 -timeout 30m -v -run '^TestCrash$$' ./tests/crash/

# The database fault tests (runtime/server/solo TestDatabaseFaults, research note D1-D4), long form:
# PostgreSQL stopped, black-holed, crashed and slowed for 30 s each (the short form: 1.5-3 s, in
# make test) under twice the clients. About 3 minutes.
.PHONY: faults-test
faults-test:
	RECORDS_TIMING=strict RECORDS_FAULTS_LONG=1 $(GO) test -count=1 -timeout 15m -v -run '^TestDatabaseFaults$$' ./runtime/server/solo/

# R1–R10 of the reliability note over three recordsd replicas, one PostgreSQL and a private redis-server
# (tests/cluster TestClusterLimits), long form: 200 requests/s through a 60 s pause and a 60 s kill of
# Redis, 10 clients honouring Retry-After for 20 s. About 3 minutes. The short form runs in make test.
.PHONY: limits-test
limits-test:
	RECORDS_TIMING=strict CLUSTER_LONG=1 $(GO) test -count=1 -timeout 20m -v -run '^TestClusterLimits$$' ./tests/cluster/

# The documented timing figures, on a quiet machine (servertest/timing.go): with RECORDS_TIMING=strict the
# tests that carry one hold it (a plugin relaunched within 2 s, a change on every replica within 2 s, an
# answer within the request deadline and its margin, a SIGHUP switch within 2 s) instead of the budgets
# make test holds, which do not bend when other suites share the machine. The long forms above hold them
# too. About 3 minutes.
.PHONY: timing-check
timing-check:
	RECORDS_TIMING=strict $(GO) test -count=1 -timeout 15m ./runtime/server/solo/ ./tests/cluster/
	RECORDS_TIMING=strict $(GO) test -count=1 -timeout 10m -run '^(TestDealRulesPlugin|TestPluginSwapWatched)$$' ./runtime/server/
	RECORDS_TIMING=strict $(GO) test -count=1 -timeout 10m -run '^TestSIGHUPReloadsDefinitions$$' ./cmd/

# Plugin chaos, long form (runtime/server/solo/plugin_chaos_test.go, runtime/plugins/host_test.go): 1,000
# calls of each plugin misbehaviour (panic, hang, stop, exit, SIGKILL, output floods of 1 MiB a call) on
# SQLite and PostgreSQL, with the hook deadline at 100 ms. About 10 minutes. The short form (100 calls
# a misbehaviour on SQLite, 10 on PostgreSQL) runs in make test.
.PHONY: plugin-chaos
plugin-chaos:
	RECORDS_TIMING=strict RECORDS_PLUGIN_CHAOS=long $(GO) test -count=1 -timeout 60m -v -run '^TestPluginChaos$$' ./runtime/server/solo/
	$(GO) test -count=1 -v ./runtime/plugins/

# Go benchmarks of single layers (raw SQL, service, auth, HTTP) and of custom-field filters.
bench-go:
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 1 ./runtime/server/

# Explore new inputs for every parser of untrusted input, FUZZTIME each (not part of make test, which
# runs each target over its seed corpus). FUZZFLAGS bounds the minimisation of each new input (a
# definition takes ~10 ms to load; Go's default minute each would leave no time to fuzz); add
# -parallel N to use fewer cores. A failing input is written to the package's testdata/fuzz/FuzzX/:
# commit it with the fix, and it stays a seed.
FUZZFLAGS ?= -fuzzminimizetime 100x
fuzz:
	$(GO) test ./engine/listplan -run '^$$' -fuzz FuzzParseFilters -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./engine/listplan -run '^$$' -fuzz FuzzDecodeCursor -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./runtime/httpapi -run '^$$' -fuzz FuzzDecodeObject -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./engine/listplan -run '^$$' -fuzz '^FuzzFromQuery$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./engine/listplan -run '^$$' -fuzz '^FuzzFromBody$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./engine/listplan -run '^$$' -fuzz '^FuzzCursorRoundTrip$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./engine/strictjson -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./engine/schema -run '^$$' -fuzz '^FuzzValidate$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./engine/model -run '^$$' -fuzz '^FuzzDefinition$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./runtime/idempotency -run '^$$' -fuzz '^FuzzValidKey$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./runtime/idempotency -run '^$$' -fuzz '^FuzzFingerprint$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./runtime/httpapi -run '^$$' -fuzz '^FuzzClientIP$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./runtime/server -run '^$$' -fuzz '^FuzzAuthorization$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./runtime/server -run '^$$' -fuzz '^FuzzHTTP$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)
	$(GO) test ./runtime/server -run '^$$' -fuzz '^FuzzPath$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS)

# The soak (tools/bench/soak.go): recordsd on PostgreSQL with Redis under SOAK_DURATION
# of mixed traffic from several clients after a one-minute warm-up — reads, creates and updates,
# idempotent retries, bursts against a 60/min key — then every acknowledged write checked in the
# database and memory and goroutines checked flat; exit 1 on any failure. About 12 minutes.
# soak-quick is the same for 30 s after a 10 s warm-up (about a minute).
SOAK_DURATION ?= 10m
SOAK_ARGS     ?=
.PHONY: soak soak-quick
soak: build plugins
	$(GO) run ./tools/bench soak -duration $(SOAK_DURATION) -warmup 1m $(SOAK_ARGS)

soak-quick: build plugins
	$(GO) run ./tools/bench soak -duration 30s -warmup 10s -burst-every 5s $(SOAK_ARGS)

clean:
	rm -rf plugins/bin
	rm -rf $(BIN)
