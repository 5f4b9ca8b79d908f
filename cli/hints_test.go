package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/image"
)

// TestHintsNameCommandsThatExist: every `kinetic …` command a user-facing hint names
// resolves to a command whose flags parse.
func TestHintsNameCommandsThatExist(t *testing.T) {
	_, err := image.Settings{}.BundledRef("k")
	hints := []string{err.Error(), initUsageFix()}
	re := regexp.MustCompile("`(kinetic [^`]*)`")
	n := 0
	for _, h := range hints {
		for _, m := range re.FindAllStringSubmatch(h, -1) {
			n++
			args := strings.Fields(m[1])[1:]
			root := NewRoot()
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == root {
				t.Errorf("%q: no such command (%v)", m[1], err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%q: %v", m[1], err)
			}
		}
	}
	if n < 4 {
		t.Errorf("found %d commands in the hints", n)
	}
}
