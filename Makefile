# kubebus — the two commands that matter: `make up` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
DATA_DIR ?= $(CURDIR)/.kubebus
GOTEST_FLAGS ?= -timeout 30m
BENCH ?= .
BENCH_FLAGS ?= -benchtime 1x
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck-$(STATICCHECK_VERSION)
export GOFLAGS := -buildvcs=false

.PHONY: all build up test unit e2e fuzz bench deps vet fmt clean compose-images compose-up compose-down compose-test

all: build

build:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/kubebus ./cmd/kubebus
	@# The pause program of the pod sandboxes: the kubelet finds it beside kubebus.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/kubebus-pause ./cmd/kubebus-pause
	@ln -sf kubebus $(BIN)/kubectl-why

## up: install what the local node needs when missing, build, and start the all-in-one cluster
## (embedded etcd + NATS, all components, one local node) in the foreground.
up: deps build
	@echo "Starting kubebus with data in $(DATA_DIR); in another shell:"
	@echo "  export KUBECONFIG=$(DATA_DIR)/kubeconfig && kubectl get ns"
	@# The local node's pod network (bridge, pod CIDR) lives in a network
	@# namespace of its own, reached with: ip netns exec kubebus-node ...
	@ip netns list | grep -qw kubebus-node || ip netns add kubebus-node
	@ip -n kubebus-node link set lo up
	$(BIN)/kubebus server --data-dir $(DATA_DIR) --node-netns /run/netns/kubebus-node

## deps: install what the tests need when it is missing (Debian packages; kubectl fallback built from source).
deps:
	@bash hack/install-deps.sh

## test: everything — unit tests and end-to-end tests against real processes and the stock kubectl.
## A test whose prerequisite (root, a tool, a kernel feature) is missing fails here instead of skipping.
test: deps build vet
	KUBEBUS_REQUIRE_PREREQS=1 KUBEBUS_BIN=$(BIN)/kubebus $(GO) test $(GOTEST_FLAGS) ./...
	@$(MAKE) --no-print-directory fuzz

unit:
	$(GO) test -short ./...

## fuzz: run each Go fuzz target for its count of inputs (about 15 s each on the project's 2-core VM), or
## for FUZZTIME when it is given (make fuzz FUZZTIME=2m). Counts, not durations, by default: with a duration,
## go1.26's fuzzing coordinator can fail a target with a bare "context deadline exceeded" at the deadline,
## with no failing input (go.dev/issue/75804). Plain `go test` already runs every target on its seeds and
## its committed corpus (testdata/fuzz/FuzzX/). A failing input is written there and fails the run.
FUZZTIME ?=
FUZZ_TARGETS := ./bus:FuzzDecode:300000 ./bus:FuzzSubjects:40000 ./bus:FuzzHeaderInt:400000 \
	./bus/tap:FuzzFilterFlags:4000 ./bus/tap:FuzzDiff:13000 \
	./apiserver:FuzzDecodeRequest:23000 ./apiserver:FuzzApplyPatch:20000 ./proxy/rules:FuzzBuild:100000
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; target=$${rest%%:*}; budget="$(FUZZTIME)"; \
		[ -n "$$budget" ] || budget="$${rest#*:}x"; \
		echo "fuzzing $$target in $$pkg for $$budget"; \
		$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $$budget -fuzzminimizetime 5s $$pkg; \
	done

e2e: build
	KUBEBUS_BIN=$(BIN)/kubebus $(GO) test $(GOTEST_FLAGS) ./test/...

## bench: the end-to-end benchmarks of docs/benchmarks.md against real processes, one run each
## (BENCH=regexp picks some: make bench BENCH=NodeLoad; BENCH_FLAGS='-benchtime 1x -count 3').
## The packages' micro-benchmarks have their own go test lines in docs/benchmarks.md.
bench: deps build
	KUBEBUS_REQUIRE_PREREQS=1 KUBEBUS_BIN=$(BIN)/kubebus $(GO) test -timeout 90m -run '^$$' -bench '$(BENCH)' $(BENCH_FLAGS) ./test/bench

## compose-images: the images of deploy/compose, built here from the binaries (FROM scratch) and a
## debootstrapped Debian root filesystem (the node image); nothing is pulled.
compose-images: build
	BIN=$(BIN) bash deploy/compose/build-images.sh

## compose-up: the HA stack of deploy/compose (etcd x3, NATS x3, API server x2 behind haproxy,
## controller-manager x2, scheduler x2, nodes x2); waits for two Ready nodes, writes deploy/compose/kubeconfig.
compose-up: deps build
	BIN=$(BIN) bash deploy/compose/up.sh

## compose-down: stop the stack and remove its containers, network, volumes and certificates.
compose-down:
	bash deploy/compose/down.sh

## compose-test: test/compose against a stack of its own (images built, seed story, chaos), torn down after.
compose-test: deps build
	KUBEBUS_REQUIRE_PREREQS=1 KUBEBUS_BIN=$(BIN)/kubebus $(GO) test -tags compose -count=1 -timeout 30m -v -run TestIntegrationCompose ./test/compose/

## vet: gofmt, go vet and staticcheck (pinned, built through the Go module proxy).
vet: $(STATICCHECK)
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	$(GO) vet ./...
	$(STATICCHECK) ./...

$(STATICCHECK):
	GOBIN=$(BIN)/.staticcheck $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(BIN)/.staticcheck/staticcheck $@

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN) $(DATA_DIR)
