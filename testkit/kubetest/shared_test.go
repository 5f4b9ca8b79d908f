package kubetest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/testkit/srcroot"
)

// mayDiffer are the modules the tools module may pin at other versions than Kinetic's,
// and why: etcd v3.5 and Kubernetes v1.33 are built against gRPC v1.71 and the
// OpenTelemetry interceptors of that time, which later releases of otelgrpc removed.
// Only gRPC, OpenTelemetry and the generated Google API protos are then compiled twice
// (about 90 packages); the Kubernetes client stack above them is not among them.
var mayDiffer = []string{
	"google.golang.org/grpc",
	"google.golang.org/genproto/",
	"go.opentelemetry.io/",
}

// TestToolsShareCompiledLibraries: the packages Kinetic's tests and the test tools
// (Kubernetes, etcd, kwok, LeaderWorkerSet) both import come from the same module
// versions in both modules. Go keys a compiled package by its dependencies as well as its
// own source, so one module that differs under client-go compiles k8s.io/api,
// apimachinery and client-go a second time on a fresh machine: 616 packages (39 MB of
// source) were compiled twice before the versions were aligned.
func TestToolsShareCompiledLibraries(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over both modules")
	}
	// What `make test` compiles (the Makefile's GOFLAGS), whoever runs this test: without
	// the tag, gRPC's optional modules bring cel.dev/expr in, which CI never compiles.
	ours := modulesOf(t, srcroot.MustDir(), []string{"GOFLAGS=-tags=disable_grpc_modules"}, "-test", "./...")
	var pkgs []string
	for _, p := range commands {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	theirs := modulesOf(t, toolsModuleDir(), []string{"GOWORK=off", "GOFLAGS=-mod=readonly", "CGO_ENABLED=0"}, pkgs...)
	// A package both compile, from a module at another version: it and every package
	// above it are compiled twice (a package whose own module matches but that imports
	// such a package is caught through that import, which both compile too).
	seen := map[string]bool{}
	var bad []string
	for pkg, m := range ours {
		tm, shared := theirs[pkg]
		if !shared || tm == m || allowedToDiffer(m.path) || seen[m.path] {
			continue
		}
		seen[m.path] = true
		bad = append(bad, m.path+": Kinetic "+m.version+", the tools "+tm.version+" (e.g. "+pkg+")")
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("modules both Kinetic and the test tools compile are at different versions, so every package above them (the Kubernetes client libraries) is compiled twice on a fresh machine:\n  %s\nalign them: `go get MODULE@VERSION` in the module with the older one (in testkit/kubetest/tools with GOWORK=off GOFLAGS=-mod=mod, then `go mod tidy`; the tools are then built afresh once), or add the module to mayDiffer with the reason", strings.Join(bad, "\n  "))
	}
}

func allowedToDiffer(mod string) bool {
	for _, m := range mayDiffer {
		if mod == m || (strings.HasSuffix(m, "/") && strings.HasPrefix(mod, m)) {
			return true
		}
	}
	return false
}

type module struct{ path, version string }

// modulesOf maps each non-standard package among the dependencies of pkgs in the module
// in dir to the module version it comes from.
func modulesOf(t *testing.T, dir string, env []string, pkgs ...string) map[string]module {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{with .Module}}{{$.ImportPath}} {{.Path}} {{.Version}}{{end}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v\n%s", dir, err, stderr.Bytes())
	}
	pkgMods := map[string]module{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 {
			pkgMods[f[0]] = module{f[1], f[2]}
		}
	}
	return pkgMods
}
