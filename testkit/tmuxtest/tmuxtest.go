// Package tmuxtest drives a program in a real terminal for tests: a tmux server of the
// test's own (its own socket), keys sent with send-keys, the screen read with
// capture-pane. What the test asserts is what a person would see.
package tmuxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Term is one tmux session running one program.
type Term struct {
	t      testing.TB
	socket string
	done   string // file the program's exit code is written to
}

// Start runs argv in dir with env (added to a minimal environment) in a new 120x40
// tmux session. The session and its server end with the test.
func Start(t testing.TB, dir string, env []string, argv ...string) *Term {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	tmp := t.TempDir()
	tm := &Term{t: t, socket: filepath.Join(tmp, "tmux.sock"), done: filepath.Join(tmp, "exit")}
	// The program, then its exit code into a file; the pane stays for capture-pane. The
	// shell traps SIGINT (a handler, not "ignore", so the program gets the default
	// back) to outlive a Ctrl-C sent to the program and write its exit code.
	var q []string
	for _, a := range argv {
		q = append(q, shq(a))
	}
	script := fmt.Sprintf("trap : INT; cd %s && %s; echo $? > %s; sleep 3600", shq(dir), strings.Join(q, " "), shq(tm.done))
	args := []string{"-S", tm.socket, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", "-s", "t"}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	args = append(args, "sh", "-c", script)
	cmd := exec.Command("tmux", args...)
	cmd.Env = append(os.Environ(), "TMUX=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", tm.socket, "kill-server").Run() })
	return tm
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Type sends text followed by Enter.
func (tm *Term) Type(text string) {
	tm.t.Helper()
	if text != "" {
		if out, err := exec.Command("tmux", "-S", tm.socket, "send-keys", "-t", "t", "-l", text).CombinedOutput(); err != nil {
			tm.t.Fatalf("tmux send-keys: %v\n%s", err, out)
		}
	}
	if out, err := exec.Command("tmux", "-S", tm.socket, "send-keys", "-t", "t", "Enter").CombinedOutput(); err != nil {
		tm.t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
}

// Screen is the pane's text now (scrollback included).
func (tm *Term) Screen() string {
	tm.t.Helper()
	out, err := exec.Command("tmux", "-S", tm.socket, "capture-pane", "-p", "-J", "-S", "-200", "-t", "t").Output()
	if err != nil {
		tm.t.Fatalf("tmux capture-pane: %v", err)
	}
	return string(out)
}

// ScreenEscapes is Screen with the pane's colours and attributes as escape sequences
// (capture-pane -e), as tmux redraws them: what a person sees in colour.
func (tm *Term) ScreenEscapes() string {
	tm.t.Helper()
	out, err := exec.Command("tmux", "-S", tm.socket, "capture-pane", "-p", "-e", "-J", "-S", "-200", "-t", "t").Output()
	if err != nil {
		tm.t.Fatalf("tmux capture-pane -e: %v", err)
	}
	return string(out)
}

// WaitFor waits until the screen shows want, and returns the screen; it fails the test
// with the screen after timeout.
func (tm *Term) WaitFor(want string, timeout time.Duration) string {
	tm.t.Helper()
	until := time.Now().Add(timeout)
	for {
		s := tm.Screen()
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(until) {
			tm.t.Fatalf("the terminal does not show %q after %s:\n%s", want, timeout, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Exit waits for the program to end and returns its exit code.
func (tm *Term) Exit(timeout time.Duration) int {
	tm.t.Helper()
	until := time.Now().Add(timeout)
	for time.Now().Before(until) {
		if b, err := os.ReadFile(tm.done); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			var code int
			fmt.Sscan(string(b), &code)
			return code
		}
		time.Sleep(100 * time.Millisecond)
	}
	tm.t.Fatalf("the program did not end within %s:\n%s", timeout, tm.Screen())
	return -1
}

// Keys sends tmux key names (e.g. "C-c") to the program, as a person presses them.
func (tm *Term) Keys(keys ...string) {
	tm.t.Helper()
	args := append([]string{"-S", tm.socket, "send-keys", "-t", "t"}, keys...)
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		tm.t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
}
