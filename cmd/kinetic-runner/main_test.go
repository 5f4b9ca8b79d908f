package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/runner"
	"github.com/kinetic-run/kinetic/store"
)

// TestDeps: the runner build carries no CLI, engine, Kubernetes client or image builder.
func TestDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, bad := range []string{"k8s.io/", "cloudbuild", "spf13/cobra", "kinetic/engine", "kinetic/cli", "kinetic/backend", "kinetic/image", "kinetic/server", "kinetic/batch"} {
		for _, p := range strings.Fields(string(out)) {
			// batch/layout, the store layout of a batch that a pod reads to find its
			// input, is linked; package batch (the scheduler) is not.
			if strings.Contains(p, bad) && p != "github.com/kinetic-run/kinetic/batch/layout" {
				t.Errorf("kinetic-runner links %s", p)
			}
		}
	}
}

// commandJob writes a command job to a file:// store.
func commandJob(t *testing.T, argv ...string) (url, id string, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	url = "file://" + t.TempDir()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id = job.NewID()
	spec := &job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindCommand, Command: argv}
	h := &job.Handle{JobID: id, Backend: "kubernetes", K8sName: id, Store: url}
	if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, store.HandleKey(id), h.Encode()); err != nil {
		t.Fatal(err)
	}
	return url, id, st
}

func envelope(t *testing.T, st *store.Store, id string) *job.Envelope {
	t.Helper()
	raw, err := st.Get(context.Background(), store.EnvelopeKey(id))
	if err != nil {
		t.Fatal(err)
	}
	env, err := job.DecodeEnvelope(raw)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestRunnerArgv runs jobs with the argv the pod specs and the local backend's
// containers use (backend/kubernetes/podspec.go, pathways.go; backend/local/container.go).
func TestRunnerArgv(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer

	url, id, st := commandJob(t, "sh", "-c", "echo hello from the pod")
	if err := run(ctx, []string{"runner", "--store", url, "--job", id, "--workspace", t.TempDir()}, &stdout, &stderr); err != nil {
		t.Fatalf("runner: %v\n%s", err, stderr.String())
	}
	if env := envelope(t, st, id); !env.Success {
		t.Fatalf("envelope %+v", env)
	}

	url, id, st = commandJob(t, "sh", "-c", "exit 3")
	if err := run(ctx, []string{"runner", "--store=" + url, "--job=" + id, "--workspace", t.TempDir()}, &stdout, &stderr); !errors.Is(err, runner.ErrJobFailed) {
		t.Fatalf("a failing job: %v, want ErrJobFailed", err)
	}
	if env := envelope(t, st, id); env.Success || env.ExitCode == nil || *env.ExitCode != 3 {
		t.Fatalf("envelope %+v", env)
	}

	// A batch member finds its child in the store.
	url, id, st = commandJob(t, "true")
	gid := job.NewGroupID()
	if err := st.Put(ctx, "groups/"+gid+"/children/00000004.json", []byte(`{"index":4,"job_id":"`+id+`"}`)); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "4")
	if err := run(ctx, []string{"runner", "--store", url, "--group", gid, "--index-env", "JOB_COMPLETION_INDEX", "--workspace", t.TempDir()}, &stdout, &stderr); err != nil {
		t.Fatalf("batch member: %v\n%s", err, stderr.String())
	}
	if env := envelope(t, st, id); !env.Success {
		t.Fatalf("envelope %+v", env)
	}

	// A multi-host host whose job already has a result holds until stopped.
	hctx, hcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer hcancel()
	if err := run(hctx, []string{"runner", "--store", url, "--job", id, "--workspace", t.TempDir(), "--hold"}, &stdout, &stderr); err != nil {
		t.Fatalf("--hold of a finished job: %v", err)
	}
	if hctx.Err() == nil {
		t.Fatal("--hold returned before it was stopped")
	}

	for _, bad := range [][]string{{}, {"runner", "--job", id}, {"runner", "--store", url, "extra"}, {"supervise"}, {"install-runner"}} {
		if err := run(ctx, bad, &stdout, &stderr); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}

func TestInstallRunner(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "kinetic")
	if err := run(context.Background(), []string{"install-runner", dest}, os.Stdout, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dest); err != nil || fi.Mode()&0o111 == 0 || fi.Size() == 0 {
		t.Fatalf("installed binary: %v %v", fi, err)
	}
}
