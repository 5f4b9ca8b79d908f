// Package gkeconn connects client-go to a GKE cluster without a kubeconfig: the
// cluster's endpoint and CA certificate come from the GKE API (container v1 GetCluster),
// and requests carry an OAuth2 access token from Application Default Credentials,
// refreshed as it expires — what `gcloud container clusters get-credentials` and
// gke-gcloud-auth-plugin do, in process, so a laptop with ADC and no gcloud works.
//
// The endpoint and CA are cached per cluster in a file (Connector.CacheDir), so a warm
// connection makes no GKE API call. When a request fails on a certificate error (the
// cluster was re-created, its CA changed) or cannot reach a cached endpoint, the entry is
// dropped, fetched again once, and the request retried. See docs/infrastructure.md.
package gkeconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	container "cloud.google.com/go/container/apiv1"
	"cloud.google.com/go/container/apiv1/containerpb"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/rest"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/atomicfile"
	"github.com/kinetic-run/kinetic/internal/gcpkey"
)

// Scope is the OAuth2 scope of the tokens: what gke-gcloud-auth-plugin asks for.
const Scope = "https://www.googleapis.com/auth/cloud-platform"

// Cluster names a GKE cluster.
type Cluster struct {
	Project, Zone, Name string
}

// Path is the cluster's resource name: projects/P/locations/Z/clusters/C.
func (c Cluster) Path() string {
	return "projects/" + c.Project + "/locations/" + c.Zone + "/clusters/" + c.Name
}

func (c Cluster) key() string { return c.Project + "_" + c.Zone + "_" + c.Name }

// Connector makes client-go configurations for GKE clusters. The zero value works: the
// GKE API at Google, Application Default Credentials, no cache.
type Connector struct {
	// ContainerEndpoint overrides the GKE API endpoint: "" is Google's; an
	// http://HOST:PORT URL is plain, unauthenticated gRPC (tests and emulators: the
	// container= part of the gcp_endpoints setting, how infra/gke reaches gketest).
	ContainerEndpoint string
	// CacheDir holds one file per cluster, PROJECT_ZONE_CLUSTER.json, with its endpoint
	// and CA ("" = no cache: every connection reads the cluster).
	CacheDir string
	// Credentials finds the credentials; nil is google.FindDefaultCredentials.
	Credentials func(ctx context.Context, scopes ...string) (*google.Credentials, error)
}

// Info is what a connection needs of a cluster, as cached.
type Info struct {
	// Endpoint is the API server's host (an IP address, or host:port).
	Endpoint string `json:"endpoint"`
	// CA is the PEM of the cluster's CA certificate.
	CA []byte `json:"ca"`
	// Fetched is when GetCluster returned it.
	Fetched time.Time `json:"fetched"`
}

// ErrNoCredentials is wrapped by the error when no Application Default Credentials are
// found.
var ErrNoCredentials = errs.New(errs.FailedPrecondition, "no Google credentials")

// RESTConfig is a client-go configuration for cl: its endpoint and CA (from the cache,
// else one GetCluster call), requests authorised by ADC tokens, and the retry on a
// changed certificate.
func (c *Connector) RESTConfig(ctx context.Context, cl Cluster) (*rest.Config, error) {
	creds, err := c.credentials(ctx)
	if err != nil {
		return nil, err
	}
	info, cached, err := c.info(ctx, cl, creds)
	if err != nil {
		return nil, err
	}
	return c.restConfig(cl, creds, info, cached), nil
}

// Info is cl's endpoint and CA: the cache's, else GKE's (one GetCluster, then cached).
func (c *Connector) Info(ctx context.Context, cl Cluster) (Info, error) {
	creds, err := c.credentials(ctx)
	if err != nil {
		return Info{}, err
	}
	in, _, err := c.info(ctx, cl, creds)
	return in, err
}

