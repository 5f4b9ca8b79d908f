package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/internal/filelock"
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
	"kubectl":                 "k8s.io/kubernetes/cmd/kubectl",
	"etcd":                    "go.etcd.io/etcd/server/v3",
	"kwok":                    "sigs.k8s.io/kwok/cmd/kwok",
}

// ToolsDir is where the binaries of this version live once built:
// $XDG_CACHE_HOME/kinetic-tools/kube-<version>/.
func ToolsDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "kinetic-tools", "kube-"+Version), nil
}

// Binaries returns the directory holding the cluster's binaries, building them first
// if they are missing (about 10 minutes on 2 cores; seconds once cached). A file lock
// keeps parallel test packages from building twice.
func Binaries(ctx context.Context, log func(string, ...any)) (string, error) {
	dir, err := ToolsDir()
	if err != nil {
		return "", err
	}
	if complete(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	unlock, err := filelock.Lock(dir + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if complete(dir) {
		return dir, nil
	}
	_, file, _, _ := runtime.Caller(0)
	mod := filepath.Join(filepath.Dir(file), "tools")
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "kube-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	ldflags := fmt.Sprintf("-s -w -X k8s.io/component-base/version.gitVersion=%s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=33", Version)
	args := []string{"build", "-trimpath", "-o", tmp + "/", "-ldflags", ldflags}
	for _, pkg := range commands {
		args = append(args, pkg)
	}
	log("kubetest: building Kubernetes %s, etcd and kwok into %s (about 10 minutes the first time)", Version, dir)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod")
	// A test killed by its timeout must not leave a 10-minute build behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build the cluster binaries in %s: %w\n%s", mod, err, out.Bytes())
	}
	if err := os.Rename(filepath.Join(tmp, "v3"), filepath.Join(tmp, "etcd")); err != nil {
		// go build names etcd's binary after the last path element.
		if err2 := os.Rename(filepath.Join(tmp, "server"), filepath.Join(tmp, "etcd")); err2 != nil {
			return "", fmt.Errorf("etcd binary: %v / %v", err, err2)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	log("kubetest: built in %s", time.Since(start).Round(time.Second))
	return dir, nil
}

func complete(dir string) bool {
	for name := range commands {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}
