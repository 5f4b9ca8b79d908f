// Package provision is the interface of kinetic's setup commands (up, down, status,
// pool, init, doctor, accelerators --live) and the registry of their implementations by
// backend name, as package backend's registry is of backends (ko's resolver, go-cloud's
// URL muxes). A backend's package registers its Provisioner beside its factory (the
// Kubernetes one in backend/kubernetes/setup, the local one in backend/local); the CLI
// looks the configured backend's up and holds no knowledge of any backend.
//
// It sits under backend/ because backends implement it; it imports no backend and
// nothing of the CLI (a Call carries the command's streams and flags).
package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kinetic-run/kinetic/infra"
)

// The setup commands a Provisioner defines flags for (Flags' command).
const (
	CmdUp           = "up"
	CmdDown         = "down"
	CmdStatus       = "status"
	CmdPoolAdd      = "pool add"
	CmdPoolList     = "pool list"
	CmdPoolRemove   = "pool remove"
	CmdInit         = "init"
	CmdDoctor       = "doctor"
	CmdAccelerators = "accelerators"
)

// PoolOp is what `kinetic pool` does.
type PoolOp string

// The pool operations.
const (
	PoolAdd    PoolOp = "add"
	PoolList   PoolOp = "list"
	PoolRemove PoolOp = "remove"
)

// Call is one setup command as the CLI hands it over.
type Call struct {
	// Backend is the name the provisioner was looked up by (a provisioner may be
	// registered under several).
	Backend string
	// In, Out and Err are the command's streams: answers, results (stdout), progress,
	// plans and questions (stderr).
	In       io.Reader
	Out, Err io.Writer
	// Terminal: In is a terminal to ask on.
	Terminal bool
	// Profile is the global --profile ("" = the active one).
	Profile string
	// Flags are the command's flags: the CLI's own (-y, --preview, --json, --backend,
	// --profile-name) and those the provisioners defined (Provisioner.Flags).
	Flags *pflag.FlagSet
	// Args are the positional arguments (pool remove NAME).
	Args []string
	// Exe is the kinetic executable, for a provisioner that runs another command.
	Exe string
	// Prompter asks on the terminal (init without -y); nil when it must not ask.
	Prompter *Prompter
}

// Bool, String and Int read a flag by name: false, "" or 0 when no provisioner defined it.
func (c *Call) Bool(name string) bool {
	v, _ := c.Flags.GetBool(name)
	return v
}

// String reads a string flag by name ("" when not defined).
func (c *Call) String(name string) string {
	v, _ := c.Flags.GetString(name)
	return v
}

// Int reads an int flag by name (0 when not defined).
func (c *Call) Int(name string) int {
	v, _ := c.Flags.GetInt(name)
	return v
}

// Changed reports whether the flag was given.
func (c *Call) Changed(name string) bool { return c.Flags.Changed(name) }

// Report is what doctor found: Print writes it as lines, the value itself is the JSON
// --json prints.
type Report interface {
	Print(w io.Writer)
	// Passed: a job could run.
	Passed() bool
}

// Choice is one answer to init's "Where should jobs run?".
type Choice struct {
	Label string
	// Backend is the provisioner's name the answer picks.
	Backend string
	// Set are flags the answer sets when they were not given (the context it joins).
	Set map[string]string
}

// Provisioner sets up where a backend runs jobs. Every method gets the Call of its
// command; errors are for a person (what went wrong and what to do).
type Provisioner interface {
	// Flags defines on fs the flags the provisioner reads for command (a Cmd…
	// constant), skipping those fs has already (another provisioner's).
	Flags(command string, fs *pflag.FlagSet)
	// Survey is init's "Found on this machine" lines (indented) and its answers to
	// "Where should jobs run?", before a backend is chosen.
	Survey(ctx context.Context, c *Call) (lines []string, choices []Choice)
	// Init writes a profile for c.Backend (asking through c.Prompter when set) and makes it
	// active, making what the backend needs (or running `kinetic up`).
	Init(ctx context.Context, c *Call) error
	// Up makes what jobs need and writes the profile; Down deletes it.
	Up(ctx context.Context, c *Call) error
	Down(ctx context.Context, c *Call) error
	// Status prints where jobs run (c.Flags "json": as JSON); an error when not ready.
	Status(ctx context.Context, c *Call) error
	// Pool adds, lists or removes capacity (node pools).
	Pool(ctx context.Context, op PoolOp, c *Call) error
	// Accelerators prints the accelerators the configured place offers now (--live).
	Accelerators(ctx context.Context, c *Call) error
	// Doctor checks that a job can run.
	Doctor(ctx context.Context, c *Call) (Report, error)
}

// FlagChecker is a Provisioner that checks the values of its flags of a command before
// any backend is chosen or reached, so a bad value is a usage error (UsageError)
// whatever the configured backend (`pool add --min-nodes -1`).
type FlagChecker interface {
	CheckFlags(command string, c *Call) error
}

