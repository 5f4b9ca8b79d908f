package setup_test

import (
	"testing"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra/gke/gkename"

	_ "github.com/kinetic-run/kinetic/backend/local"
)

// TestGKEDefaults: config names no backend; the defaults of the kinetic binary come from
// the backends linked (backend/kubernetes: a project set means gke, with up's bucket and
// repository; backend/local: local otherwise).
func TestGKEDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want map[config.Key]string
	}{
		{"nothing set", nil, map[config.Key]string{config.Backend: "local", config.Cluster: "kinetic-cluster"}},
		{"a project", map[string]string{"KINETIC_PROJECT": "p", "KINETIC_ZONE": "europe-west4-a"}, map[config.Key]string{
			config.Backend: "gke", config.Store: "gs://p-kn-kinetic-cluster-jobs", config.ImageRegistry: "europe-west4-docker.pkg.dev/p/kn-kinetic-cluster"}},
		{"k8s with a project", map[string]string{"KINETIC_PROJECT": "p", "KINETIC_BACKEND": "k8s"}, map[config.Key]string{config.Backend: "k8s", config.ImageRegistry: ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := func(k string) string { return tc.env[k] }
			res, err := config.Resolve(config.Options{Getenv: env, ProfilesFile: t.TempDir() + "/none.json"})
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if got := res.Get(k); got != want {
					t.Errorf("%s = %q (%s), want %q", k, got, res.Source(k), want)
				}
			}
		})
	}
	if config.DefaultCluster != gkename.DefaultCluster {
		t.Errorf("config's default cluster %q is not the one up names, %q", config.DefaultCluster, gkename.DefaultCluster)
	}
	if config.DefaultBackend() != "local" {
		t.Errorf("DefaultBackend() = %q, want local", config.DefaultBackend())
	}
}
