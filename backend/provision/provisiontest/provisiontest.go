// Package provisiontest is the conformance suite of a provisioner (backend/provision),
// in the style of backend/backendtest: every registered implementation runs it from its
// own package's tests, against what it really sets up (this machine; the GKE fakes of
// testkit/gketest for the Kubernetes one).
package provisiontest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
)

// Harness is what the suite needs of an implementation. Setup has pointed the
// configuration (KINETIC_* variables, with t.Setenv) at a fresh profiles file and data
// directory before each subtest.
type Harness struct {
	// Name is the backend name the provisioner is registered under.
	Name string
	// Setup prepares a fresh configuration for one subtest.
	Setup func(t *testing.T)
	// InitFlags are the flags of a non-interactive `kinetic init -y --backend Name`.
	InitFlags map[string]string
	// Up: `up --preview` plans on this backend (false: up says, with an error naming a
	// flag, that there is nothing to make).
	Up bool
	// Mutations counts the changes made so far to what the provisioner sets up (the
	// fakes' mutating requests); nil when there is nothing to count.
	Mutations func() int
}

// commands are the setup commands a provisioner defines flags for.
var commands = []string{provision.CmdUp, provision.CmdDown, provision.CmdStatus, provision.CmdPoolAdd,
	provision.CmdPoolList, provision.CmdPoolRemove, provision.CmdInit, provision.CmdDoctor, provision.CmdAccelerators}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	p, ok := provision.Lookup(h.Name)
	if !ok {
		t.Fatalf("no provisioner registered as %q (registered: %v)", h.Name, provision.Names())
	}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, provision.Provisioner, Harness)
	}{
		{"Flags", testFlags},
		{"Survey", testSurvey},
		{"Init", testInit},
		{"Doctor", testDoctor},
		{"Status", testStatus},
		{"Up", testUp},
		{"Cancelled", testCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h.Setup != nil {
				h.Setup(t)
			}
			tc.fn(t, p, h)
		})
	}
}

// NewCall is a call of command on backend name as the CLI makes it: its own flags
// (-y, --preview, --json, --no-doctor, --backend, --profile-name) and the provisioners',
// with flags set; nothing to ask on (no terminal, no prompter).
func NewCall(t *testing.T, name, command string, flags map[string]string) (*provision.Call, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	fs := pflag.NewFlagSet(command, pflag.ContinueOnError)
	fs.BoolP("yes", "y", false, "")
	fs.Bool("preview", false, "")
	fs.Bool("json", false, "")
	fs.Bool("no-doctor", false, "")
	fs.String("backend", "", "")
	fs.String("profile-name", "", "")
	provision.DefineFlags(command, fs)
	for k, v := range flags {
		if err := fs.Set(k, v); err != nil {
			t.Fatalf("--%s=%s: %v", k, v, err)
		}
	}
	var out, errb bytes.Buffer
	return &provision.Call{Backend: name, In: strings.NewReader(""), Out: &out, Err: &errb, Flags: fs}, &out, &errb
}

// testFlags: every command's flags can be defined twice over the CLI's own (a
// provisioner skips what is defined), each with a usage line.
func testFlags(t *testing.T, p provision.Provisioner, _ Harness) {
	for _, cmd := range commands {
		fs := pflag.NewFlagSet(cmd, pflag.ContinueOnError)
		fs.Bool("yes", false, "")
		fs.String("backend", "", "")
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: defining the flags twice panicked: %v", cmd, r)
				}
			}()
			provision.DefineFlags(cmd, fs)
			p.Flags(cmd, fs)
		}()
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Usage == "" && f.Name != "yes" && f.Name != "backend" {
				t.Errorf("%s --%s has no usage", cmd, f.Name)
			}
		})
	}
}

// testSurvey: init's answers pick registered provisioners, with a label each.
func testSurvey(t *testing.T, p provision.Provisioner, h Harness) {
	c, _, _ := NewCall(t, "", provision.CmdInit, nil)
	_, choices := p.Survey(context.Background(), c)
	for _, ch := range choices {
		if _, ok := provision.Lookup(ch.Backend); !ok || ch.Label == "" {
			t.Errorf("choice %+v: backend not registered, or no label", ch)
		}
		for k := range ch.Set {
			if c.Flags.Lookup(k) == nil {
				t.Errorf("choice %q sets --%s, which no provisioner defines for init", ch.Label, k)
			}
		}
	}
}

