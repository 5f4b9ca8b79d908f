package slurm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/job"
)

// TestParseStatus: sinfo and squeue lines as status asks for them; squeue keeps only
// the jobs named after a Kinetic job or batch ID, and lines of other shapes are skipped.
func TestParseStatus(t *testing.T) {
	ps := parseSinfo("debug*|up|2|idle|gpu:2\ngarbage\n|up|1|idle|x\nlong|down|1|drained|(null)\n")
	want := []Partition{{Name: "debug*", Avail: "up", Nodes: "2", State: "idle", Gres: "gpu:2"}, {Name: "long", Avail: "down", Nodes: "1", State: "drained", Gres: "(null)"}}
	if d := cmp.Diff(want, ps); d != "" {
		t.Errorf("parseSinfo (-want +got):\n%s", d)
	}
	id, gid := job.NewID(), job.NewGroupID()
	js := parseKineticJobs("12|" + id + "|RUNNING|debug|0:05|None\n13_[0-3]|" + gid + "|PENDING|debug|0:00|Resources\n14|bash|RUNNING|debug|1:00|None\n15|x|y\n")
	wantJ := []QueuedJob{{SlurmID: "12", Name: id, State: "RUNNING", Partition: "debug", Time: "0:05", Reason: "None"}, {SlurmID: "13_[0-3]", Name: gid, State: "PENDING", Partition: "debug", Time: "0:00", Reason: "Resources"}}
	if d := cmp.Diff(wantJ, js); d != "" {
		t.Errorf("parseKineticJobs (-want +got):\n%s", d)
	}
}

// FuzzParseStatus: status's parsers of sinfo, squeue and scontrol show config take
// anything, and what they keep is well formed.
func FuzzParseStatus(f *testing.F) {
	for _, s := range []string{"debug*|up|2|idle|gpu:2\n", "12|job-0123456789abcdefghijklm|RUNNING|debug|0:05|None\n",
		"AuthType = auth/munge\nAuthInfo = socket=/x.sock,ttl=3\n", "", "|||||", "=\n=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range parseSinfo(s) {
			if p.Name == "" || strings.Contains(p.Gres, "|") {
				t.Fatalf("malformed partition %+v from %q", p, s)
			}
		}
		for _, j := range parseKineticJobs(s) {
			if !job.ValidID(j.Name) || j.SlurmID == "" {
				t.Fatalf("malformed job %+v from %q", j, s)
			}
		}
		if v := authSocket(configValue(s, "AuthInfo")); strings.Contains(v, ",") {
			t.Fatalf("socket %q from %q", v, s)
		}
	})
}

// TestConfigValues: AuthType and AuthInfo's socket as scontrol show config prints them.
func TestConfigValues(t *testing.T) {
	conf := "Configuration data as of 2026-01-01T00:00:00\nAuthAltTypes            = (null)\nAuthInfo                = socket=/tmp/m.sock,ttl=60\nAuthType                = auth/munge\n"
	if got := configValue(conf, "AuthType"); got != "auth/munge" {
		t.Errorf("AuthType = %q", got)
	}
	if got := authSocket(configValue(conf, "AuthInfo")); got != "/tmp/m.sock" {
		t.Errorf("socket = %q", got)
	}
	if got := authSocket(configValue(conf, "AuthAltTypes")); got != "" {
		t.Errorf("socket of (null) = %q", got)
	}
}

// TestStoreFromNodes: the stores the nodes reach are a shared file:// path, gs and s3.
func TestStoreFromNodes(t *testing.T) {
	for raw, want := range map[string]bool{
		"file:///shared/kn": true, "gs://b": true, "s3://b?region=x": true,
		"file://rel/x": false, "mem://": false, "": false, "http://x": false, "%zz": false,
	} {
		if detail, ok := storeFromNodes(raw); ok != want || detail == "" {
			t.Errorf("storeFromNodes(%q) = %q, %v; want %v", raw, detail, ok, want)
		}
	}
}
