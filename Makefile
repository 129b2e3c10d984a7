# flink-admission: admission webhook and controller for Flink clusters on Kubernetes.
# Every tool the targets need is installed from the Go module proxy into ./bin (tools) or
# the user cache (kube-apiserver, etcd, kube-controller-manager, kube-scheduler and KWOK, which
# take minutes to build).

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
LOCALBIN ?= $(CURDIR)/bin

CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)

CRD_DIR := deploy/crd
# CHART_CRD is the Helm chart's copy of the CRD (Helm installs crds/ untemplated).
CHART_CRD := charts/flink-admission/crds/flinkoperator.k8s.io_flinkclusters.yaml
# CHART_FILES are the chart's copies of the observability component's alerts and dashboard
# (a chart cannot read files outside its directory).
OBSERVABILITY_DIR := deploy/components/observability
CHART_FILES := charts/flink-admission/files

# Which build this is: `flink-admission version` and the flink_admission_build_info metric.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_PKG := github.com/flink-admission/flink-admission/internal/version
LDFLAGS := -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT)

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

## generate: render the CRD and the deepcopy code from api/v1beta1.
.PHONY: generate
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd:maxDescLen=0,generateEmbeddedObjectMeta=true paths=./api/... output:crd:artifacts:config=$(CRD_DIR)
	cp $(CRD_DIR)/flinkoperator.k8s.io_flinkclusters.yaml $(CHART_CRD)
	cp $(OBSERVABILITY_DIR)/prometheusrule.yaml $(OBSERVABILITY_DIR)/dashboard.json $(CHART_FILES)/

## envtest: build (once, cached) the control plane for tests and `make run`: kube-apiserver,
## etcd, kube-controller-manager, kube-scheduler and KWOK.
.PHONY: envtest
envtest:
	@hack/envtest-binaries.sh --control-plane >/dev/null

# The environment every target that runs the control plane gives its programs.
CONTROL_PLANE_ENV = KUBEBUILDER_ASSETS="$$(hack/envtest-binaries.sh)" FLINK_ADMISSION_CONTROL_PLANE="$$(hack/envtest-binaries.sh --control-plane)"

.PHONY: build
build:
	$(GO) build ./...

# The dev command's files are built only with -tags dev: vet them too.
.PHONY: vet
vet:
	$(GO) vet ./...
	$(GO) vet -tags dev ./cmd/flink-admission/...
	$(GO) vet -tags conformance ./e2e/conformance/
	$(GO) vet -tags long ./hack/image/ ./hack/bench/bench/

.PHONY: fmt-check
fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## verify-generated: fail when the generated CRD or deepcopy code is stale.
.PHONY: verify-generated
verify-generated: generate
	@if [[ -n "$$(git status --porcelain -- $(CRD_DIR) api $(CHART_CRD) $(CHART_FILES))" ]]; then \
		echo "generated files are stale; run 'make generate' and commit:"; git status --porcelain -- $(CRD_DIR) api $(CHART_CRD) $(CHART_FILES); git --no-pager diff --stat -- $(CRD_DIR) api $(CHART_CRD) $(CHART_FILES); exit 1; fi

## test: everything but make test-long's, on a real control plane (kube-apiserver, etcd,
## kube-controller-manager, kube-scheduler, KWOK nodes) built from the Go module proxy; and,
## side by side with it, the conformance subset on real Flink 2.2.1 (scenarios 1, 7 and 8 in
## both deployment types; make conformance runs all), which mostly waits on Flink: its output
## follows the rest's.
.PHONY: test
test: fmt-check vet verify-generated envtest
	@log="$$(mktemp)"; trap 'rm -f "$$log"' EXIT; \
	$(CONTROL_PLANE_ENV) $(GO) test -tags conformance -count=1 -timeout 20m -run TestScenarios ./e2e/conformance/ >"$$log" 2>&1 & conformance=$$!; \
	$(CONTROL_PLANE_ENV) $(GO) test -count=1 -timeout 30m ./...; status=$$?; \
	wait $$conformance || status=1; \
	echo "--- conformance subset (e2e/conformance, -tags conformance -run TestScenarios):"; cat "$$log"; \
	exit $$status

## test-long: the tests too long for make test that cover what it covers another way, which
## CI runs after it (.ci/run): the image built for both platforms (an arm64
## cross-compilation; make test builds amd64), and the bench harness's controller section run
## small end to end on the control plane.
.PHONY: test-long
test-long: envtest
	$(CONTROL_PLANE_ENV) $(GO) test -tags long -count=1 -timeout 60m ./hack/image/ ./hack/bench/bench/

## run: the local control plane (kube-apiserver, etcd, kube-controller-manager, kube-scheduler,
## three KWOK nodes) with the CRD, the webhooks and the controller of this build, and a
## simulated Flink (flink-admission dev, in a build with -tags dev); FLINK=real runs a real
## Flink JVM in every JobManager and TaskManager pod instead (Java 17 and Maven; Flink's jars
## from Maven Central, cached). The first run builds the control plane (~15-20 minutes, cached).
.PHONY: run
run: | $(LOCALBIN)
	$(GO) build -tags dev -trimpath -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/flink-admission ./cmd/flink-admission
	$(LOCALBIN)/flink-admission dev $(if $(FLINK),--flink=$(FLINK))

