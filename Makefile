# flink-admission: admission webhook and controller for Flink clusters on Kubernetes.
# Every tool the targets need is installed from the Go module proxy into ./bin (tools) or
# the user cache (kube-apiserver and etcd, which take minutes to build).

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
LOCALBIN ?= $(CURDIR)/bin

CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)

CRD_DIR := deploy/crd

.PHONY: all
all: generate build

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

$(CONTROLLER_GEN): | $(LOCALBIN)
	@echo "installing controller-gen $(CONTROLLER_TOOLS_VERSION) from the Go module proxy"
	GOBIN=$(LOCALBIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $(CONTROLLER_GEN)

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)

## generate: render the CRD and deepcopy code from api/v1beta1.
.PHONY: generate
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd:maxDescLen=0,generateEmbeddedObjectMeta=true paths=./api/... output:crd:artifacts:config=$(CRD_DIR)

## envtest: build (once, cached) kube-apiserver and etcd for tests and `make run`.
.PHONY: envtest
envtest:
	@hack/envtest-binaries.sh >/dev/null

.PHONY: build
build:
	$(GO) build ./...

.PHONY: vet
vet:
	$(GO) vet ./...

.PHONY: fmt-check
fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## verify-generated: fail when the generated CRD or deepcopy code is stale.
.PHONY: verify-generated
verify-generated: generate
	@if [[ -n "$$(git status --porcelain -- $(CRD_DIR) api)" ]]; then \
		echo "generated files are stale; run 'make generate' and commit:"; git status --porcelain -- $(CRD_DIR) api; git --no-pager diff --stat -- $(CRD_DIR) api; exit 1; fi

## test: everything, on a real kube-apiserver + etcd built from the Go module proxy.
.PHONY: test
test: fmt-check vet verify-generated envtest
	KUBEBUILDER_ASSETS="$$(hack/envtest-binaries.sh)" $(GO) test -count=1 -timeout 30m ./...

## run: a local kube-apiserver + etcd with the CRD and the webhooks, served by this build
## (flink-admission dev). The first run builds kube-apiserver and etcd (~10-15 minutes, cached).
.PHONY: run
run: | $(LOCALBIN)
	$(GO) build -o $(LOCALBIN)/flink-admission ./cmd/flink-admission
	$(LOCALBIN)/flink-admission dev

## soak-controller: the controller's invariants over many more random event sequences than
## make test explores (SIM_SEQUENCES, SIM_STEPS; SIM_SEED=<seed> replays one).
SIM_SEQUENCES ?= 5000
SIM_STEPS ?= 60
.PHONY: soak-controller
soak-controller:
	SIM_SEQUENCES=$(SIM_SEQUENCES) SIM_STEPS=$(SIM_STEPS) $(GO) test -count=1 -timeout 2h -run TestInvariants -v ./controller/simulation/

## bench: admission benchmarks (figures, not pass/fail).
.PHONY: bench
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./webhook/...
