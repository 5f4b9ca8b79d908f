package main

import (
	"os"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/kinetic-run/kinetic/testkit/srcroot"
)

// TestTypeChecksForMacOS: `make wheel` ships a macOS arm64 wheel, so the CLI must build
// for darwin/arm64 (a Linux-only constant in the content hash once broke it without any
// test noticing). The CLI and everything it imports are type-checked from source for
// darwin/arm64, which finds what a cross-compile would (an identifier or field that does
// not exist there) in about 20 s of CPU, where compiling the whole tree for a second
// system took 10 minutes on a fresh machine (CI builds nothing heavy inside a test). The
// runner ships for Linux only, so only the CLI is checked.
func TestTypeChecksForMacOS(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the CLI for another system")
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedTypes | packages.NeedSyntax,
		Env:  append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0"),
		Dir:  srcroot.MustDir(),
	}
	pkgs, err := packages.Load(cfg, "github.com/kinetic-run/kinetic/cmd/kinetic")
	if err != nil {
		t.Fatalf("loading the CLI for darwin/arm64: %v", err)
	}
	n := 0
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		n++
		for _, e := range p.Errors {
			t.Errorf("GOOS=darwin GOARCH=arm64: %s: %v", p.PkgPath, e)
		}
	})
	if n < 100 {
		t.Fatalf("type-checked only %d packages for darwin/arm64: the CLI imports more than that", n)
	}
}
