package setup_test

import (
	"path/filepath"
	"testing"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/provision/provisiontest"
	"github.com/kinetic-run/kinetic/testkit/gketest"
	"github.com/kinetic-run/kinetic/testkit/imagetest"

	_ "github.com/kinetic-run/kinetic/backend/kubernetes/setup"
)

// TestProvisionerGKE: the Kubernetes provisioner, as backend gke, passes the
// conformance suite against the GKE fakes (the real generated servers, with state):
// init --join writes the cluster's profile, doctor and status report a cluster that
// does not exist yet, up --preview plans it and changes nothing.
func TestProvisionerGKE(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the GKE fakes and a registry")
	}
	f := gketest.Start(t, gketest.Options{})
	reg := imagetest.StartRegistry(t)
	provisiontest.Run(t, provisiontest.Harness{
		Name: kubernetes.GKEName,
		Setup: func(t *testing.T) {
			home := t.TempDir()
			for k, v := range map[string]string{
				"HOME": home, "KINETIC_HOME": filepath.Join(home, "data"), "KINETIC_PROFILES_FILE": filepath.Join(home, "profiles.json"),
				"KINETIC_GCP_ENDPOINTS": f.Endpoints.String(), "KINETIC_PROJECT": "p", "KINETIC_ZONE": "us-central1-a",
				"KINETIC_STORE": f.StoreURL("p-kinetic"), "KINETIC_IMAGE_REGISTRY": reg.Host + "/p/kinetic",
				"KINETIC_RUNNER_IMAGE": reg.Host + "/p/kinetic/runner:conformance", "KINETIC_BACKEND": "", "KINETIC_PROFILE": "",
				"KUBECONFIG": filepath.Join(home, "kubeconfig"),
			} {
				t.Setenv(k, v)
			}
		},
		InitFlags: map[string]string{"join": "true", "project": "p", "zone": "us-central1-a", "cluster": "c"},
		Up:        true,
		Mutations: func() int { return len(f.Mutations()) },
	})
}
