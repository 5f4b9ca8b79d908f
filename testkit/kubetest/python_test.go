package kubetest

import (
	"os"
	"testing"
)

// TestPythonRootfs makes (or finds) the cached rootfs and checks it holds python3.
func TestPythonRootfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("debootstrap needs root")
	}
	p, err := PythonRootfs()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Size() < 10<<20 {
		t.Fatalf("rootfs %s: %v (size %v)", p, err, fi)
	}
}
