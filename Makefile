# Kinetic. `make demo` runs the main job on this machine; `make test` runs every test
# (make test-unit, test-cluster, test-e2e: one tier each).
GO      ?= go
# Debian's python3 carries pytest and cloudpickle from apt (see .ci/run).
PYTHON  ?= $(shell command -v /usr/bin/python3 || command -v python3)
BIN     := bin/kinetic
# One set of build settings for everything make compiles (vet, the tests, the CLI, the
# runner for this machine's architecture): static (CGO_ENABLED=0), -trimpath, and the
# runner's one build tag. Go keys compiled packages by these settings, so with one set a
# fresh machine compiles each package once for vet, the tests, `make build` and the
# amd64 runner, instead of three times (a cold .ci/run spent most of its time compiling).
export CGO_ENABLED := 0
export GOFLAGS     := -trimpath -tags=disable_grpc_modules
# The worker alone (runner, install-runner): what runs in a job's pod, without the CLI.
RUNNER  := bin/kinetic-runner

.PHONY: build runner runner-cross wheel demo test test-unit test-cluster test-e2e test-go test-python vet fmt bench clean kube-tools test-tools cluster

build:
	$(GO) build -o $(BIN) ./cmd/kinetic

# The runner's build flags, equal to image.RunnerBuildFlags (a test holds them equal):
# -s -w drops the symbol table and DWARF (63 MB → 44 MB), disable_grpc_modules drops the
# GCS client's gRPC direct path, which the runner never uses (44 MB → 31 MB).
RUNNER_FLAGS := -trimpath -tags=disable_grpc_modules -ldflags='-s -w'

runner:
	CGO_ENABLED=0 $(GO) build $(RUNNER_FLAGS) -o $(RUNNER) ./cmd/kinetic-runner

# The runner binaries a distribution ships next to bin/kinetic, from which the CLI
# publishes the runner image on any OS (image.RunnerSource).
runner-cross:
	for a in amd64 arm64; do CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build $(RUNNER_FLAGS) -o bin/kinetic-runner-linux-$$a ./cmd/kinetic-runner || exit 1; done

# Platform wheels that carry the binary (as ruff and uv ship theirs) and the runner
# binaries, into dist/: pip install dist/kinetic-*-manylinux*_x86_64*.whl gives the SDK and
# the kinetic command, offline apart from cloudpickle (python/kinetic_build.py).
WHEEL_PLATFORMS := linux/amd64 linux/arm64 darwin/arm64