## conformance: the scenario table of the pull request behind deploymentType: Deployment,
## against real Apache Flink JobManagers and TaskManagers (one JVM per pod, Flink's jars from
## Maven Central via hack/flink-artifacts.sh, cached) on the real control plane: every
## scenario for CONFORMANCE_FLINK_VERSIONS x both deployment types. Prints the table and
## writes .conformance/latest.json. Then the differential test (e2e/differential) for each of
## those versions: one script against real Flink and the fake, what the controller reads of
## each compared. Needs Java 17 and Maven.
CONFORMANCE_FLINK_VERSIONS ?= 1.20.0,2.2.1,2.3.0
CONFORMANCE_SCENARIOS ?= all
.PHONY: conformance
conformance: envtest
	$(CONTROL_PLANE_ENV) CONFORMANCE_FLINK_VERSIONS=$(CONFORMANCE_FLINK_VERSIONS) CONFORMANCE_SCENARIOS=$(CONFORMANCE_SCENARIOS) \
		$(GO) test -tags conformance -count=1 -timeout 180m -v -run TestScenarios ./e2e/conformance/
	for v in $$(echo $(CONFORMANCE_FLINK_VERSIONS) | tr , ' '); do \
		$(CONTROL_PLANE_ENV) DIFFERENTIAL_FLINK_VERSION=$$v $(GO) test -tags conformance -count=1 -timeout 40m -v -run TestFakeFollowsRealFlink ./e2e/differential/ || exit 1; \
	done

## soak-controller: the controller's invariants over many more random event sequences than
## make test explores, drawn anew each run (SIM_SEQUENCES, SIM_STEPS; SIM_SEED=<seed> replays
## one; make test explores a fixed set, SIM_BASE picks another).
SIM_SEQUENCES ?= 50000
SIM_STEPS ?= 60
.PHONY: soak-controller
soak-controller:
	SIM_BASE=random SIM_SEQUENCES=$(SIM_SEQUENCES) SIM_STEPS=$(SIM_STEPS) $(GO) test -count=1 -timeout 2h -run TestInvariants -v ./controller/simulation/

## image: the server's OCI image (linux/amd64 and linux/arm64 in one index), built without a
## container engine by hack/image (go-containerregistry) into dist/image; IMG names it.
IMG ?= flink-admission:latest
.PHONY: image
image:
	$(GO) run ./hack/image -img "$(IMG)" -out dist/image -version "$(VERSION)" -commit "$(COMMIT)"

## installer: one-file installers in dist/ (install.yaml, install-cert-manager.yaml,
## install-webhook-only.yaml, install-admission-policy.yaml), each overlay rendered with the
## image IMG.
.PHONY: installer
installer:
	$(GO) run ./hack/installer -img "$(IMG)" -out dist

## bench: one table of figures (not pass/fail): the admission packages' Go benchmarks, HTTPS
## on loopback against `flink-admission serve`, writes through a real kube-apiserver with and
## without CEL rules and webhooks, the server's memory, the CEL rules' costs, and the
## controller with 500 clusters on the real control plane with simulated Flink; a JSON copy
## goes to .bench/. Several minutes; BENCH_QUICK=1 for small counts, BENCH_FILTER=regexp to
## choose the Go benchmarks, BENCH_ONLY=cel,inprocess,https,apiserver,controller to run some
## sections only, BENCH_PROFILE=<seconds> to record CPU profiles (API server, webhook server),
## BENCH_CLUSTERS=<n> (500) and BENCH_REPLICAS=<n> (1; more run leader-elected serve replicas
## and a phase that kills the leader mid-update) to size the controller section.
.PHONY: bench
bench: envtest
	$(CONTROL_PLANE_ENV) $(GO) run ./hack/bench

## soak: the long versions of the load tests (figures, not pass/fail timings): 100,000 reviews
## at concurrency 64 over HTTPS against the real binary, 0 errors, memory back to idle.
.PHONY: soak
soak: envtest
	KUBEBUILDER_ASSETS="$$(hack/envtest-binaries.sh)" $(GO) test -count=1 -timeout 60m -v -run '^TestSustainedLoad$$' ./e2e/ -args -load-reviews=100000

## release: everything a release ships, in a fresh dist/ (make release VERSION=v0.1.0), with
## only the Go module proxy: the multi-arch OCI image layout (dist/image) and its binaries
## (dist/bin), the one-file installers and the Helm chart archive, both naming the image by its
## index digest, a CycloneDX SBOM per binary (dist/sbom) and SHA256SUMS. Push the layout, then
## publish the rest; RELEASE_REPO is where the image will be pushed.
RELEASE_REPO ?= ghcr.io/flink-admission/flink-admission
.PHONY: release
release:
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]] || { echo "usage: make release VERSION=vX.Y.Z (got '$(VERSION)')"; exit 2; }
	rm -rf dist
	$(GO) run ./hack/image -img "$(RELEASE_REPO):$(VERSION)" -out dist/image -version "$(VERSION)" -commit "$(COMMIT)" -bin-dir dist/bin -digest-file dist/image.digest
	$(GO) run ./hack/installer -img "$(RELEASE_REPO)@$$(cat dist/image.digest)" -out dist
	$(GO) run ./hack/release -version "$(VERSION)" -dist dist -chart charts/flink-admission -image "$(RELEASE_REPO)@$$(cat dist/image.digest)"
