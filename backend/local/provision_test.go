package local_test

import (
	"path/filepath"
	"testing"

	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/backend/provision/provisiontest"
)

// TestProvisioner: the local backend's provisioner passes the conformance suite on this
// machine: init writes a profile with backend local, doctor and status check this
// machine, up says there is nothing to make.
func TestProvisioner(t *testing.T) {
	provisiontest.Run(t, provisiontest.Harness{
		Name: local.Name,
		Setup: func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("KINETIC_HOME", filepath.Join(home, "data"))
			t.Setenv("KINETIC_PROFILES_FILE", filepath.Join(home, "profiles.json"))
			t.Setenv("KINETIC_STORE", "file://"+filepath.Join(home, "store"))
			for _, v := range []string{"KINETIC_PROJECT", "GOOGLE_CLOUD_PROJECT", "KINETIC_BACKEND", "KINETIC_PROFILE"} {
				t.Setenv(v, "")
			}
		},
	})
}
