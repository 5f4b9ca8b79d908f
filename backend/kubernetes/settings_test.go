package kubernetes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/config/configtest"
)

// TestSettings: the Kubernetes backends' settings resolve as config's own keys do, with
// the defaults, sources and fallbacks of old (they lived in config before backends
// declared their own).
func TestSettings(t *testing.T) {
	r, err := configtest.Resolve(t, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []config.Entry{
		{Key: KeyServiceAccount, Source: "unset"},
		{Key: KeyKubeconfig, Source: "unset"},
		{Key: KeyClusterType, Source: "unset"},
		{Key: KeyRunnerImage, Source: "unset"},
		{Key: KeyStoreSecret, Source: "unset"},
		{Key: KeyPodCPU, Value: "250m", Source: "default"},
		{Key: KeyPodMemory, Source: "unset"},
		{Key: KeyUnschedulableGrace, Value: "10m0s", Source: "default"},
		{Key: KeyPullGrace, Value: "2m0s", Source: "default"},
		{Key: KeyNodeLostGrace, Value: "5m0s", Source: "default"},
		{Key: KeyAccelResources, Value: "true", Source: "default"},
		{Key: KeyWarmPods, Value: "2", Source: "default"},
		{Key: KeyWarmPodIdle, Value: "1m0s", Source: "default"},
		{Key: KeyGCPEndpoints, Source: "unset"},
	}
	if d := cmp.Diff(want, configtest.Owned(r, owner)); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
	configtest.Layers(t, KeyClusterType, "gke", "generic", "gke")
	configtest.Layers(t, KeyPodCPU, "1", "2", "500m")
	configtest.Layers(t, KeyPodMemory, "1Gi", "2Gi", "3Gi")
	for _, k := range []config.Key{KeyUnschedulableGrace, KeyPullGrace, KeyNodeLostGrace} {
		configtest.Layers(t, k, "1m0s", "2m0s", "3m0s")
	}
	configtest.Layers(t, KeyAccelResources, "false", "true", "false")
	configtest.Layers(t, KeyWarmPods, "0", "1", "3")
	configtest.Layers(t, KeyWarmPodIdle, "10s", "20s", "1m0s")
	for _, k := range []config.Key{KeyServiceAccount, KeyKubeconfig, KeyRunnerImage, KeyStoreSecret, KeyGCPEndpoints} {
		configtest.Layers(t, k, string(k)+"-arg", string(k)+"-env", string(k)+"-profile")
	}

	// kubeconfig falls back to KUBECONFIG, which KINETIC_KUBECONFIG beats.
	for _, c := range []struct {
		env       map[string]string
		want, src string
	}{
		{map[string]string{"KUBECONFIG": "/k/config"}, "/k/config", "env KUBECONFIG"},
		{map[string]string{"KUBECONFIG": "/k/config", "KINETIC_KUBECONFIG": "/k/other"}, "/k/other", "env KINETIC_KUBECONFIG"},
	} {
		r, err := configtest.Resolve(t, c.env, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Get(KeyKubeconfig) != c.want || r.Source(KeyKubeconfig) != c.src {
			t.Errorf("%v: kubeconfig %q from %q, want %q from %q", c.env, r.Get(KeyKubeconfig), r.Source(KeyKubeconfig), c.want, c.src)
		}
	}
	for _, c := range []struct {
		args map[config.Key]string
		bad  []string
	}{
		{map[config.Key]string{KeyClusterType: "eks"}, []string{`invalid cluster_type "eks" (from argument)`, "gke, generic"}},
		{map[config.Key]string{KeyPodCPU: "lots"}, []string{"pod_cpu", "Kubernetes quantity"}},
		{map[config.Key]string{KeyWarmPods: "-1"}, []string{"warm_pods", "0 or more"}},
		{map[config.Key]string{KeyWarmPods: "two"}, []string{"warm_pods", "0 or more"}},
	} {
		_, err := configtest.Resolve(t, nil, nil, c.args)
		for _, b := range c.bad {
			if err == nil || !strings.Contains(err.Error(), b) {
				t.Errorf("%v: Resolve = %v, want an error with %q", c.args, err, b)
			}
		}
	}
}
