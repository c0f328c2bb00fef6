# Mooring's developer entry points. `make run` and `make test` are the two that matter;
# both build what they need first.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

K8S            := $(CURDIR)/bin/k8s
CONTROLLER_GEN := $(K8S)/controller-gen
# Tests find kube-apiserver and etcd here; `make tools` links user-provided
# KUBEBUILDER_ASSETS binaries into it, so this one setting covers both cases.
TEST_ASSETS    := $(K8S)
GO_TEST_FLAGS  ?= -count=1 -timeout 30m

.PHONY: all
all: build

##@ Build

.PHONY: tools
tools: ## Build the pinned control-plane binaries once per machine and link them into bin/k8s.
	@hack/tools/build.sh

.PHONY: generate
generate: tools ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: generate ## Generate CRDs, RBAC and webhook configurations from the code's markers.
	$(CONTROLLER_GEN) crd webhook paths=./... \
		output:crd:artifacts:config=config/crd/bases output:webhook:artifacts:config=config/webhook
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths="$$(hack/operator-rbac-paths.sh)" output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=mooring-portal paths=./internal/portal/... output:rbac:artifacts:config=config/portal/rbac
	go generate ./internal/portal/openapi ./internal/portal/client # the portal's OpenAPI document and client follow the CRDs

# What every binary reports as its version (--version, the start log line,
# mooring_build_info, the leader lease): `git describe`, or "dev" outside Git.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
VERSION_LDFLAGS = -X github.com/mooringhq/mooring/internal/version.Version=$(VERSION) \
	-X github.com/mooringhq/mooring/internal/version.Revision=$(REVISION)

.PHONY: build
build: ## Build the operator (bin/mooring), the portal (bin/mooring-portal), the developer command (bin/mooring-dev) and the kubectl plugin (bin/kubectl-mooring).
	CGO_ENABLED=0 go build -ldflags "$(VERSION_LDFLAGS)" -o bin/mooring ./cmd/mooring # static: the local real node's database pods run it as their instance manager
	go build -ldflags "$(VERSION_LDFLAGS)" -o bin/mooring-portal ./cmd/mooring-portal
	go build -ldflags "$(VERSION_LDFLAGS)" -o bin/mooring-dev ./cmd/mooring-dev
	go build -ldflags "$(VERSION_LDFLAGS)" -o bin/kubectl-mooring ./cmd/kubectl-mooring

.PHONY: plugin-dist
plugin-dist: ## Build the kubectl plugin's release archives into dist/ and write their sha256 into plugins/mooring.yaml (VERSION=vX.Y.Z).
	@hack/plugin-dist.sh

.PHONY: image
image: ## Build the operator's and the portal's OCI images without Docker: bin/image/{mooring,mooring-portal} (OCI layouts) and .tar files (VERSION=vX.Y.Z, else git describe).
	go run ./hack/image --package ./cmd/mooring --name mooring --out bin/image $(if $(PLATFORMS),--platforms $(PLATFORMS)) $(if $(VERSION),--version $(VERSION))
	go run ./hack/image --package ./cmd/mooring-portal --name mooring-portal --repository ghcr.io/mooringhq/mooring-portal \
		--description "The Mooring portal, a REST API for Mooring's users, roles and objects" --out bin/image $(if $(PLATFORMS),--platforms $(PLATFORMS)) $(if $(VERSION),--version $(VERSION))

RELEASE_DIR ?= dist/release

.PHONY: release
release: ## Build both images for linux/amd64 and linux/arm64 with SBOMs and signed provenance into dist/release (RELEASE_KEY=key.pem required; VERSION=vX.Y.Z, else git describe).
	@if [ -z "$(RELEASE_KEY)" ]; then echo "make release needs RELEASE_KEY=path/to/key.pem (ed25519 or ECDSA P-256, PEM; a throwaway one: go run ./hack/release keygen key.pem)" >&2; exit 1; fi
	go run ./hack/release build --key $(RELEASE_KEY) --out $(RELEASE_DIR) $(if $(VERSION),--version $(VERSION)) $(if $(PLATFORMS),--platforms $(PLATFORMS))
	go run ./hack/release verify --key $(RELEASE_DIR)/release.pub $(RELEASE_DIR)/mooring $(RELEASE_DIR)/mooring-portal

.PHONY: chart
chart: tools ## Regenerate charts/mooring/templates/generated from config/{default,prometheus,grafana,portal} and package the chart into bin/.
	go run ./hack/chart generate
	go run ./hack/chart package

##@ Test