// RESTConfigFrom is RESTConfig for a cluster the caller has just read from the GKE API
// (`kinetic up` reads it anyway): rec's endpoint and CA are cached, so the first
// connection after it (a job's submission) makes no GKE API call.
func (c *Connector) RESTConfigFrom(ctx context.Context, cl Cluster, rec *containerpb.Cluster) (*rest.Config, error) {
	creds, err := c.credentials(ctx)
	if err != nil {
		return nil, err
	}
	info, err := c.put(cl, rec)
	if err != nil {
		return nil, err
	}
	return c.restConfig(cl, creds, info, false), nil
}

func (c *Connector) restConfig(cl Cluster, creds *google.Credentials, info Info, cached bool) *rest.Config {
	ts := oauth2.ReuseTokenSource(nil, creds.TokenSource)
	who := Identity(creds)
	cfg := &rest.Config{
		Host:            "https://" + info.Endpoint,
		TLSClientConfig: rest.TLSClientConfig{CAData: info.CA},
		UserAgent:       "kinetic",
	}
	cfg.WrapTransport = func(base http.RoundTripper) http.RoundTripper {
		r := &refetch{c: c, cl: cl, creds: creds, cur: base, host: info.Endpoint, info: info, cached: cached}
		return &oauth2.Transport{Source: tokenErrors{ts, who}, Base: r}
	}
	return cfg
}

// tokenErrors words a failure to get a token.
type tokenErrors struct {
	ts  oauth2.TokenSource
	who string
}

func (t tokenErrors) Token() (*oauth2.Token, error) {
	tok, err := t.ts.Token()
	if err != nil {
		return nil, fmt.Errorf("get an access token for %s: %v (run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file)", t.who, err)
	}
	return tok, nil
}

func (c *Connector) credentials(ctx context.Context) (*google.Credentials, error) {
	find := c.Credentials
	if find == nil {
		find = google.FindDefaultCredentials
	}
	// The token source keeps this context for every refresh (an authorized_user's
	// refresh-token exchange happens at the first request, after the caller's context
	// may be gone): not the caller's cancellation.
	creds, err := find(context.WithoutCancel(ctx), Scope)
	if err != nil {
		if p := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"); p != "" {
			return nil, gcpkey.Error(ErrNoCredentials, fmt.Sprintf("%s: GOOGLE_APPLICATION_CREDENTIALS=%s %s: set it to a service-account key file, or unset it and run `gcloud auth application-default login`", ErrNoCredentials, p, gcpkey.Problem(p)), err)
		}
		return nil, fmt.Errorf("%w to connect to GKE: run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file", ErrNoCredentials)
	}
	return creds, nil
}

// Identity names whose credentials these are, for messages: a service account's
// email, else what kind of account.
func Identity(creds *google.Credentials) string {
	var f struct {
		Type        string `json:"type"`
		ClientEmail string `json:"client_email"`
		Account     string `json:"account"`
	}
	if creds == nil || len(creds.JSON) == 0 {
		return "this machine's service account (metadata server)"
	}
	_ = json.Unmarshal(creds.JSON, &f)
	switch {
	case f.ClientEmail != "":
		return f.ClientEmail
	case f.Account != "":
		return f.Account
	case f.Type == "authorized_user":
		return "your user account (`gcloud auth application-default login`)"
	case f.Type != "":
		return "the " + f.Type + " credentials"
	}
	return "the Application Default Credentials"
}

// CachePath is cl's cache file ("" without a cache directory).
func (c *Connector) CachePath(cl Cluster) string {
	if c.CacheDir == "" {
		return ""
	}
	return filepath.Join(c.CacheDir, cl.key()+".json")
}

// info is the cached entry of cl, else a fresh one (cached false).
func (c *Connector) info(ctx context.Context, cl Cluster, creds *google.Credentials) (Info, bool, error) {
	if p := c.CachePath(cl); p != "" {
		if b, err := os.ReadFile(p); err == nil {
			var in Info
			if json.Unmarshal(b, &in) == nil && in.Endpoint != "" && len(in.CA) > 0 {
				return in, true, nil
			}
		}
	}
	in, err := c.fetch(ctx, cl, creds)
	return in, false, err
}

