package gkeconn_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"golang.org/x/oauth2/google"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/kubernetes"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
	"github.com/kinetic-run/kinetic/testkit/adctest"
	"github.com/kinetic-run/kinetic/testkit/gketest"
)

const getCluster = "google.container.v1.ClusterManager/GetCluster"

var cl = gkeconn.Cluster{Project: "proj", Zone: "us-central1-a", Name: "kc"}

// apiServer stands in for the cluster's Kubernetes API server only to check what a
// connection sends: that the Authorization header carries the ADC token and that the
// CA GKE reported verifies its certificate. It answers /version and nothing else. addr
// "" picks a port; a given one re-creates "the cluster" at the same endpoint with a new
// CA. It returns the server and its CA (PEM).
func apiServer(t *testing.T, addr string, auth *atomic.Value) (*httptest.Server, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"major":"1","minor":"33","gitVersion":"v1.33.5-gke.1"}`))
	}))
	if addr != "" {
		var lis net.Listener
		for i := 0; i < 50; i++ { // the old listener's port may take a moment to free
			if lis, err = net.Listen("tcp", addr); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		s.Listener.Close()
		s.Listener = lis
	}
	s.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func putCluster(f *gketest.Fake, s *httptest.Server, ca []byte) {
	f.PutCluster(cl.Path(), &containerpb.Cluster{Name: cl.Name, Status: containerpb.Cluster_RUNNING,
		Endpoint:   s.Listener.Addr().String(),
		MasterAuth: &containerpb.MasterAuth{ClusterCaCertificate: base64.StdEncoding.EncodeToString(ca)}})
}

// serviceAccountKey writes a service-account key file whose token_uri is a local token
// endpoint handing out token, sets GOOGLE_APPLICATION_CREDENTIALS to it, and counts the
// token requests.
func serviceAccountKey(t *testing.T, token string) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || r.Form.Get("assertion") == "" {
			http.Error(w, "bad grant", http.StatusBadRequest)
			return
		}
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(ts.Close)
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	key := map[string]string{"type": "service_account", "project_id": "proj", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "jobs@proj.iam.gserviceaccount.com", "client_id": "1", "token_uri": ts.URL + "/token"}
	b, _ := json.Marshal(key)
	p := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", p)
	return &n
}

func version(t *testing.T, c *gkeconn.Connector) (string, error) {
	t.Helper()
	cfg, err := c.RESTConfig(context.Background(), cl)
	if err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

// TestConnect: a cluster reached from its GKE API record and ADC alone (no kubeconfig):
// the token goes as Bearer, the CA verifies, a second connection reads the cache (no
// GetCluster), and a cluster re-created at the same endpoint with a new CA is read
// again once and reached.
func TestConnect(t *testing.T) {
	f := gketest.Start(t, gketest.Options{})
	tokens := serviceAccountKey(t, "tok-123")
	var auth atomic.Value
	s, ca := apiServer(t, "", &auth)
	putCluster(f, s, ca)
	c := &gkeconn.Connector{ContainerEndpoint: f.Endpoints.Container, CacheDir: t.TempDir()}

	v, err := version(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if v != "v1.33.5-gke.1" || auth.Load() != "Bearer tok-123" {
		t.Fatalf("version %q, Authorization %q; want v1.33.5-gke.1, Bearer tok-123", v, auth.Load())
	}
	if n := f.Count(getCluster); n != 1 {
		t.Fatalf("GetCluster calls = %d, want 1", n)
	}
	fi, err := os.Stat(c.CachePath(cl))
	if err != nil || fi.Mode().Perm() != 0o600 || filepath.Base(c.CachePath(cl)) != "proj_us-central1-a_kc.json" {
		t.Fatalf("cache file %s: %v %v", c.CachePath(cl), fi, err)
	}

	// Warm: the cache, no GKE API call.
	if _, err := version(t, c); err != nil {
		t.Fatal(err)
	}
	if n := f.Count(getCluster); n != 1 {
		t.Fatalf("warm connection: GetCluster calls = %d, want still 1", n)
	}
	if tokens.Load() == 0 {
		t.Fatal("no token was requested from the key's token_uri")
	}

	// The cluster is re-created at the same endpoint with a new CA: x509 unknown
	// authority against the cached CA, one GetCluster, the retry reaches it.
	addr := s.Listener.Addr().String()
	s.Close()
	s2, ca2 := apiServer(t, addr, &auth)
	putCluster(f, s2, ca2)
	auth.Store("")
	if _, err := version(t, c); err != nil {
		t.Fatalf("after the CA changed: %v", err)
	}
	if n := f.Count(getCluster); n != 2 || auth.Load() != "Bearer tok-123" {
		t.Fatalf("after the CA changed: GetCluster calls = %d (want 2), Authorization %q", n, auth.Load())
	}
	var in gkeconn.Info
	b, _ := os.ReadFile(c.CachePath(cl))
	if json.Unmarshal(b, &in); string(in.CA) != string(ca2) {
		t.Fatal("the cache does not hold the new CA")
	}
	// And warm again on the new entry.
	if _, err := version(t, c); err != nil || f.Count(getCluster) != 2 {
		t.Fatalf("warm after refetch: %v, GetCluster calls %d", err, f.Count(getCluster))
	}

	// A certificate that does not verify against what GKE says either: one read, then
	// the certificate error (no loop).
	s2.Close()
	s3, _ := apiServer(t, addr, &auth)
	_ = s3
	_, err = version(t, c)
	var ce *gkeconn.CertError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "does not verify: if the cluster is being re-created") || strings.Contains(err.Error(), "x509:") {
		t.Fatalf("CA GKE does not vouch for: err = %v, want a CertError naming the fix without x509's text", err)
	}
	if n := f.Count(getCluster); n != 3 {
		t.Fatalf("GetCluster calls = %d, want 3 (one read again, no more)", n)
	}
	// client-go's request line comes before it (`Get "https://…": `); what a user is
	// shown is the CertError alone.
	if m := errs.Message(err); m != ce.Error() || !strings.Contains(err.Error(), `Get "https://`) || errs.CodeOf(err) != errs.Unavailable {
		t.Fatalf("shown %q (code %v), from %q", m, errs.CodeOf(err), err)
	}
}

