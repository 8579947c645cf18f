# kubebus — the two commands that matter: `make up` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
DATA_DIR ?= $(CURDIR)/.kubebus
GOTEST_FLAGS ?= -timeout 30m
export GOFLAGS := -buildvcs=false

.PHONY: all build up test unit e2e bench deps vet fmt clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/kubebus ./cmd/kubebus

## up: build and start the all-in-one cluster (embedded etcd + NATS, all components) in the foreground.
up: build
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
test: deps build vet
	KUBEBUS_BIN=$(BIN)/kubebus $(GO) test $(GOTEST_FLAGS) ./...

unit:
	$(GO) test -short ./...

e2e: build
	KUBEBUS_BIN=$(BIN)/kubebus $(GO) test $(GOTEST_FLAGS) ./test/...

bench: build
	KUBEBUS_BIN=$(BIN)/kubebus $(GO) run ./test/bench $(BENCH_ARGS)

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN) $(DATA_DIR)