// testInit: init -y writes the profile of the backend, made active; a second init
// leaves it so.
func testInit(t *testing.T, p provision.Provisioner, h Harness) {
	flags := map[string]string{"yes": "true", "profile-name": "conf"}
	for k, v := range h.InitFlags {
		flags[k] = v
	}
	for i := range 2 {
		c, _, errb := NewCall(t, h.Name, provision.CmdInit, flags)
		if err := p.Init(context.Background(), c); err != nil {
			t.Fatalf("init %d: %v\n%s", i+1, err, errb)
		}
		checkWords(t, "init", errb.String(), nil)
		f, err := config.LoadProfiles(config.ProfilesPath(nil))
		if err != nil {
			t.Fatal(err)
		}
		if f.Current != "conf" || f.Profiles["conf"][string(config.Backend)] != h.Name {
			t.Errorf("init %d: current %q, profile conf %v; want conf with backend %s", i+1, f.Current, f.Profiles["conf"], h.Name)
		}
	}
}

// testDoctor: a report that prints lines and whose JSON says the same "ok" as Passed.
func testDoctor(t *testing.T, p provision.Provisioner, h Harness) {
	c, _, _ := NewCall(t, h.Name, provision.CmdDoctor, nil)
	r, err := p.Doctor(context.Background(), c)
	if err != nil {
		checkWords(t, "doctor", err.Error(), err)
		return
	}
	var b bytes.Buffer
	r.Print(&b)
	if strings.TrimSpace(b.String()) == "" {
		t.Error("doctor's report prints nothing")
	}
	var v struct {
		OK *bool `json:"ok"`
	}
	if js, err := json.Marshal(r); err != nil || json.Unmarshal(js, &v) != nil || v.OK == nil || *v.OK != r.Passed() {
		t.Errorf("doctor's JSON %s (%v) does not say ok=%v", js, err, r.Passed())
	}
}

// testStatus: --json prints one JSON document with "ok", ready or not; not ready is an
// exit code, not a crash.
func testStatus(t *testing.T, p provision.Provisioner, h Harness) {
	c, out, _ := NewCall(t, h.Name, provision.CmdStatus, map[string]string{"json": "true", "no-doctor": "true"})
	err := p.Status(context.Background(), c)
	var ee *provision.ExitError
	if err != nil && !errors.As(err, &ee) {
		checkWords(t, "status", err.Error(), err)
		return
	}
	var v map[string]any
	if jerr := json.Unmarshal(out.Bytes(), &v); jerr != nil {
		t.Fatalf("status --json: %v\n%s", jerr, out)
	}
	if ok, has := v["ok"].(bool); !has || ok != (err == nil) {
		t.Errorf("status --json says ok=%v, and returned %v", v["ok"], err)
	}
}

// testUp: up --preview plans and changes nothing, or says there is nothing to make.
func testUp(t *testing.T, p provision.Provisioner, h Harness) {
	before := 0
	if h.Mutations != nil {
		before = h.Mutations()
	}
	c, _, errb := NewCall(t, h.Name, provision.CmdUp, map[string]string{"preview": "true"})
	err := p.Up(context.Background(), c)
	switch {
	case h.Up && err != nil:
		t.Fatalf("up --preview: %v\n%s", err, errb)
	case !h.Up && (err == nil || !strings.Contains(err.Error(), "--")):
		t.Fatalf("up on a backend with nothing to make: %v, want an error naming a flag", err)
	case err != nil:
		checkWords(t, "up", err.Error(), err)
	}
	if h.Mutations != nil && h.Mutations() != before {
		t.Errorf("up --preview changed things (%d changes)", h.Mutations()-before)
	}
}

// testCancelled: a command cancelled before it starts fails in a person's words, or
// does nothing.
func testCancelled(t *testing.T, p provision.Provisioner, h Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	for cmd, run := range map[string]func(*provision.Call) error{
		provision.CmdUp:     func(c *provision.Call) error { return p.Up(ctx, c) },
		provision.CmdStatus: func(c *provision.Call) error { return p.Status(ctx, c) },
	} {
		c, _, _ := NewCall(t, h.Name, cmd, map[string]string{"preview": "true", "yes": "false"})
		if err := run(c); err != nil {
			checkWords(t, cmd+" cancelled", err.Error(), err)
		}
	}
}

// goWords are Go's own error texts, which never reach a person.
var goWords = []string{"context canceled", "context deadline exceeded", "deadline exceeded", "EOF", "nil pointer"}

func checkWords(t *testing.T, what, s string, err error) {
	t.Helper()
	if i := slices.IndexFunc(goWords, func(w string) bool { return strings.Contains(s, w) }); i >= 0 {
		t.Errorf("%s says Go's %q: %s (%v)", what, goWords[i], s, err)
	}
}
