package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestDamagedSpecAndEnv: a job whose spec.json or env.json was damaged before it ran
// fails naming the object and what is wrong with it in plain words (it was "spec.json:
// invalid character ..." and "captured environment: unexpected end of JSON input").
func TestDamagedSpecAndEnv(t *testing.T) {
	ctx := context.Background()
	url := "file://" + t.TempDir()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	good := (&job.Spec{Version: job.SpecVersion, Kind: job.KindCommand, Command: []string{"true"}, EnvNames: []string{"X"}}).Encode()
	cases := []struct {
		name, file, want string
		spec, env        []byte
	}{
		{"spec garbage", "spec.json", "spec.json is not JSON", []byte("\x00garbage{"), nil},
		{"spec cut short", "spec.json", "spec.json is cut short", good[:len(good)/2], nil},
		{"spec empty", "spec.json", "spec.json is empty", []byte{}, nil},
		{"env garbage", "env.json", "env.json is not JSON", good, []byte("garbage")},
		{"env empty", "env.json", "env.json is empty", good, []byte{}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "job-damaged0000000000000" + string(rune('a'+i))
			if err := st.Put(ctx, store.SpecKey(id), c.spec); err != nil {
				t.Fatal(err)
			}
			if c.env != nil {
				if err := st.Put(ctx, store.EnvKey(id), c.env); err != nil {
					t.Fatal(err)
				}
			}
			env, err := Run(ctx, Options{StoreURL: url, JobID: id, Workspace: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			msg := env.FailureReason()
			if env.Success || !strings.Contains(msg, id) || !strings.Contains(msg, c.want) {
				t.Fatalf("envelope %+v; want a failure naming %s: %q", env, id, c.want)
			}
			for _, g := range []string{"invalid character", "JSON input", "json:"} {
				if strings.Contains(msg, g) {
					t.Errorf("Go's words %q in %q", g, msg)
				}
			}
		})
	}
}

// TestStoppedBeforeItRan: a job stopped while its runner was still reading it (a cancel,
// or a worker told to stop) says so in plain words; Go's "context canceled" once
// reached result() from the download step.
func TestStoppedBeforeItRan(t *testing.T) {
	url := "file://" + t.TempDir()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := "job-stoppedbeforeitran0000"
	spec := (&job.Spec{Version: job.SpecVersion, Kind: job.KindCommand, Command: []string{"true"}}).Encode()
	if err := st.Put(context.Background(), store.SpecKey(id), spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	env, err := Run(ctx, Options{StoreURL: url, JobID: id, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	msg := env.FailureReason()
	if env.Success || !strings.Contains(msg, "stopped: the job was cancelled") {
		t.Fatalf("envelope %+v; want a failure saying the job was stopped", env)
	}
	if strings.Contains(msg, "context canceled") {
		t.Fatalf("Go's words in %q", msg)
	}
}
