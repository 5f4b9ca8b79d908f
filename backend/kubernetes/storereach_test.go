package kubernetes

import (
	"context"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/store"
)

// TestNewRefusesAStorePodsCannotReach: whether pods reach a store is its driver's
// answer (store.FromPods), and the refusal lists the schemes that do, from the registry.
func TestNewRefusesAStorePodsCannotReach(t *testing.T) {
	for _, u := range []string{"mem://", "file://" + t.TempDir()} {
		st, err := store.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		_, err = New(st, Options{Kubeconfig: "/nonexistent"})
		if err == nil || !strings.Contains(err.Error(), "cannot be reached from pods") || !strings.Contains(err.Error(), "gs://, s3://") {
			t.Errorf("New with the store %s = %v, want a refusal naming gs://, s3://", u, err)
		}
	}
}

// TestPodCredentialsFromTheDrivers: a store secret gives the pod each linked driver's
// credential variables, pointing into the mounted secret.
func TestPodCredentialsFromTheDrivers(t *testing.T) {
	got := map[string]string{}
	for _, v := range store.PodCredentials(credsDir) {
		got[v.Name] = v.Value
	}
	if got["GOOGLE_APPLICATION_CREDENTIALS"] != credsDir+"/key.json" || got["AWS_SHARED_CREDENTIALS_FILE"] != credsDir+"/credentials" || len(got) != 2 {
		t.Fatalf("pod credentials = %v", got)
	}
}
