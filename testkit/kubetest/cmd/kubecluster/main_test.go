package main

import (
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/cli"
	"github.com/kinetic-run/kinetic/config"

	// The backends and provisioners cmd/kinetic links, whose settings and flags the
	// printed lines use.
	_ "github.com/kinetic-run/kinetic/backend/kubernetes"
	_ "github.com/kinetic-run/kinetic/backend/kubernetes/setup"
	_ "github.com/kinetic-run/kinetic/backend/local"
)

// TestUserSetupWorksAsPrinted: every variable printed is one kinetic reads, and every
// kinetic command printed is a command whose flags parse.
func TestUserSetupWorksAsPrinted(t *testing.T) {
	env := map[string]bool{"KUBECONFIG": true}
	for _, k := range config.Keys() {
		env[k.EnvVar()] = true
	}
	cmds := 0
	for _, line := range strings.Split(UserSetup("/tmp/kc", "kinetic", "http://10.85.0.1:4443", "/tools"), "\n") {
		if v, ok := strings.CutPrefix(line, "export "); ok {
			name, _, _ := strings.Cut(v, "=")
			if !env[name] {
				t.Errorf("%q: kinetic does not read %s", line, name)
			}
		}
		if rest, ok := strings.CutPrefix(line, "bin/kinetic "); ok {
			cmds++
			args := strings.Fields(strings.ReplaceAll(rest, "'", ""))
			root := cli.NewRoot()
			cmd, flags, err := root.Find(args)
			if err != nil || cmd == root {
				t.Errorf("%q: no such command (%v)", line, err)
				continue
			}
			if err := cmd.ParseFlags(flags); err != nil {
				t.Errorf("%q: %v", line, err)
			}
		}
	}
	if cmds != 2 {
		t.Errorf("%d kinetic commands printed, want up and run", cmds)
	}
}