.PHONY: verify
verify: tools ## Fail when generated files are stale, code is not gofmt'ed, or go vet complains.
	@hack/verify-generated.sh
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
		if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	go vet ./...

.PHONY: lint
lint: ## Run golangci-lint (built once per machine from hack/lint) with .golangci.yml.
	@hack/lint/build.sh
	bin/golangci-lint run --timeout 10m ./...

# The tiers (docs/testing.md): a test needs no control plane (unit), envtest from bin/k8s
# (integration) or a local cluster (e2e). testutil reads MOORING_TEST_TIERS and skips the
# tests of the tiers not named; a tier named there whose binaries are missing fails.
# E2E_PKGS are the packages whose TestMain starts a cluster (or whose heavy tests start
# one, or build node images, and are skipped by -short); listed first and longest first
# (test/real, then test/faults), so the longest packages start first.
E2E_PKGS   := ./test/real ./test/faults ./test/e2e ./test/portal ./test/plugin ./test/install ./test/ui \
	./internal/localcluster ./internal/nodeimage
UNIT_PKGS   = $$(go list ./... | grep -v -x -F $(foreach p,$(E2E_PKGS),-e github.com/mooringhq/mooring/$(patsubst ./%,%,$(p))))
# How many test binaries run at once, and parallel tests within one: both mostly wait on
# API servers and clusters (the suite used 0.8 of 2 cores run two at a time), so twice
# the cores.
TEST_P        ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 2) )))
TEST_PARALLEL ?= 4
# End-to-end packages run the binaries `make build` made instead of building their own.
E2E_BINS    = MOORING_OPERATOR_BIN=$(CURDIR)/bin/mooring MOORING_PORTAL_BIN=$(CURDIR)/bin/mooring-portal
# Every tier's go test writes JSON into hack/testreport: failures as they happen, then each
# package's time and the ten slowest tests.
# The packages whose tests start PostgreSQL or MariaDB servers (internal/instance,
# internal/dump, internal/controller/database) run with a plain Debian machine's PATH and
# Go's directory (their TestMain applies MOORING_DB_TEST_PATH: internal/testutil/dbserver),
# so that no test passes only where the machine links a server onto PATH. It costs
# nothing: the same run, with another PATH.
DB_TEST_PATH = /usr/sbin:/usr/bin:/sbin:/bin:$(shell go env GOROOT)/bin
GO_TEST     = MOORING_DB_TEST_PATH=$(DB_TEST_PATH) go test $(GO_TEST_FLAGS) -p $(TEST_P) -parallel $(TEST_PARALLEL) -json
TESTREPORT  = bin/testreport

.PHONY: testreport
testreport:
	@go build -o $(TESTREPORT) ./hack/testreport

# The e2e packages that leave the cluster as they found it (test/portal, test/ui: their
# TestMain sets clusterenv.Options.Shared) attach to one cluster and operator that
# hack/e2ecluster runs beside go test, in E2E_CLUSTER_DIR; the others start their own
# (docs/testing.md). WITH_E2E_CLUSTER starts it, and stops it when the recipe's shell
# exits, whether the tests passed, failed or were interrupted.
E2E_CLUSTER      = bin/e2ecluster
E2E_CLUSTER_DIR  = $(CURDIR)/bin/e2e-cluster
WITH_E2E_CLUSTER = trap '$(E2E_CLUSTER) stop $(E2E_CLUSTER_DIR)' EXIT; \
	$(E2E_BINS) $(E2E_CLUSTER) start $(E2E_CLUSTER_DIR) && MOORING_E2E_CLUSTER=$(E2E_CLUSTER_DIR)

.PHONY: e2ecluster
e2ecluster:
	@go build -o $(E2E_CLUSTER) ./hack/e2ecluster

.PHONY: test
test: tools verify lint build testreport e2ecluster ## Run every test, the three tiers in one go test: unit, envtest integration, end to end on local clusters and the real node.
	$(WITH_E2E_CLUSTER) MOORING_TEST_TIERS=unit,integration,e2e KUBEBUILDER_ASSETS=$(TEST_ASSETS) $(E2E_BINS) \
		$(GO_TEST) $(E2E_PKGS) ./... | $(TESTREPORT)

.PHONY: test-unit
test-unit: testreport ## Run the tests that need no control plane (no `make tools` needed; under 2 minutes).
	MOORING_TEST_TIERS=unit $(GO_TEST) -short $(UNIT_PKGS) | $(TESTREPORT)

.PHONY: test-integration
test-integration: tools testreport ## Run the tests against envtest (bin/k8s), with the unit tests of their packages.
	MOORING_TEST_TIERS=integration,unit KUBEBUILDER_ASSETS=$(TEST_ASSETS) $(GO_TEST) -short $(UNIT_PKGS) | $(TESTREPORT)

