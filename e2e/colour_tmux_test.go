package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/tmuxtest"
)

// TestColourOnATerminal (issue 46: colour on a TTY that honours NO_COLOR): in a real
// terminal (tmux, its screen read with its escapes), `kinetic jobs list` shows
// SUCCEEDED green and FAILED red, `kinetic jobs status` colours the state, and the
// error a command ends with has a red "kinetic:"; with NO_COLOR=1, TERM=dumb or
// --no-color the same screen has no colour, and in a pipe nothing carries an escape.
func TestColourOnATerminal(t *testing.T) {
	e := newEnv(t)
	ok := e.run("run", "--", "true")
	bad := e.run("run", "--", "false")
	if ok.code != 0 || bad.code == 0 {
		t.Fatalf("setup jobs: %d %s / %d %s", ok.code, ok.stderr, bad.code, bad.stderr)
	}
	envs := []string{"KINETIC_HOME=" + filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE=" + filepath.Join(e.home, "profiles.json"), "HOME=" + e.home, "PATH=" + os.Getenv("PATH")}
	script := e.bin + " jobs list; " + e.bin + " jobs status job-01k8zzzzzzzzzzzzzzzzzzzzzz; echo END"
	screen := func(extra []string, args ...string) (plain, coloured string) {
		t.Helper()
		s := strings.ReplaceAll(script, e.bin+" ", e.bin+" "+strings.Join(args, " ")+" ")
		for _, x := range extra { // in the shell: tmux sets TERM itself after -e
			s = "export " + x + "; " + s
		}
		tm := tmuxtest.Start(t, e.dir, envs, "sh", "-c", s)
		if code := tm.Exit(60 * time.Second); code != 0 {
			t.Fatalf("exit %d:\n%s", code, tm.Screen())
		}
		return tm.Screen(), tm.ScreenEscapes()
	}

	plain, coloured := screen(nil)
	for _, want := range []string{"SUCCEEDED", "FAILED", "kinetic:"} {
		if !strings.Contains(plain, want) {
			t.Fatalf("the screen lacks %q:\n%s", want, plain)
		}
	}
	for what, code := range map[string]string{"SUCCEEDED": "32", "FAILED": "31", "kinetic:": "31"} {
		if !colouredAs(coloured, what, code) {
			t.Errorf("on a terminal %s is not coloured (SGR %s):\n%q", what, code, coloured)
		}
	}
	for _, c := range []struct {
		name  string
		extra []string
		args  []string
	}{
		{"NO_COLOR=1", []string{"NO_COLOR=1"}, nil},
		{"TERM=dumb", []string{"TERM=dumb"}, nil},
		{"--no-color", nil, []string{"--no-color"}},
	} {
		plain, coloured := screen(c.extra, c.args...)
		if !strings.Contains(plain, "SUCCEEDED") {
			t.Fatalf("%s: the screen lacks the table:\n%s", c.name, plain)
		}
		if strings.Contains(coloured, "\x1b[") {
			t.Errorf("%s: the screen has colour:\n%q", c.name, coloured)
		}
	}
	for _, args := range [][]string{{"jobs", "list"}, {"jobs", "status", "job-01k8zzzzzzzzzzzzzzzzzzzzzz"}} {
		r := e.run(args...)
		if strings.Contains(r.stdout+r.stderr, "\x1b") {
			t.Errorf("kinetic %s in a pipe wrote escapes:\n%q\n%q", strings.Join(args, " "), r.stdout, r.stderr)
		}
	}
}

// colouredAs reports whether the first occurrence of text on screen follows an SGR
// sequence that sets colour code (tmux may write "\x1b[31m" or "\x1b[1;31m" or
// "\x1b[1m\x1b[31m").
func colouredAs(screen, text, code string) bool {
	for _, line := range strings.Split(screen, "\n") {
		i := strings.Index(line, text)
		if i < 0 {
			continue
		}
		before := line[:i]
		j := strings.LastIndex(before, "\x1b[")
		if j < 0 {
			return false
		}
		sgr := strings.TrimSuffix(before[j+2:], "m")
		for _, p := range strings.Split(sgr, ";") {
			if p == code {
				return true
			}
		}
		return false
	}
	return false
}
