package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
)

// TestPlacementBackend: the registered factories settle which backend runs an accelerator.
func TestPlacementBackend(t *testing.T) {
	cases := []struct {
		backend, acc, want, err string
	}{
		{kubernetes.GKEName, "tpu-v6e-16", kubernetes.PathwaysName, ""},
		{kubernetes.K8sName, "tpu-v6e-8", kubernetes.PathwaysName, ""},
		{kubernetes.PathwaysName, "tpu-v6e-16", kubernetes.PathwaysName, ""},
		{kubernetes.GKEName, "tpu-v5litepod-4", kubernetes.GKEName, ""},
		{kubernetes.GKEName, "l4", kubernetes.GKEName, ""},
		{kubernetes.PathwaysName, "tpu-v5litepod-2x4", kubernetes.PathwaysName, ""}, // explicit: a one-host group
		{local.Name, "cpu", local.Name, ""},
		{local.Name, "tpu-v6e-16", "", "the local backend runs one host"},
	}
	for _, c := range cases {
		t.Run(c.backend+"/"+c.acc, func(t *testing.T) {
			sp, err := accel.Parse(c.acc)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Resolve(config.Options{Args: map[config.Key]string{config.Backend: c.backend, config.Project: "p", config.Store: "mem://", kubernetes.KeyKubeconfig: os.DevNull},
				Getenv: func(string) string { return "" }, ProfilesFile: os.DevNull})
			if err != nil {
				t.Fatal(err)
			}
			h, err := Backend(cfg, sp)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || h.Backend != c.want {
				t.Errorf("got %+v %v, want backend %q", h, err, c.want)
			}
		})
	}
}

// sharedFS is a backend whose jobs run on machines that share this one's file systems
// but have hardware of their own (Slurm's kind), known to the engine by its traits
// alone: registered for the tests below, which prove that a backend of that kind plans
// right with no engine code of its own.
type sharedFS struct{}

func (sharedFS) Key(backend.Env) string                               { return "" }
func (sharedFS) New(backend.Env) (backend.Backend, error)             { return nil, errors.New("not in this test") }
func (sharedFS) Plan(*job.Handle, accel.Spec, backend.Settings) error { return nil }
func (sharedFS) Traits() backend.Traits                               { return backend.Traits{SharesFiles: true} }

func init() { backend.Register("sharedfs-test", sharedFS{}) }

// TestSharedFileSystemPlacement: a backend whose nodes share this machine's file systems
// (Traits.SharesFiles without ThisMachinesHardware: Slurm's kind) is planned as a local one (no container, the caller's
// interpreter), but a GPU job there is not told it runs on this machine's CPU, as it is
// on the local backend.
func TestSharedFileSystemPlacement(t *testing.T) {
	for _, c := range []struct {
		backend string
		notice  bool
	}{{"sharedfs-test", false}, {local.Name, true}} {
		t.Run(c.backend, func(t *testing.T) {
			req := pickleRequest()
			req.Accelerator = "l4"
			env := newEnv(t, map[config.Key]string{config.Backend: c.backend})
			p, err := upTo(t, env, req, "placement")
			if err != nil {
				t.Fatal(err)
			}
			if !p.filesShared || p.InContainer {
				t.Errorf("filesShared %v, InContainer %v: want a job planned as a local one", p.filesShared, p.InContainer)
			}
			said := strings.Contains(strings.Join(env.notices, ""), "this machine's CPU")
			if said != c.notice {
				t.Errorf("notices %q: said \"this machine's CPU\" %v, want %v", env.notices, said, c.notice)
			}
		})
	}
}

// TestSharedFileSystemRuntime: the virtualenv of a GPU job with requirements gets the
// GPU runtime layer (jax for CUDA) on a backend whose nodes have their own hardware
// (no Traits.ThisMachinesHardware), and the CPU's on the local backend.
func TestSharedFileSystemRuntime(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "requirements.txt"), []byte("numpy\n"), 0o644)
	for _, c := range []struct{ backend, category string }{{"sharedfs-test", "gpu"}, {local.Name, "cpu"}} {
		t.Run(c.backend, func(t *testing.T) {
			r := pickleRequest()
			r.NoWorkdir, r.Cwd, r.Accelerator = false, root, "l4"
			p, err := upTo(t, newEnv(t, map[config.Key]string{config.PackageRoot: root, config.Backend: c.backend}), r, "dependencies")
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string{"numpy"}, image.MustRuntimeRequirements(c.category)...)
			if d := cmp.Diff(want, p.Spec.Requirements); d != "" {
				t.Errorf("requirements (-want +got):\n%s", d)
			}
		})
	}
}

// TestSharedFileSystemImageNotice: container_image= without the setting container, on
// a backend whose nodes share this machine's files, is said to be unused naming that
// backend (not "the local backend").
func TestSharedFileSystemImageNotice(t *testing.T) {
	req := pickleRequest()
	req.ContainerImage = "registry.example/team/img:1"
	env := newEnv(t, map[config.Key]string{config.Backend: "sharedfs-test"})
	if _, err := upTo(t, env, req, "image"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(env.notices, ""); !strings.Contains(n, "the sharedfs-test backend runs this job in a local Python environment") {
		t.Errorf("notices %q: want one naming the sharedfs-test backend", env.notices)
	}
}