.PHONY: test-e2e
test-e2e: tools build testreport e2ecluster ## Run the end-to-end packages on local clusters, and the real-pod tier (test/real).
	$(WITH_E2E_CLUSTER) MOORING_TEST_TIERS=e2e,unit KUBEBUILDER_ASSETS=$(TEST_ASSETS) $(E2E_BINS) $(GO_TEST) $(E2E_PKGS) | $(TESTREPORT)

# Executions per conversion fuzz target in `make fuzz`; the builder target gets a tenth.
FUZZ_EXECS ?= 1000000

.PHONY: fuzz
fuzz: ## Fuzz longer than `make test` (which runs only the seeds): each conversion target FUZZ_EXECS times, the builder target FUZZ_EXECS/10.
	go test -run '^$$' -fuzz '^FuzzHubRoundTrip$$' -fuzztime $(FUZZ_EXECS)x ./api/v1alpha1
	go test -run '^$$' -fuzz '^FuzzSpokeRoundTrip$$' -fuzztime $(FUZZ_EXECS)x ./api/v1alpha1
	go test -run '^$$' -fuzz '^FuzzConversionAnnotation$$' -fuzztime $(FUZZ_EXECS)x ./api/v1alpha1
	go test -run '^$$' -fuzz '^FuzzChildrenValid$$' -fuzztime $$(( $(FUZZ_EXECS) / 10 ))x ./internal/controller

.PHONY: bench
bench: tools ## Benchmark against envtest (hack/opbench): 1000 and 100 CacheInstances and 2000 Apps against the API server's floor, and 1000 CacheInstances beside unrelated Secrets and ConfigMaps; one table, JSON in bin/bench.
	KUBEBUILDER_ASSETS=$(TEST_ASSETS) hack/bench/run.sh bench

.PHONY: bench-sizes
bench-sizes: tools ## Go heap per cached object per kind, before and after the cache's transforms, and per portal User (hack/bench/cachesize; make bench runs it too).
	KUBEBUILDER_ASSETS=$(TEST_ASSETS) hack/bench/run.sh sizes

.PHONY: bench-fleet
bench-fleet: tools ## The long benchmark (~13 min on 2 cores): 10,000 Apps over 10 namespaces, a cold restart re-check and 2 minutes of churn; table and JSON in bin/bench.
	KUBEBUILDER_ASSETS=$(TEST_ASSETS) hack/bench/run.sh fleet

.PHONY: bench-portal
bench-portal: tools ## Benchmark the portal against envtest (hack/portalbench): 20 developers' lists and gets at 200 req/s for 30 s through it and straight to the API server; table, JSON in bin/bench. PORTALBENCH_ARGS adds flags.
	KUBEBUILDER_ASSETS=$(TEST_ASSETS) go run ./hack/portalbench --out bin/bench $(PORTALBENCH_ARGS)

.PHONY: bench-go
bench-go: tools ## Run the Go benchmarks (go test -bench) of the packages that have them.
	KUBEBUILDER_ASSETS=$(TEST_ASSETS) go test -run '^$$' -bench . -benchtime 3x ./...

##@ Monitoring

.PHONY: dashboards
dashboards: ## Regenerate the Grafana dashboards in config/grafana from internal/dashboards.
	go run ./hack/dashboards config/grafana

.PHONY: metrics-doc
metrics-doc: tools ## Regenerate docs/metrics.md from the registry of an operator under envtest.
	KUBEBUILDER_ASSETS=$(TEST_ASSETS) go test -count=1 ./test/monitoring -run TestMetricsDoc -update

##@ Run

# REAL_NODES is how many real nodes (kubelet and containerd) the local cluster gets: 0 to 4.
REAL_NODES ?= 1

.PHONY: run
run: tools build ## Run Mooring in the foreground: on a local cluster, or on $KUBECONFIG's cluster when set.
	bin/mooring-dev run --real-nodes $(REAL_NODES)

.PHONY: dev-up
dev-up: tools build ## Like run, in the background; returns when the operator is ready.
	bin/mooring-dev up --real-nodes $(REAL_NODES)

.PHONY: dev-down
dev-down: ## Stop what dev-up started.
	@if [ -x bin/mooring-dev ]; then bin/mooring-dev down; fi

.PHONY: dev-clean
dev-clean: ## Stop the local cluster and delete its state (.mooring).
	@if [ -x bin/mooring-dev ]; then bin/mooring-dev clean; else rm -rf .mooring; fi

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*##/ { printf "  %-17s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
