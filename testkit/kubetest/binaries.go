package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/kinetic-run/kinetic/testkit/srcroot"
	"github.com/kinetic-run/kinetic/testkit/toolcache"
)

// Version is the pinned Kubernetes release; the tools module in ./tools pins it with
// etcd and kwok. Change all three together (check `go list -m -versions` first: the
// module proxy refuses some releases' staging modules).
const Version = "v1.33.13"

// commands are the packages the tools module builds, by the binary name they get.
var commands = map[string]string{
	"kube-apiserver":          "k8s.io/kubernetes/cmd/kube-apiserver",
	"kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
	"kube-scheduler":          "k8s.io/kubernetes/cmd/kube-scheduler",
	"kubelet":                 "k8s.io/kubernetes/cmd/kubelet",
	"etcd":                    "go.etcd.io/etcd/server/v3",
	"kwok":                    "sigs.k8s.io/kwok/cmd/kwok",
}

// ToolsDir is where the binaries of this version live once built:
// kube-<version>/ in the tools cache (testkit/toolcache).
func ToolsDir() (string, error) {
	return toolcache.Dir("kube-" + Version)
}

// Binaries returns the directory holding the cluster's binaries, building them first
// if they are missing (about 10 minutes on 2 cores; seconds once cached).
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
		log("kubetest: building Kubernetes %s, etcd and kwok into %s (about 10 minutes on 2 cores)", Version, dir)
	}
	err = buildCached(ctx, dir, srcroot.Join("testkit", "kubetest", "tools"), func() bool { return complete(dir) }, args, func(tmp string) error {
		// go build names etcd's binary after the last path element of its package.
		if err := os.Rename(filepath.Join(tmp, "v3"), filepath.Join(tmp, "etcd")); err != nil {
			if err2 := os.Rename(filepath.Join(tmp, "server"), filepath.Join(tmp, "etcd")); err2 != nil {
				return fmt.Errorf("etcd binary: %v / %v", err, err2)
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
