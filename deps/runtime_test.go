package deps

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The runtime lines of image.RuntimeRequirements, copied here (deps does not import
// image): the merge rules are about names, not versions.
var (
	cpuRuntime = []string{"jax==0.6.2", "jaxlib==0.6.2", "keras==3.10.0", "cloudpickle==3.1.1"}
	tpuRuntime = []string{"jax[tpu]==0.6.2", "keras==3.10.0", "cloudpickle==3.1.1"}
)

func TestWithRuntime(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		files    map[string]string
		runtime  []string
		want     []string
		wantCons []string
	}{
		{
			name:    "no requirements: the runtime alone",
			text:    "",
			runtime: cpuRuntime,
			want:    cpuRuntime,
		},
		{
			name:    "user lines first, then the runtime",
			text:    "--extra-index-url https://e.com/simple\nnumpy>=1.2\n",
			runtime: tpuRuntime,
			want:    []string{"--extra-index-url https://e.com/simple", "numpy>=1.2", "jax[tpu]==0.6.2", "keras==3.10.0", "cloudpickle==3.1.1"},
		},
		{
			name:    "a filtered jax is replaced by ours",
			text:    "keras\njax==0.4.25\njaxlib==0.4.25\n",
			runtime: cpuRuntime,
			want:    []string{"keras", "jax==0.6.2", "jaxlib==0.6.2", "cloudpickle==3.1.1"},
		},
		{
			name:    "a kn:keep jax wins over all our jax lines",
			text:    "jax==0.4.25 # kn:keep\nnumpy\n",
			runtime: cpuRuntime,
			want:    []string{"jax==0.4.25", "numpy", "keras==3.10.0", "cloudpickle==3.1.1"},
		},
		{
			name:    "a kn:keep libtpu alone replaces the jax group",
			text:    "libtpu-nightly # kn:keep\n",
			runtime: tpuRuntime,
			want:    []string{"libtpu-nightly", "keras==3.10.0", "cloudpickle==3.1.1"},
		},
		{
			name:    "the user's keras wins",
			text:    "Keras==3.5.0\n",
			runtime: tpuRuntime,
			want:    []string{"keras==3.5.0", "jax[tpu]==0.6.2", "cloudpickle==3.1.1"},
		},
		{
			name:    "the user's cloudpickle wins, even unpinned",
			text:    "cloudpickle\n",
			runtime: cpuRuntime,
			want:    []string{"cloudpickle", "jax==0.6.2", "jaxlib==0.6.2", "keras==3.10.0"},
		},
		{
			name:     "a constraint unpins ours",
			text:     "-c cons.txt\nnumpy\n",
			files:    map[string]string{"/proj/cons.txt": "keras<3.6\n"},
			runtime:  cpuRuntime,
			want:     []string{"numpy", "jax==0.6.2", "jaxlib==0.6.2", "keras", "cloudpickle==3.1.1"},
			wantCons: []string{"keras<3.6"},
		},
		{
			name:     "a kept jax constraint unpins the jax group",
			text:     "-c cons.txt\n",
			files:    map[string]string{"/proj/cons.txt": "jax==0.4.30 # kn:keep\n"},
			runtime:  tpuRuntime,
			want:     []string{"jax[tpu]", "keras==3.10.0", "cloudpickle==3.1.1"},
			wantCons: []string{"jax==0.4.30"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseText(tc.text, tc.files)
			if err != nil {
				t.Fatal(err)
			}
			kept, _ := r.Filtered()
			before := kept.Lines()
			got, err := kept.WithRuntime(tc.runtime)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got.Lines()); d != "" {
				t.Errorf("lines (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantCons, got.ConstraintLines()); d != "" {
				t.Errorf("constraints (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, kept.Lines()); d != "" {
				t.Errorf("WithRuntime changed its receiver (-before +after):\n%s", d)
			}
		})
	}
	var nilReqs *Requirements
	if got, err := nilReqs.WithRuntime([]string{"keras==3.10.0"}); err != nil || !cmp.Equal(got.Lines(), []string{"keras==3.10.0"}) {
		t.Errorf("nil.WithRuntime = %v, %v", got.Lines(), err)
	}
	if _, err := (&Requirements{}).WithRuntime([]string{"not a requirement ==="}); err == nil {
		t.Error("a runtime line that does not parse was accepted")
	}
}

// The runtime lines are part of the environment key: changing a pin changes it.
func TestEnvKeyRuntimePins(t *testing.T) {
	r, _ := parseText("numpy\n", nil)
	key := func(runtime ...string) string {
		m, err := r.WithRuntime(runtime)
		if err != nil {
			t.Fatal(err)
		}
		return EnvKey(m, "img", "cpu", "v1")
	}
	base := key(cpuRuntime...)
	if base == EnvKey(r, "img", "cpu", "v1") {
		t.Error("the runtime lines did not change the key")
	}
	if key("jax==0.6.1", "jaxlib==0.6.1", "keras==3.10.0", "cloudpickle==3.1.1") == base {
		t.Error("a new jax pin kept the key")
	}
	if key("jax==0.6.2", "jaxlib==0.6.2", "keras==3.11.0", "cloudpickle==3.1.1") == base {
		t.Error("a new keras pin kept the key")
	}
	if key(cpuRuntime...) != base {
		t.Error("the same pins gave another key")
	}
}

// TestDroppedForRuntime: a local job whose environment gets the runtime's jax is told
// so, with every dropped line and the way to keep one.
func TestDroppedForRuntime(t *testing.T) {
	r, err := parseText("jax==0.4.25\njaxlib\nnumpy\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, dropped := r.Filtered()
	want := "kinetic: ignoring 2 accelerator runtime requirements; the job's environment gets Kinetic's pinned jax and jaxlib instead (docs/images.md, \"The runtime layer\"):\n" +
		"  /proj/requirements.txt:1: jax==0.4.25\n  /proj/requirements.txt:2: jaxlib\n" +
		"kinetic: to install one anyway, end its line with \"# kn:keep\"\n"
	if d := cmp.Diff(want, DroppedForRuntime(dropped, "the job's environment")); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if DroppedForRuntime(nil, "x") != "" {
		t.Error("nothing dropped, something said")
	}
}
