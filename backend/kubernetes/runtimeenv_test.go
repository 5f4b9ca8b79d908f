package kubernetes

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRuntimeEnv: every pod gets KERAS_BACKEND=jax and the JAX_PLATFORMS of its
// hardware (the runner applies captured variables over them).
func TestRuntimeEnv(t *testing.T) {
	b := testBackend(t, Options{ClusterType: "gke"})
	for acc, want := range map[string]string{"cpu": "cpu", "l4": "cuda", "tpu-v6e-8": "tpu"} {
		j, err := b.jobFor(testHandle(acc), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range j.Spec.Template.Spec.Containers[0].Env {
			got[e.Name] = e.Value
		}
		if d := cmp.Diff(map[string]string{"KERAS_BACKEND": "jax", "JAX_PLATFORMS": want}, map[string]string{"KERAS_BACKEND": got["KERAS_BACKEND"], "JAX_PLATFORMS": got["JAX_PLATFORMS"]}); d != "" {
			t.Errorf("%s (-want +got):\n%s", acc, d)
		}
	}
}
