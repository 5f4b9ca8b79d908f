package kubetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/kinetic-run/kinetic/testkit/srcroot"
	"github.com/kinetic-run/kinetic/testkit/toolcache"
)

// Version is the pinned Kubernetes release; the tools module in ./tools pins it with
// etcd, kwok and LeaderWorkerSet. Change them together (check `go list -m -versions`
// first: the module proxy refuses some releases' staging modules).
const Version = "v1.33.13"

// commands are the packages the tools module builds, by the binary name they get. One
// module and one `go build` for all of them: the Kubernetes libraries they share
// (k8s.io/api, client-go, apimachinery) are compiled once, not once per module.
var commands = map[string]string{
	"kube-apiserver":          "k8s.io/kubernetes/cmd/kube-apiserver",
	"kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
	"kube-scheduler":          "k8s.io/kubernetes/cmd/kube-scheduler",
	"kubelet":                 "k8s.io/kubernetes/cmd/kubelet",
	"etcd":                    "go.etcd.io/etcd/server/v3",
	"kwok":                    "sigs.k8s.io/kwok/cmd/kwok",
	"lws-controller":          "sigs.k8s.io/lws/cmd",
}

// renames maps the name go build gives a binary (the last element of its package path,
// or the one before a major-version suffix such as /v3) to the name it gets in the tools
// directory.
var renames = map[string]string{"server": "etcd", "cmd": "lws-controller"}

// ToolsDir is where the binaries live once built: kube-<version>-<hash>/ in the tools
// cache (testkit/toolcache), where the hash is of the tools module's go.mod and go.sum,
// so any change to what it pins builds afresh into a directory of its own.
func ToolsDir() (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(toolsModuleDir(), f))
		if err != nil {
			return "", fmt.Errorf("kubetest: the tools module: %w", err)
		}
		h.Write(b)
	}
	return toolcache.Dir(fmt.Sprintf("kube-%s-%x", Version, h.Sum(nil)[:4]))
}

func toolsModuleDir() string { return srcroot.Join("testkit", "kubetest", "tools") }

// Binaries returns the directory holding the cluster's binaries (Kubernetes, etcd, kwok
// and the LeaderWorkerSet controller), building them first if they are missing (about
// 12 minutes on 2 cores; seconds once cached).
func Binaries(ctx context.Context, log func(string, ...any)) (string, error) {
	dir, err := ToolsDir()
	if err != nil {
		return "", err
	}
	ldflags := fmt.Sprintf("-s -w -X k8s.io/component-base/version.gitVersion=%s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=33", Version)
	args := []string{"-ldflags", ldflags}
	for _, pkg := range commands {
		args = append(args, pkg)
	}
	if !complete(dir) {
		log("kubetest: building Kubernetes %s, etcd, kwok and LeaderWorkerSet %s into %s (about 12 minutes on 2 cores)", Version, LWSVersion, dir)
	}
	err = buildCached(ctx, dir, toolsModuleDir(), func() bool { return complete(dir) }, args, func(tmp string) error {
		for from, to := range renames {
			if err := os.Rename(filepath.Join(tmp, from), filepath.Join(tmp, to)); err != nil {
				return fmt.Errorf("naming the %s binary: %w", to, err)
			}
		}
		return nil
	})
	return dir, err
}

// buildCached builds packages of the tools module in moduleDir into dir (go build
// -trimpath -o DIR/ ARGS...), unless done says dir already holds them, through
// toolcache.Fill (one lock, a private temporary directory, a rename); fix may adjust the
// temporary directory before it replaces dir.
func buildCached(ctx context.Context, dir, moduleDir string, done func() bool, args []string, fix func(tmp string) error) error {
	return toolcache.Fill(ctx, dir, done, func(ctx context.Context, tmp string) error {
		cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-trimpath", "-o", tmp + "/"}, args...)...)
		cmd.Dir = moduleDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod")
		// A test killed by its timeout must not leave a 10-minute build behind.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build in %s: %w\n%s", moduleDir, err, out.Bytes())
		}
		toolcache.Logf("kubetest: go build in %s: %s", filepath.Base(moduleDir), toolcache.CPU(cmd.ProcessState))
		if fix != nil {
			return fix(tmp)
		}
		return nil
	})
}

func complete(dir string) bool {
	for name := range commands {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}
