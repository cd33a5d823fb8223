# Workspace Records — developer commands. `make run` serves the demo on the embedded SQLite default;
# `make test` runs the whole suite (SQLite and PostgreSQL; PostgreSQL at RECORDS_TEST_POSTGRES,
# default postgres://postgres@127.0.0.1:5432/postgres).

GO      ?= go
BIN     := bin
ADDR    ?= 127.0.0.1:8080
DB      ?= sqlite:./data/records.db
FUZZTIME ?= 30s

.PHONY: all build run test test-race lint fuzz bench clean

all: lint test

build:
	$(GO) build -o $(BIN)/recordsd ./cmd/recordsd
	$(GO) build -o $(BIN)/recordsctl ./cmd/recordsctl

run: build
	$(BIN)/recordsd serve --dev --addr $(ADDR) --db $(DB)

# The whole suite, fuzz seed corpora included (go test runs every Fuzz target over its corpus).
test:
	$(GO) test -count=1 -timeout 10m ./...

test-race:
	$(GO) test -race -count=1 -timeout 15m ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run ./cmd/recordsctl definitions lint definitions

# Benchmarks (never timed tests): each layer of a request next to raw SQL, on SQLite and PostgreSQL.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 1 ./runtime/server/

# Explore new inputs for the parsers (not part of make test).
fuzz:
	$(GO) test ./engine/listplan -run '^$$' -fuzz FuzzParseFilters -fuzztime $(FUZZTIME)
	$(GO) test ./engine/listplan -run '^$$' -fuzz FuzzDecodeCursor -fuzztime $(FUZZTIME)
	$(GO) test ./runtime/httpapi -run '^$$' -fuzz FuzzDecodeObject -fuzztime $(FUZZTIME)

clean:
	rm -rf $(BIN)