// Forget drops cl's cache entry.
func (c *Connector) Forget(cl Cluster) {
	if p := c.CachePath(cl); p != "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "kinetic: drop the GKE connection cache %s: %v\n", p, err)
		}
	}
}

// fetch reads cl from the GKE API and caches it.
func (c *Connector) fetch(ctx context.Context, cl Cluster, creds *google.Credentials) (Info, error) {
	opts, err := ClientOptions(c.ContainerEndpoint)
	if err != nil {
		return Info{}, err
	}
	if c.ContainerEndpoint == "" {
		opts = append(opts, option.WithCredentials(creds))
	}
	mc, err := container.NewClusterManagerClient(ctx, opts...)
	if err != nil {
		return Info{}, fmt.Errorf("connect to the GKE API: %v (run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file)", err)
	}
	defer mc.Close()
	got, err := mc.GetCluster(ctx, &containerpb.GetClusterRequest{Name: cl.Path()})
	if err != nil {
		return Info{}, clusterErr(cl, Identity(creds), err)
	}
	return c.put(cl, got)
}

// put caches what GKE says of cl (its record got).
func (c *Connector) put(cl Cluster, got *containerpb.Cluster) (Info, error) {
	if got.GetEndpoint() == "" {
		return Info{}, fmt.Errorf("cluster %s in %s/%s is %s and has no endpoint yet: wait until `kinetic status` shows it RUNNING", cl.Name, cl.Project, cl.Zone, got.GetStatus())
	}
	ca, err := base64.StdEncoding.DecodeString(got.GetMasterAuth().GetClusterCaCertificate())
	if err != nil || len(ca) == 0 {
		return Info{}, fmt.Errorf("cluster %s in %s/%s: GKE returned no usable CA certificate", cl.Name, cl.Project, cl.Zone)
	}
	in := Info{Endpoint: got.GetEndpoint(), CA: ca, Fetched: time.Now().UTC()}
	if p := c.CachePath(cl); p != "" {
		b, _ := json.MarshalIndent(in, "", "  ")
		if err := atomicfile.Write(p, append(b, '\n'), 0o600, 0o700); err != nil {
			// A cache that cannot be written costs a GetCluster next time, nothing else.
			fmt.Fprintf(os.Stderr, "kinetic: cache GKE cluster %s: %v\n", cl.Name, err)
		}
	}
	return in, nil
}

// clusterErr words a GetCluster failure with its fix.
func clusterErr(cl Cluster, who string, err error) error {
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.PermissionDenied:
		return fmt.Errorf("the credentials of %s lack container.clusters.get on project %s (grant it roles/container.developer, or use an account that has it)", who, cl.Project)
	case codes.NotFound:
		return fmt.Errorf("no cluster %s in %s/%s: `kinetic up --project %s --cluster %s` creates it, or set cluster/zone", cl.Name, cl.Project, cl.Zone, cl.Project, cl.Name)
	case codes.Unauthenticated:
		return fmt.Errorf("Google refused the credentials of %s: run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file", who)
	case codes.Unavailable, codes.DeadlineExceeded:
		return fmt.Errorf("the GKE API did not answer for cluster %s in %s/%s: %s (check the network, then try again)", cl.Name, cl.Project, cl.Zone, st.Message())
	}
	return fmt.Errorf("read GKE cluster %s in %s/%s: %s", cl.Name, cl.Project, cl.Zone, st.Message())
}

// ClientOptions are the options of a Google gRPC client for an endpoint override: none
// for "" (Google, with the client's credentials); an http:// URL is plain gRPC without
// credentials, an https:// one TLS without credentials.
func ClientOptions(ep string) ([]option.ClientOption, error) {
	if ep == "" {
		return nil, nil
	}
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("GKE API endpoint %q is not an http(s)://HOST:PORT URL", ep)
	}
	if u.Scheme == "https" {
		return []option.ClientOption{option.WithEndpoint(u.Host), option.WithoutAuthentication()}, nil
	}
	return []option.ClientOption{option.WithEndpoint(u.Host), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}, nil
}

