package job

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestIDsAreKubernetesNamesSortedByTime(t *testing.T) {
	base := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i := 0; i < 1000; i++ {
		ids = append(ids, newID(JobPrefix, base.Add(time.Duration(i)*time.Millisecond)))
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("IDs made at increasing times do not sort in that order")
	}
	for _, id := range ids {
		if !ValidID(id) || !ValidName(id) || len(id) > 63 {
			t.Fatalf("%q is not a valid ID / Kubernetes name", id)
		}
	}
	if got, ok := CreatedAt(ids[7]); !ok || !got.Equal(base.Add(7*time.Millisecond)) {
		t.Fatalf("CreatedAt = %v, %v", got, ok)
	}
	if g := NewGroupID(); !strings.HasPrefix(g, "grp-") || !ValidID(g) {
		t.Fatalf("group ID %q", g)
	}
}

// TestIDsDoNotCollide makes a million IDs in the same millisecond: with 64 random bits
// the chance of any collision among 10^8 such IDs is about 3·10^-4, and across
// different milliseconds it is zero.
func TestIDsDoNotCollide(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	now := time.Now()
	seen := make(map[string]struct{}, n)
	for i := 0; i < n; i++ {
		id := newID(JobPrefix, now)
		if _, dup := seen[id]; dup {
			t.Fatalf("collision after %d IDs: %s", i, id)
		}
		seen[id] = struct{}{}
	}
}

func TestValidName(t *testing.T) {
	for s, want := range map[string]bool{
		"job-1a2b3c4d": true, "job-01k81kslb9d2nfr6gt7c6rk": true, "../etc": false, "Job-1": false,
		"": false, "-job": false, "job/x": false, strings.Repeat("a", 64): false,
	} {
		if got := ValidName(s); got != want {
			t.Errorf("ValidName(%q) = %v", s, got)
		}
	}
}

func TestHandleRoundTripAndForwardCompatibility(t *testing.T) {
	h := &Handle{JobID: NewID(), Backend: "local", Accelerator: "cpu", FuncName: "f", GroupIndex: "3", Debug: "false", Store: "file:///s",
		Spot: "true", KubeContext: "gke_p_z_c", ShippedRoot: "/home/u/proj"}
	var m map[string]any
	if err := json.Unmarshal(h.Encode(), &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range m {
		if _, ok := v.(string); !ok {
			t.Errorf("field %s is %T, want string", k, v)
		}
	}
	m["a_future_field"] = map[string]any{"x": 1}
	m["group_index"] = 3 // older writers used numbers
	m["spot"] = true     // and booleans
	b, _ := json.Marshal(m)
	got, err := DecodeHandle(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(h, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for _, bad := range []string{`[]`, `{"job_id": "../x"}`, `{}`, `not json`} {
		if _, err := DecodeHandle([]byte(bad)); err == nil {
			t.Errorf("DecodeHandle(%s) accepted", bad)
		}
	}
}

func TestSpecValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		spec string
		want string
	}{
		"old version":  {`{"version": 0, "kind": "command", "command": ["x"]}`, "version 0"},
		"no payload":   {`{"version": 1, "kind": "python-pickle"}`, "without a payload"},
		"no command":   {`{"version": 1, "kind": "command"}`, "without a command"},
		"unknown kind": {`{"version": 1, "kind": "perl"}`, `unknown kind "perl"`},
		"not JSON":     {`{`, "spec.json"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeSpec([]byte(tc.spec)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeSpec = %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzDecodeHandle(f *testing.F) {
	f.Add([]byte(`{"job_id":"job-1a2b3c4d","backend":"gke","group_index":2,"debug":true}`))
	f.Add([]byte(`{"job_id":null}`))
	f.Add([]byte(`{"job_id":"job-1a2b3c4d","spot":"true","kube_context":"gke_p_z_c","shipped_root":"/home/u/p"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHandle(b)
		if err != nil {
			return
		}
		if !ValidName(h.JobID) {
			t.Fatalf("accepted job_id %q", h.JobID)
		}
		h2, err := DecodeHandle(h.Encode())
		if err != nil || !cmp.Equal(h, h2) {
			t.Fatalf("re-encoded handle changed: %v %v", err, cmp.Diff(h, h2))
		}
	})
}

func FuzzDecodeSpecAndEnvelope(f *testing.F) {
	f.Add([]byte(`{"version":1,"kind":"command","command":["sh"]}`))
	f.Add([]byte(`{"success":true,"host":"0","has_value":true}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := DecodeSpec(b); err == nil {
			if _, err := DecodeSpec(s.Encode()); err != nil {
				t.Fatalf("re-encoded spec rejected: %v", err)
			}
		}
		if e, err := DecodeEnvelope(b); err == nil {
			if _, err := DecodeEnvelope(e.Encode()); err != nil {
				t.Fatalf("re-encoded envelope rejected: %v", err)
			}
		}
	})
}

func TestDebugMarker(t *testing.T) {
	m := &DebugMarker{Host: "127.0.0.1", Port: 5678, RemoteRoot: "/tmp/kinetic/job-x/root", Cwd: "/tmp/kinetic/job-x/root/src", HostIndex: "0", PID: 42,
		Time: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), WaitSeconds: 600}
	got, err := DecodeDebugMarker(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(m, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	for name, tc := range map[string]struct{ in, want string }{
		"not JSON":      {`{`, "debug.json"},
		"no host":       {`{"port": 1, "remote_root": "/r"}`, `host ""`},
		"host name":     {`{"host": "evil.example", "port": 1, "remote_root": "/r"}`, "not an IP"},
		"port zero":     {`{"host": "127.0.0.1", "port": 0, "remote_root": "/r"}`, "port 0"},
		"port too big":  {`{"host": "127.0.0.1", "port": 70000, "remote_root": "/r"}`, "port 70000"},
		"relative root": {`{"host": "127.0.0.1", "port": 1, "remote_root": "r"}`, "remote_root"},
		"negative wait": {`{"host": "::1", "port": 1, "remote_root": "/r", "wait_seconds": -1}`, "wait_seconds"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeDebugMarker([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeDebugMarker = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestSpecDebugWaitMustBePositive(t *testing.T) {
	_, err := DecodeSpec([]byte(`{"version": 1, "kind": "command", "command": ["x"], "debug": {"wait_seconds": 0}}`))
	if err == nil || !strings.Contains(err.Error(), "wait_seconds") {
		t.Fatalf("DecodeSpec = %v, want a wait_seconds error", err)
	}
}

func FuzzDecodeDebugMarker(f *testing.F) {
	f.Add([]byte(`{"host":"127.0.0.1","port":5678,"remote_root":"/w/root","host_index":"0","time":"2026-11-22T12:00:00Z","wait_seconds":600}`))
	f.Add([]byte(`{"host":"::1","port":65535,"remote_root":"/"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeDebugMarker(b)
		if err != nil {
			return
		}
		if m.Port < 1 || m.Port > 65535 || m.RemoteRoot == "" || m.RemoteRoot[0] != '/' {
			t.Fatalf("accepted %+v", m)
		}
		m2, err := DecodeDebugMarker(m.Encode())
		if err != nil || !cmp.Equal(m, m2) {
			t.Fatalf("re-encoded marker changed: %v %v", err, cmp.Diff(m, m2))
		}
	})
}
