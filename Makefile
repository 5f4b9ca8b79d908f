# Kinetic. `make demo` runs the main job on this machine; `make test` runs every test.
GO      ?= go
# Debian's python3 carries pytest and cloudpickle from apt (see .ci/run).
PYTHON  ?= $(shell command -v /usr/bin/python3 || command -v python3)
BIN     := bin/kinetic
# The worker alone (runner, install-runner): what runs in a job's pod, without the CLI.
RUNNER  := bin/kinetic-runner

.PHONY: build runner runner-cross demo test test-go test-python vet fmt bench clean kube-tools cluster

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/kinetic

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

demo: build
	$(BIN) run examples/hello.py::main

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

# The real cluster's binaries (Kubernetes, etcd, kwok) and the test Python image, built
# once into the tools cache, ~/.cache/kinetic-tools or $$KINETIC_TOOLS_CACHE (about 10 minutes cold, seconds warm).
kube-tools:
	$(GO) run ./internal/kubetest/cmd/kubecluster -build-only

# A real single-node cluster for a person, with the GCS emulator and a registry; it prints
# the environment to use it. Ctrl-C stops it.
cluster:
	$(GO) run ./internal/kubetest/cmd/kubecluster

test-go: kube-tools
	# -count=1: several tests build and run the kinetic binary, which the test cache cannot see.
	# -timeout: the real-cluster tests run for several minutes on 2 cores, and the image
	# tests make a Debian base once (~2.5 min) and run podman.
	$(GO) test -count=1 -timeout 45m ./...

test-python: build
	cd python && KINETIC_BIN=$(CURDIR)/$(BIN) $(PYTHON) -m pytest -q tests

test: vet test-go test-python

bench: build
	$(GO) run ./bench -bin $(BIN)

clean:
	rm -rf bin