// CheckFlags asks every registered FlagChecker about command's flags in c.
func CheckFlags(command string, c *Call) error {
	for _, p := range All() {
		if fc, ok := p.(FlagChecker); ok {
			if err := fc.CheckFlags(command, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// ClusterSource is a Provisioner whose backends run jobs on a Kubernetes cluster: the
// dashboard's cluster page reads it (nodes, pools, warm pods) and, where the cloud
// describes the cluster, what `kinetic status` shows.
type ClusterSource interface {
	// DashboardCluster is the cluster of backend be in profile's configuration (store:
	// the dashboard's --store, "" for the configured one).
	DashboardCluster(profile, be, store string) (DashboardCluster, error)
}

// DashboardCluster is what the dashboard's cluster page reads of a cluster backend.
type DashboardCluster struct {
	// Target is the cluster (nil when it cannot be reached: Err says why).
	Target *infra.Target
	Err    error
	// Cloud, if set, reads the cluster as its cloud describes it (*gke.Status on GKE).
	Cloud func(ctx context.Context) (any, error)
}

// Info is how a provisioner is registered.
type Info struct {
	// Rank orders the provisioners in init's survey and choices (lowest first; the
	// local backend, "stay local", comes last).
	Rank int
	// InitUsage is how `kinetic init` is given this name without a terminal ("" when
	// init does not offer it): `kinetic init -y --backend local`.
	InitUsage string
}

type entry struct {
	p    Provisioner
	info Info
}

var (
	mu  sync.RWMutex
	reg = map[string]entry{}
)

// Register makes p the provisioner of backend name. Call it from the backend package's
// init. It panics on a nil p, an empty name or a name registered twice.
func Register(name string, p Provisioner, info Info) {
	if p == nil || name == "" {
		panic(fmt.Sprintf("provision.Register(%q): nil provisioner or empty name", name))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := reg[name]; dup {
		panic(fmt.Sprintf("provision.Register(%q): registered twice", name))
	}
	reg[name] = entry{p, info}
}

// Lookup returns the provisioner registered under name.
func Lookup(name string) (Provisioner, bool) {
	mu.RLock()
	defer mu.RUnlock()
	e, ok := reg[name]
	return e.p, ok
}

// Names are the registered names, by rank then name.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	ns := make([]string, 0, len(reg))
	for n := range reg {
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool {
		a, b := reg[ns[i]], reg[ns[j]]
		if a.info.Rank != b.info.Rank {
			return a.info.Rank < b.info.Rank
		}
		return ns[i] < ns[j]
	})
	return ns
}

// InitUsages are the registered InitUsage lines, by rank.
func InitUsages() []string {
	mu.RLock()
	defer mu.RUnlock()
	var us []string
	for _, n := range namesLocked() {
		if u := reg[n].info.InitUsage; u != "" {
			us = append(us, u)
		}
	}
	return us
}

// All are the distinct provisioners, by rank (one registered under several names once).
func All() []Provisioner {
	var ps []Provisioner
	for _, n := range Names() {
		p, _ := Lookup(n)
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	return ps
}

// DefineFlags lets every registered provisioner define its flags of command on fs.
func DefineFlags(command string, fs *pflag.FlagSet) {
	for _, p := range All() {
		p.Flags(command, fs)
	}
}

// ForAnnotation marks a flag that only some backends read: its value is what they are
// (as a person names them: "GKE"), its first element; the CLI refuses the flag with
// another backend ("--join is for GKE").
const ForAnnotation = "kinetic-provision-for"

// NotFor returns the error for a flag given to a backend that does not read it, or nil:
// the flags of fs that carry ForAnnotation, were given, and list neither backend nor
// any of its names in the annotation's further elements.
func NotFor(fs *pflag.FlagSet, backend string) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		for_, ok := f.Annotations[ForAnnotation]
		if err != nil || !ok || len(for_) == 0 || slices.Contains(for_[1:], backend) {
			return
		}
		err = fmt.Errorf("--%s is for %s: not for backend %s", f.Name, for_[0], backend)
	})
	return err
}

// ExitError is an error with the exit code the command ends with (the CLI's own type).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitUsage is the exit code of a usage error (a bad flag value).
const ExitUsage = 2

// UsageError marks err as a usage error (exit code 2) unless it carries a code already.
func UsageError(err error) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

// NotReady is the error of a status or doctor that found something missing (exit 1).
func NotReady(msg string) error { return &ExitError{Code: 1, Err: errors.New(msg)} }

// WriteJSON writes v as indented JSON, as every --json of the CLI does.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

var commands []func() *cobra.Command

// RegisterCommand adds a command a backend's own processes run (hidden: the local
// backend's supervise) to every program's root (Commands). Call it from an init.
func RegisterCommand(make func() *cobra.Command) {
	mu.Lock()
	defer mu.Unlock()
	commands = append(commands, make)
}

// Commands makes the registered commands, for a new root.
func Commands() []*cobra.Command {
	mu.RLock()
	defer mu.RUnlock()
	cs := make([]*cobra.Command, len(commands))
	for i, m := range commands {
		cs[i] = m()
	}
	return cs
}

// NoFlags is an empty flag set, for a Call made by code rather than a command.
func NoFlags() *pflag.FlagSet { return pflag.NewFlagSet("none", pflag.ContinueOnError) }
