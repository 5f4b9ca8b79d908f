package kubernetes

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"cloud.google.com/go/container/apiv1/containerpb"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
	"github.com/kinetic-run/kinetic/testkit/gketest"
)

// TestNewGKEDirect: New with a direct GKE connection reaches the cluster GKE's API
// describes, with the ADC token; without credentials it is ErrUnavailable with only the
// words that name the fix. The httptest TLS server stands in for the Kubernetes API
// server only to check the Authorization header and that the CA verifies.
func TestNewGKEDirect(t *testing.T) {
	gcs := gcstest.Start(t)
	gcs.CreateBucket(t, "kn-direct")
	st, err := store.Open(context.Background(), "gs://kn-direct?endpoint="+gcs.URL())
	if err != nil {
		t.Fatal(err)
	}
	var auth string
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"major":"1","minor":"33","gitVersion":"v1.33.5-gke.1"}`))
	}))
	defer api.Close()
	f := gketest.Start(t, gketest.Options{})
	cl := gkeconn.Cluster{Project: "p", Zone: "us-central1-a", Name: "c"}
	f.PutCluster(cl.Path(), &containerpb.Cluster{Name: "c", Status: containerpb.Cluster_RUNNING, Endpoint: api.Listener.Addr().String(),
		MasterAuth: &containerpb.MasterAuth{ClusterCaCertificate: base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}))}})
	creds := func(context.Context, ...string) (*google.Credentials, error) {
		return &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "adc-token"}), JSON: []byte(`{"type":"authorized_user"}`)}, nil
	}
	b, err := New(st, Options{Name: GKEName, RunnerImage: "r", GKE: &GKEDirect{Cluster: cl,
		Connector: &gkeconn.Connector{ContainerEndpoint: f.Endpoints.Container, CacheDir: t.TempDir(), Credentials: creds}}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.cs.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.33.5-gke.1" || auth != "Bearer adc-token" {
		t.Fatalf("server version %v, %v; Authorization %q", v, err, auth)
	}

	none := func(context.Context, ...string) (*google.Credentials, error) {
		return nil, errors.New("google: could not find default credentials")
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	_, err = New(st, Options{Name: GKEName, GKE: &GKEDirect{Cluster: cl, Connector: &gkeconn.Connector{ContainerEndpoint: f.Endpoints.Container, Credentials: none}}})
	if !errors.Is(err, backend.ErrUnavailable) || err.Error() != "no Google credentials to connect to GKE: run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file" {
		t.Fatalf("no credentials: %v", err)
	}
}