// refetch is the transport under the token: it sends to the current endpoint with the
// current CA and, once per connection, reads the cluster again when a request fails on
// a certificate error (or cannot reach an endpoint that came from the cache), then
// retries the request with what GKE says now.
type refetch struct {
	c      *Connector
	cl     Cluster
	creds  *google.Credentials
	cached bool

	mu    sync.Mutex
	cur   http.RoundTripper
	host  string
	info  Info
	tried bool
}

func (r *refetch) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	rt, host := r.cur, r.host
	r.mu.Unlock()
	resp, err := rt.RoundTrip(withHost(req, host))
	if err == nil || !r.retryable(err) {
		return resp, err
	}
	rt2, host2, ferr := r.again(req.Context(), rt)
	if ferr != nil {
		return nil, fmt.Errorf("%w (and reading cluster %s again: %v)", r.worded(err), r.cl.Name, ferr)
	}
	if rt2 == nil {
		return nil, r.worded(err)
	}
	req2 := req
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, err
		}
		body, gerr := req.GetBody()
		if gerr != nil {
			return nil, err
		}
		req2 = req.Clone(req.Context())
		req2.Body = body
	}
	resp, err = rt2.RoundTrip(withHost(req2, host2))
	if err != nil {
		return nil, r.worded(err)
	}
	return resp, nil
}

// CertError is a connection refused on the API server's certificate even with the CA
// GKE reports now (read again after the first failure).
type CertError struct {
	Cluster Cluster
	Host    string
	Err     error
}

func (e *CertError) Error() string {
	return fmt.Sprintf("the API server of cluster %s (%s) presents a certificate that the cluster's CA from GKE does not verify: if the cluster is being re-created or its credentials rotated, wait until `kinetic status` shows it RUNNING and run the command again; otherwise something between this machine and Google answers in its place (a proxy): check HTTPS_PROXY", e.Cluster.Name, e.Host)
}

func (e *CertError) Unwrap() error { return e.Err }

// Code: the cluster cannot be used from here until it is fixed.
func (e *CertError) Code() errs.Code { return errs.Unavailable }

// Standalone: the message names the cluster and the fix; client-go's request line
// (`Get "https://…": `) says nothing more to a user.
func (e *CertError) Standalone() {}

// worded is err as a CertError when it is a certificate failure.
func (r *refetch) worded(err error) error {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) {
		r.mu.Lock()
		host := r.host
		r.mu.Unlock()
		return &CertError{Cluster: r.cl, Host: host, Err: err}
	}
	return err
}

// retryable: the server's certificate did not verify against the CA we have, or a
// cached endpoint could not be reached.
func (r *refetch) retryable(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) {
		return true
	}
	var op *net.OpError
	return r.cached && errors.As(err, &op) && op.Op == "dial"
}

// again drops the cache entry and reads the cluster once; it returns the transport and
// host to retry with, nil when there is nothing new to try.
func (r *refetch) again(ctx context.Context, failed http.RoundTripper) (http.RoundTripper, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != failed { // another request already read the cluster again
		return r.cur, r.host, nil
	}
	if r.tried {
		return nil, "", nil
	}
	r.tried = true
	r.c.Forget(r.cl)
	in, err := r.c.fetch(ctx, r.cl, r.creds)
	if err != nil {
		return nil, "", err
	}
	if in.Endpoint == r.info.Endpoint && bytes.Equal(in.CA, r.info.CA) {
		return nil, "", nil // GKE says what we had: the failure is not a stale cache
	}
	rt, err := rest.TransportFor(&rest.Config{Host: "https://" + in.Endpoint, TLSClientConfig: rest.TLSClientConfig{CAData: in.CA}})
	if err != nil {
		return nil, "", err
	}
	r.cur, r.host, r.info = rt, in.Endpoint, in
	return rt, in.Endpoint, nil
}

// withHost is req sent to host (the endpoint may have changed since client-go built
// the request's URL).
func withHost(req *http.Request, host string) *http.Request {
	if req.URL.Host == host {
		return req
	}
	r := req.Clone(req.Context())
	r.URL.Host = host
	r.Host = ""
	return r
}
