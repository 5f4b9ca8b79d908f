package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// runCLI runs the command tree on args and returns its error (flag parsing and the
// checks a command makes before it opens an engine).
func runCLI(t *testing.T, args ...string) error {
	t.Helper()
	t.Setenv("KINETIC_HOME", t.TempDir())
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	return root.Execute()
}

// goText is what Go's own errors say, which a user must never read.
var goText = []string{"strconv.", "ParseInt", "ParseFloat", "time: ", "invalid syntax", "context canceled", "deadline exceeded", "json:"}

func noGoText(t *testing.T, err error) {
	t.Helper()
	for _, s := range goText {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error shows Go's text %q: %v", s, err)
		}
	}
}

// TestFlagErrorsNameTheFlag: a value pflag cannot parse is named with its flag and what
// to write, cut to errs.MaxQuoted bytes, without strconv's text.
func TestFlagErrorsNameTheFlag(t *testing.T) {
	big := strings.Repeat("9", 100_000)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "logs", "-n", "99999999999999999999", "job-x"}, "-n/--tail"},
		{[]string{"jobs", "logs", "-n", big, "job-x"}, "(100000 bytes)"},
		{[]string{"jobs", "list", "--limit", "lots"}, "--limit"},
		{[]string{"jobs", "result", "--timeout", "soon", "job-x"}, "--timeout"},
		{[]string{"jobs", "result", "--timeout", "-5", "job-x"}, "--timeout"},
		{[]string{"jobs", "result", "--timeout", "NaN", "job-x"}, "--timeout"},
		{[]string{"jobs", "result", "--timeout", "1e300", "job-x"}, "at most"},
		{[]string{"jobs", "cancel", "--cleanup-timeout", "x", "job-x"}, "--cleanup-timeout"},
		{[]string{"run", "--timeout", "135586085299701d", "m.py::f"}, "at most"},
		{[]string{"prune", "--older-than", "135586085299701d", "--dry-run"}, "at most"},
	} {
		err := runCLI(t, c.args...)
		if err == nil {
			t.Errorf("%s: no error", strings.Join(c.args, " ")[:min(80, len(strings.Join(c.args, " ")))])
			continue
		}
		if !strings.Contains(err.Error(), c.want) || len(err.Error()) > 600 {
			t.Errorf("%.80s: error %.300q does not name %q (or is too long: %d bytes)", strings.Join(c.args, " "), err, c.want, len(err.Error()))
		}
		noGoText(t, err)
	}
}

// TestSecondsFlag: the reference's CLI takes seconds (`--timeout 60`); ours takes those
// and durations.
func TestSecondsFlag(t *testing.T) {
	for s, want := range map[string]time.Duration{"60": time.Minute, "1.5": 1500 * time.Millisecond, "0": 0, "10m": 10 * time.Minute, "2d": 48 * time.Hour, "1h30m": 90 * time.Minute} {
		if got, err := parseSeconds(s); err != nil || got != want {
			t.Errorf("parseSeconds(%q) = %s, %v; want %s", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "NaN", "inf", "-inf", "1e300", "-3m"} {
		if d, err := parseSeconds(bad); err == nil {
			t.Errorf("parseSeconds(%q) = %s, no error", bad, d)
		}
	}
	cmd, _, err := NewRoot().Find([]string{"jobs", "result"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"timeout", "cleanup-timeout", "cleanup-poll-interval"} {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("jobs result has no --%s", name)
		}
	}
	for _, sub := range []string{"cancel", "cleanup"} {
		c, _, _ := NewRoot().Find([]string{"jobs", sub})
		for _, name := range []string{"cleanup-timeout", "cleanup-poll-interval"} {
			if c.Flags().Lookup(name) == nil {
				t.Errorf("jobs %s has no --%s", sub, name)
			}
		}
	}
}

func FuzzParseSeconds(f *testing.F) {
	for _, s := range []string{"60", "1.5", "7d", "1h30m", "1e300", "NaN", "99999999999d", "-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseSeconds(s)
		if err == nil && (d < 0 || d > maxFlagDuration) {
			t.Fatalf("parseSeconds(%q) = %s without an error", s, d)
		}
		if err != nil && strings.Contains(err.Error(), "strconv") {
			t.Fatalf("parseSeconds(%q): Go text %v", s, err)
		}
	})
}

// TestRunRefusesBeforeWriting: what `kinetic run` cannot run is refused before an engine
// or a store is opened: an empty command, a non-UTF-8 argument, a FUNC that is not a
// Python name; a huge name is not echoed whole.
func TestRunRefusesBeforeWriting(t *testing.T) {
	big := strings.Repeat("a", 100_000)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--", ""}, "nothing to run"},
		{[]string{"run", "--", "echo", "\xff\xfe"}, "not valid UTF-8"},
		{[]string{"run", "m.py::f", "\xff"}, "not valid UTF-8"},
		{[]string{"run", "m.py::no-such name"}, "not a Python function name"},
		{[]string{"run", "m.py::" + big + "!"}, "(100001 bytes)"},
		{[]string{"run", big + ".txt"}, "(100004 bytes)"},
		{[]string{"run", "--accelerator", big, "--", "true"}, "(100000 bytes)"},
	} {
		home := t.TempDir()
		t.Setenv("KINETIC_HOME", home)
		err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || len(err.Error()) > 600 {
			t.Errorf("%.80q: error %.300v; want it to say %q in at most 600 bytes", c.args, err, c.want)
			continue
		}
		noGoText(t, err)
	}
	if pyName("") || pyName("a..b") || pyName("1a") || !pyName("Trainer.fit") || !pyName("_f1") || !pyName("été") {
		t.Error("pyName")
	}
}