// TestConnectErrors: the clear messages, each naming its fix.
func TestConnectErrors(t *testing.T) {
	f := gketest.Start(t, gketest.Options{})
	serviceAccountKey(t, "tok")
	c := &gkeconn.Connector{ContainerEndpoint: f.Endpoints.Container, CacheDir: t.TempDir()}
	check := func(name string, err error, want string) {
		t.Helper()
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", name, err, want)
		}
	}

	_, err := c.RESTConfig(context.Background(), cl)
	check("not found", err, "no cluster kc in proj/us-central1-a: `kinetic up --project proj --cluster kc` creates it, or set cluster/zone")

	f.FailNext(getCluster, status.Error(codes.PermissionDenied, "Required \"container.clusters.get\" permission(s)"))
	_, err = c.RESTConfig(context.Background(), cl)
	check("permission denied", err, "the credentials of jobs@proj.iam.gserviceaccount.com lack container.clusters.get on project proj (grant it roles/container.developer, or use an account that has it)")

	// No ADC at all (what google.FindDefaultCredentials says on a machine with none;
	// injected, since the real lookup would also ask a GCE metadata server).
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	none := &gkeconn.Connector{ContainerEndpoint: f.Endpoints.Container, Credentials: func(context.Context, ...string) (*google.Credentials, error) {
		return nil, errors.New("google: could not find default credentials. See https://cloud.google.com/docs/authentication/external/set-up-adc for more information")
	}}
	_, err = none.RESTConfig(context.Background(), cl)
	check("no credentials", err, "no Google credentials to connect to GKE: run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file")
	if !errors.Is(err, gkeconn.ErrNoCredentials) {
		t.Error("not ErrNoCredentials")
	}

	// GOOGLE_APPLICATION_CREDENTIALS naming a missing file: the real lookup.
	missing := filepath.Join(t.TempDir(), "nope.json")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", missing)
	_, err = (&gkeconn.Connector{ContainerEndpoint: f.Endpoints.Container}).RESTConfig(context.Background(), cl)
	if err == nil || !strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS="+missing+" does not exist") || !strings.Contains(err.Error(), "gcloud auth application-default login") {
		t.Errorf("missing key file: %v", err)
	}
	if n := f.Count(getCluster); n != 2 {
		t.Errorf("GetCluster calls = %d, want 2 (none without credentials)", n)
	}

	// A cluster still provisioning has no endpoint.
	serviceAccountKey(t, "tok")
	f.PutCluster(cl.Path(), &containerpb.Cluster{Name: cl.Name, Status: containerpb.Cluster_PROVISIONING})
	_, err = c.RESTConfig(context.Background(), cl)
	check("provisioning", err, "cluster kc in proj/us-central1-a is PROVISIONING and has no endpoint yet: wait until `kinetic status` shows it RUNNING")
}

// TestConnectUserADC: user credentials (an authorized_user file, as `gcloud auth
// application-default login` writes) exchange their refresh token at the first request,
// which comes after the context the configuration was made with has ended (a command's
// setup): the token is still fetched, and the cluster reached.
func TestConnectUserADC(t *testing.T) {
	f := gketest.Start(t, gketest.Options{})
	tokens := adctest.Start(t)
	tokens.Token = "ya29.user-token"
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", tokens.AuthorizedUser(t, t.TempDir(), ""))
	var auth atomic.Value
	s, ca := apiServer(t, "", &auth)
	putCluster(f, s, ca)
	c := &gkeconn.Connector{ContainerEndpoint: f.Endpoints.Container, CacheDir: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	cfg, err := c.RESTConfig(ctx, cl)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("with user ADC, after the setup's context ended: %v", err)
	}
	if auth.Load() != "Bearer ya29.user-token" || tokens.Minted() != 1 {
		t.Errorf("Authorization %q, %d tokens minted; want the user's token, one", auth.Load(), tokens.Minted())
	}
}