wheel: runner-cross
	rm -rf dist bin/wheel && mkdir -p dist
	for p in $(WHEEL_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; d=bin/wheel/$$os-$$arch; \
	  mkdir -p $$d && cp bin/kinetic-runner-linux-amd64 bin/kinetic-runner-linux-arm64 $$d/ && \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags='-s -w' -o $$d/kinetic ./cmd/kinetic && \
	  KINETIC_WHEEL_BIN=$$d/kinetic KINETIC_WHEEL_PLATFORM=$$p $(PYTHON) -c 'import sys; sys.path.insert(0, "python"); import kinetic_build as b; print("dist/" + b.build_wheel("dist"))' || exit 1; \
	done

demo: build
	$(BIN) run examples/hello.py::main

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

# The test tools (the GCS emulator; Kubernetes, etcd and kwok; the pause binary; the
# LeaderWorkerSet controller; the test Python image's Debian layer; for the tests with
# real frameworks, jax and keras wheels from PyPI, a bare Python base, a Python 3.12
# layer and client: docs/images.md), built once per
# version into the tools cache, ~/.cache/kinetic-tools or $$KINETIC_TOOLS_CACHE (about
# 15 minutes cold on 2 cores, a second warm).
kube-tools:
	$(GO) run ./testkit/kubetest/cmd/kubecluster -build-only

# What the tests run, built fresh for every `make test` into TEST_BIN (never a stale
# one): the kinetic binary, and beside it the runner binaries for linux/amd64 and
# linux/arm64 (image.RunnerBuildFlags), which every `kinetic up` or `init` a test runs
# publishes as they are (image.RunnerSource) instead of cross-compiling them.
TEST_BIN := $(CURDIR)/bin/test

# Everything heavy the tests need, built before `go test` starts so that no test builds
# inside its own timeout: the tools (kube-tools) and, beside them, TEST_BIN.
test-tools:
	rm -rf $(TEST_BIN)
	$(GO) run ./testkit/kubetest/cmd/kubecluster -build-only -test-bin $(TEST_BIN)

# A real single-node cluster for a person, with the GCS emulator and a registry; it prints
# the environment to use it. Ctrl-C stops it.
cluster:
	$(GO) run ./testkit/kubetest/cmd/kubecluster

# The test tiers (CONTRIBUTING.md, "Test tiers"; testkit/tier):
#   test-unit     go test -short over every package but e2e/...: seconds, nothing started
#                 (no cluster, no container engine, no emulator, no kinetic binary), no
#                 test-tools needed. A test that needs more says so through its harness
#                 (tier.Heavy) and skips here.
#   test-cluster  every test of those packages: the real single-node Kubernetes cluster,
#                 podman, the registries, the GCS emulator, Slurm (the unit tests again).
#   test-e2e      e2e/... (the CLI and the examples end to end) and the Python SDK's tests.
# The Go packages of the three tiers: everything but e2e/..., and e2e/....
MODULE     := github.com/kinetic-run/kinetic
CORE_PKGS   = $(shell $(GO) list ./... | grep -v '^$(MODULE)/e2e\(/\|$$\)')
E2E_PKGS   := ./e2e/...

GO_TEST    = KINETIC_TEST_BIN=$(TEST_BIN)/kinetic $(GO) test -p 4 -count=1 -timeout 45m -ldflags=-w
PYTHON_TEST = cd python && KINETIC_BIN=$(CURDIR)/$(BIN) $(PYTHON) -m pytest -q tests

# -count=1: several tests run the kinetic binary, which the test cache cannot see.
# KINETIC_TEST_BIN: every test package runs the binary (and its runners) test-tools built.
# -timeout: the real-cluster tests run for several minutes on 2 cores.
# -p 4: the packages that start the real cluster (backend/kubernetes, e2e/gke) take
# turns on it (one cluster per machine), and each holds one of go test's slots for its
# whole run, waiting included: with the default -p 2 (GOMAXPROCS) every other package
# waited behind them for about ten minutes. With 4, the rest compile and run beside them
# (2026-11-26: all other packages done 6 minutes in; the run's CPU 40% busy).
# -ldflags=-w: no DWARF in the test binaries (nobody debugs them here; tracebacks keep
# file and line): linking backend/kubernetes's test binary took 12 s of CPU instead of
# 15-18 s, and `go test ./...` links about sixty of them on every run.
test-unit:
	$(GO) test -short -count=1 -ldflags=-w $(CORE_PKGS)

test-cluster: test-tools
	$(GO_TEST) $(CORE_PKGS)

test-e2e: test-tools build
	$(GO_TEST) $(E2E_PKGS)
	$(PYTHON_TEST)

# The Go tests of the cluster and e2e tiers in one `go test` (test-go), as before the
# tiers were named: e2e/gke and e2e/frameworks then take turns on the cluster with
# backend/kubernetes while the other packages run beside them, instead of waiting for the
# whole cluster tier to end.
test-go: test-tools
	$(GO_TEST) ./...

test-python: build
	$(PYTHON_TEST)

# Every test: vet, the unit tier (a fast failure first), then the cluster and e2e tiers'
# Go tests together, then the Python tests. (Side by side they were slower on 2
# cores: the Python batch tests start a process per job and timed out beside the cluster
# tests in a cold run, 2026-11-26.)
test: vet test-unit test-go test-python

bench: build
	$(GO) run ./bench -bin $(BIN)

clean:
	rm -rf bin
