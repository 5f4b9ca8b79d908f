package engine

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// ErrNotDebug means a job was not submitted with debug=True (errs.FailedPrecondition).
var ErrNotDebug = errs.New(errs.FailedPrecondition, "not a debug job")

// DebugSession is a debugger's way into a debug job: an address on this machine that
// reaches the job's debugpy, and the VS Code configuration that attaches to it.
type DebugSession struct {
	JobID string `json:"job_id"`
	// Host and Port are where a debugger on this machine connects.
	Host string `json:"host"`
	Port int    `json:"port"`
	// LocalRoot is the submitter's shipped root and RemoteRoot the worker's copy of it.
	LocalRoot  string           `json:"local_root"`
	RemoteRoot string           `json:"remote_root"`
	Marker     *job.DebugMarker `json:"marker"`
	// Launch is a launch.json configuration ("request": "attach") for VS Code.
	Launch map[string]any `json:"launch"`
	// Forwarded says the address is a forward the session holds open (Close ends it).
	Forwarded bool `json:"forwarded"`

	stop func()
}

// Close releases the session's forward, if any. It is idempotent.
func (s *DebugSession) Close() {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}

// DebugAttach waits until the debug job's debugpy listens (its runner wrote debug.json),
// then asks the backend for an address this machine can reach (backend.Debugger): the
// address itself on the local backend, a port-forward on a cluster, on localPort if it is
// not 0. It fails if the job ends first. The caller closes the session.
func (j *Job) DebugAttach(ctx context.Context, localPort int) (*DebugSession, error) {
	h := j.Handle
	if h.Debug != "true" {
		return nil, fmt.Errorf("job %s was not submitted with debug=True: submit it again with debug=True (--debug) to attach a debugger: %w", h.JobID, ErrNotDebug)
	}
	if localPort < 0 || localPort > 65535 {
		return nil, fmt.Errorf("local port %d: want 0 (any free port) or a TCP port up to 65535", localPort)
	}
	d, ok := j.Backend.(backend.Debugger)
	if !ok {
		return nil, fmt.Errorf("job %s: the %s backend cannot connect a debugger: %w", h.JobID, j.Backend.Name(), backend.ErrUnavailable)
	}
	m, err := j.waitDebugMarker(ctx)
	if err != nil {
		return nil, err
	}
	if localPort == 0 && portFree(DebugPort) {
		// VS Code's generated "attach" configuration names 5678: a forward there lets it
		// work unchanged. A taken 5678 means any free port, which the session reports.
		localPort = DebugPort
	}
	host, port, stop, err := d.DebugEndpoint(ctx, h, m, localPort)
	if err != nil {
		return nil, fmt.Errorf("job %s: connect to its debugger at %s:%d on host %s: %w", h.JobID, m.Host, m.Port, m.HostIndex, err)
	}
	s := &DebugSession{JobID: h.JobID, Host: host, Port: port, LocalRoot: h.ShippedRoot, RemoteRoot: m.RemoteRoot,
		Marker: m, Forwarded: stop != nil, stop: stop}
	s.Launch = LaunchConfig(h, host, port, m.RemoteRoot)
	return s, nil
}

// DebugPort is debugpy's default port, the one VS Code's generated attach configuration
// uses: a cluster job's port-forward takes it on this machine when it is free.
const DebugPort = 5678

// portFree says whether 127.0.0.1:port can be listened on now.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// waitDebugMarker polls for debug.json until it appears, the job ends or ctx ends.
func (j *Job) waitDebugMarker(ctx context.Context) (*job.DebugMarker, error) {
	id := j.Handle.JobID
	p := jobview.NewPoller()
	for {
		// The state first: a marker read after a terminal state could be a dead one.
		state, reason, err := j.Status(ctx)
		if err != nil {
			return nil, err
		}
		if state.Terminal() {
			msg := fmt.Sprintf("job %s is %s", id, state)
			if reason != "" {
				msg += " (" + reason + ")"
			}
			return nil, fmt.Errorf("%s: it no longer waits for a debugger", msg)
		}
		raw, err := j.Store.Get(ctx, store.DebugKey(id))
		switch {
		case err == nil:
			m, err := job.DecodeDebugMarker(raw)
			if err != nil {
				return nil, fmt.Errorf("job %s: %w", id, err)
			}
			return m, nil
		case !store.IsNotFound(err):
			return nil, err
		}
		if err := p.Wait(ctx); err != nil {
			return nil, fmt.Errorf("job %s: waiting for its debugger to start: %w", id, err)
		}
	}
}

// LaunchConfig is the VS Code launch.json configuration that attaches to a debug job's
// debugpy at host:port, mapping the submitter's shipped root to the worker's copy.
func LaunchConfig(h *job.Handle, host string, port int, remoteRoot string) map[string]any {
	local := h.ShippedRoot
	if local == "" {
		local = "${workspaceFolder}"
	}
	name := h.DisplayName
	if name == "" {
		name = h.FuncName
	}
	return map[string]any{
		"name":         strings.TrimSpace("Kinetic: " + name + " (" + h.JobID + ")"),
		"type":         "debugpy",
		"request":      "attach",
		"connect":      map[string]any{"host": host, "port": port},
		"pathMappings": []map[string]string{{"localRoot": local, "remoteRoot": remoteRoot}},
		"justMyCode":   false,
	}
}
