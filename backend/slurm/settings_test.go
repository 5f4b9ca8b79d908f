package slurm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/config/configtest"
	"github.com/kinetic-run/kinetic/store"
)

// TestSettings: the Slurm backend's settings resolve as config's own keys do (argument >
// KINETIC_<KEY> > profile), unset by default; the two paths must be absolute.
func TestSettings(t *testing.T) {
	r, err := configtest.Resolve(t, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range configtest.Owned(r, owner) {
		if e.Value != "" {
			t.Errorf("%s = %q by default; want unset", e.Key, e.Value)
		}
	}
	if n := len(configtest.Owned(r, owner)); n != 7 {
		t.Errorf("%d settings owned by %s; want 7", n, owner)
	}
	configtest.Layers(t, KeyPartition, "a", "b", "c")
	configtest.Layers(t, KeySbatchArgs, "--qos=a", "--qos=b", "--qos=c")
	configtest.Layers(t, KeyKinetic, "/a/kinetic", "/b/kinetic", "/c/kinetic")
	for _, c := range []struct {
		env       map[string]string
		key       config.Key
		want, bad string
	}{
		{env: map[string]string{"KINETIC_SLURM_OUTPUT_DIR": "/shared/out/"}, key: KeyOutputDir, want: "/shared/out"},
		{env: map[string]string{"KINETIC_SLURM_OUTPUT_DIR": "out"}, key: KeyOutputDir, bad: "KINETIC_SLURM_OUTPUT_DIR"},
		{env: map[string]string{"KINETIC_SLURM_KINETIC": "bin/kinetic"}, key: KeyKinetic, bad: "not an absolute path"},
		{env: map[string]string{"KINETIC_SLURM_ENV_DIR": "/shared/envs/"}, key: KeyEnvDir, want: "/shared/envs"},
		{env: map[string]string{"KINETIC_SLURM_ENV_DIR": "envs"}, key: KeyEnvDir, bad: "KINETIC_SLURM_ENV_DIR"},
	} {
		r, err := configtest.Resolve(t, c.env, nil, nil)
		switch {
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%v: Resolve = %v, want an error naming %q", c.env, err, c.bad)
		case c.bad == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.bad == "" && r.Get(c.key) != c.want:
			t.Errorf("%v: %s = %q, want %q", c.env, c.key, r.Get(c.key), c.want)
		}
	}
}

type settings map[string]string

func (s settings) Get(k string) string { return s[k] }

// TestFactoryNew: the factory makes a backend whose options are the settings (the
// sbatch arguments split at spaces, the GPU partition the partition unless set), and
// makes the output directory.
func TestFactoryNew(t *testing.T) {
	st, err := store.Open(t.Context(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := t.TempDir() + "/out"
	be, err := factory{}.New(backend.Env{Store: st, Exe: "/x/kinetic", Settings: settings{
		"slurm_partition": "batch", "slurm_sbatch_args": " --qos=high  --mem=16G ", "slurm_output_dir": out, "slurm_account": "ml", "slurm_env_dir": "/shared/envs"}})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{Kinetic: "/x/kinetic", OutputDir: out, EnvDir: "/shared/envs", Partition: "batch", GPUPartition: "batch", Account: "ml", SbatchArgs: []string{"--qos=high", "--mem=16G"}, Grace: be.(*Backend).o.Grace}
	if d := cmp.Diff(want, be.(*Backend).o); d != "" {
		t.Errorf("options (-want +got):\n%s", d)
	}
	if _, err := (factory{}).New(backend.Env{Store: st, Settings: settings{"slurm_output_dir": out, "slurm_kinetic": "/shared/kinetic"}}); err != nil {
		t.Fatal(err)
	}
	mem, err := store.Open(t.Context(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	_, err = factory{}.New(backend.Env{Store: mem, Settings: settings{"slurm_output_dir": out}})
	if err == nil || !strings.Contains(err.Error(), "mem://") {
		t.Errorf("a mem:// store: %v; want a refusal naming it", err)
	}
}

// TestTraits: Slurm's jobs see this machine's file systems (planned as local ones) but
// do not run on this machine (no "this machine's CPU" for a GPU job).
func TestTraits(t *testing.T) {
	tr := backend.TraitsOf(Name)
	if tr.ThisMachinesHardware || !tr.SharesFiles || !tr.ObjectsNamedAfterJob {
		t.Errorf("traits %+v: want SharesFiles and ObjectsNamedAfterJob, not ThisMachinesHardware", tr)
	}
}
