package job

import (
	"encoding/json"
	"fmt"
	"net"
	"path"
	"time"
)

// DebugMarker is debug.json: written by the runner of a debug job once debugpy listens,
// read by `kinetic jobs debug` and JobHandle.debug_attach. It is untrusted input on the
// reading side (anyone who can write the store can write it), so DecodeDebugMarker
// checks every field.
type DebugMarker struct {
	// Host and Port are where debugpy listens, as seen from the worker (127.0.0.1 and the
	// port it bound). A backend turns them into an address the client can reach
	// (backend.Debugger).
	Host string `json:"host"`
	Port int    `json:"port"`
	// RemoteRoot is the worker's materialised shipped root: the remoteRoot of the path
	// mappings (the localRoot is the handle's ShippedRoot).
	RemoteRoot string `json:"remote_root"`
	// Cwd is the directory the function runs in on the worker.
	Cwd string `json:"cwd,omitempty"`
	// HostIndex is the host that waits for the debugger (the leader, "0").
	HostIndex string `json:"host_index"`
	// PID is the job's Python process on the worker.
	PID int `json:"pid,omitempty"`
	// Time is when debugpy started listening; WaitSeconds is how long it waits from then.
	Time        time.Time `json:"time"`
	WaitSeconds int       `json:"wait_seconds"`
	// AttachedAt is when a debugger attached and the leader went on to call the
	// function (nil while it waits). The other hosts of a multi-host job wait for it
	// before they call theirs (docs/debug.md, "Multi-host jobs").
	AttachedAt *time.Time `json:"attached_at,omitempty"`
	// WentOnAt is when the leader, with no debugger attached within WaitSeconds, went on
	// to call the function without one (as the reference's runner does); debugpy still
	// listens, so a debugger may attach later. The other hosts go on with it.
	WentOnAt *time.Time `json:"went_on_at,omitempty"`
}

// DecodeDebugMarker parses and checks debug.json.
func DecodeDebugMarker(b []byte) (*DebugMarker, error) {
	var m DebugMarker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("debug.json: %w", err)
	}
	if net.ParseIP(m.Host) == nil {
		return nil, fmt.Errorf("debug.json: host %q is not an IP address", m.Host)
	}
	if m.Port < 1 || m.Port > 65535 {
		return nil, fmt.Errorf("debug.json: port %d is not a TCP port", m.Port)
	}
	if !path.IsAbs(m.RemoteRoot) {
		return nil, fmt.Errorf("debug.json: remote_root %q is not an absolute path", m.RemoteRoot)
	}
	if m.WaitSeconds < 0 {
		return nil, fmt.Errorf("debug.json: wait_seconds %d is negative", m.WaitSeconds)
	}
	return &m, nil
}

// Encode returns the marker as JSON.
func (m *DebugMarker) Encode() []byte {
	b, _ := json.MarshalIndent(m, "", "  ")
	return append(b, '\n')
}
