package cli

import (
	"regexp"
	"strings"
	"testing"
)

// TestRunHelpGrouped: `kinetic run --help` shows the flags everyone needs first, then
// where the job runs, then the other settings under one heading that points to `kinetic
// config show`; test-only and infrastructure settings are left out, booleans read as
// booleans, and no help text speaks of "the reference" (issue 46).
func TestRunHelpGrouped(t *testing.T) {
	cfgEnv(t)
	out, _, err := kinetic(t, "run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	flags := strings.Index(out, "\nFlags:\n")
	where := strings.Index(out, "\nWhere it runs")
	settings := strings.Index(out, "\nSettings (")
	global := strings.Index(out, "\nGlobal Flags:\n")
	if flags < 0 || where < flags || settings < where || global < settings {
		t.Fatalf("headings out of order (Flags %d, Where %d, Settings %d, Global %d):\n%s", flags, where, settings, global, out)
	}
	section := func(from, to int) string { return out[from:to] }
	for _, f := range []string{"--accelerator", "--async", "--json", "--timeout", "--quiet"} {
		if !strings.Contains(section(flags, where), f) {
			t.Errorf("%s is not among the first flags", f)
		}
	}
	for _, f := range []string{"--backend", "--project", "--store"} {
		if !strings.Contains(section(where, settings), f) {
			t.Errorf("%s is not under \"Where it runs\"", f)
		}
	}
	if !strings.Contains(out, "kinetic config show") {
		t.Errorf("the settings heading does not point to kinetic config show")
	}
	for _, hidden := range []string{"--gcp-endpoints", "--accelerator-resources", "--force-destroy", "--lws-image", "--reservation"} {
		if strings.Contains(out, hidden) {
			t.Errorf("run --help shows %s (a test-only or infrastructure setting)", hidden)
		}
	}
	for _, b := range []string{"--warm", "--no-default-excludes"} {
		if !regexp.MustCompile(`(?m)^\s+` + b + `\s{2,}\S`).MatchString(out) {
			t.Errorf("%s does not read as a boolean (no type after it):\n%s", b, out)
		}
	}
	if strings.Contains(strings.ToLower(out), "reference") {
		t.Errorf("run --help speaks of the reference")
	}
	// Hidden is not refused: a boolean setting alone means true, =false works.
	if out, _, err := kinetic(t, "config", "show", "--json", "--warm=false", "--no-default-excludes"); err != nil || !strings.Contains(out, `"key": "no_default_excludes",
      "value": "true"`) {
		t.Errorf("boolean setting flags: %v\n%s", err, out)
	}
}

// TestNoReferenceWording: no command's help speaks of "the reference" (the product whose
// behaviour ours follows is not something a user of ours knows).
func TestNoReferenceWording(t *testing.T) {
	cfgEnv(t)
	var walk func(args []string)
	root := NewRoot()
	var paths [][]string
	for _, c := range root.Commands() {
		if c.Hidden {
			continue
		}
		paths = append(paths, []string{c.Name()})
		for _, s := range c.Commands() {
			if !s.Hidden {
				paths = append(paths, []string{c.Name(), s.Name()})
			}
		}
	}
	walk = func(args []string) {
		out, _, err := kinetic(t, append(args, "--help")...)
		if err != nil {
			t.Fatalf("%v --help: %v", args, err)
		}
		if strings.Contains(strings.ToLower(out), "reference") {
			t.Errorf("kinetic %s --help speaks of the reference", strings.Join(args, " "))
		}
	}
	for _, p := range paths {
		walk(p)
	}
}
