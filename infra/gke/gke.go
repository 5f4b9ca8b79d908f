// Package gke provisions Google Kubernetes Engine for Kinetic through Google's Go
// clients: the cluster (Workload Identity, the GCS FUSE CSI driver, a small system pool
// of a machine type the zone offers), the Artifact Registry repository, the store bucket
// with its 30-day rule, the Google service account job pods act as (Workload Identity)
// with the roles they need, and the runner image. Up, Down and the pool operations each
// read the current state into a Plan (steps with an action), which is printed, then
// applied in dependency order; a second Up finds nothing to do. Long-running operations
// are polled until done; an interrupted one keeps running at Google, and the next plan
// reads it (a cluster still PROVISIONING becomes a "wait" step). See
// docs/infrastructure.md.
package gke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	artifactregistry "cloud.google.com/go/artifactregistry/apiv1"
	container "cloud.google.com/go/container/apiv1"
	admin "cloud.google.com/go/iam/admin/apiv1"
	serviceusage "cloud.google.com/go/serviceusage/apiv1"
	googleoauth "golang.org/x/oauth2/google"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
	storagev1 "google.golang.org/api/storage/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/infra/gke/gkename"
	"github.com/kinetic-run/kinetic/internal/gcpkey"
)

// Defaults of the names up gives what it creates.
const (
	DefaultCluster = gkename.DefaultCluster
	// SystemPool is the node pool of the cluster's own pods and of CPU jobs.
	SystemPool = "system"
	// KubeServiceAccount is the Kubernetes service account bound to the cluster's Google
	// service account (Config.AccountEmail); the same
	// name `kinetic up --backend k8s` creates (infra.Name).
	KubeServiceAccount = "kinetic"
	// ManagedLabel marks what kinetic made (labels of the cluster, the pools, the repo).
	ManagedLabel = "managed-by"
)

// Roles granted, each on one resource only (never on the project).
const (
	// RoleStorage lets job pods read code and inputs and write results, logs and
	// outputs in the store bucket: object create/get/list/update/delete, no bucket admin.
	RoleStorage = "roles/storage.objectUser"
	// RoleRegistryRead lets the nodes pull the runner image and bundled images from the
	// repository.
	RoleRegistryRead = "roles/artifactregistry.reader"
	// RoleWorkloadIdentity lets the Kubernetes service account act as the Google one.
	RoleWorkloadIdentity = "roles/iam.workloadIdentityUser"
)

// Endpoints override Google's API endpoints: for tests and emulators only. An override
// is a URL, "http://127.0.0.1:PORT" (plain gRPC or HTTP, no credentials). Storage is
// taken from the store URL's ?endpoint= (as the store does).
type Endpoints struct {
	Container, ArtifactRegistry, IAM, Compute, ServiceUsage string
}

// String is the gcp_endpoints setting of e (ParseEndpoints reads it back).
func (e Endpoints) String() string {
	var parts []string
	for _, kv := range [][2]string{{"container", e.Container}, {"artifactregistry", e.ArtifactRegistry}, {"iam", e.IAM}, {"compute", e.Compute}, {"serviceusage", e.ServiceUsage}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return strings.Join(parts, ",")
}

// ParseEndpoints reads the gcp_endpoints setting: "container=URL,artifactregistry=URL,
// iam=URL,compute=URL,serviceusage=URL" (any subset).
func ParseEndpoints(s string) (Endpoints, error) {
	var e Endpoints
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if err := e.set(s, part); err != nil {
			return e, err
		}
	}
	return e, nil
}

// set reads one SERVICE=URL part of the setting s.
func (e *Endpoints) set(s, part string) error {
	k, v, ok := strings.Cut(part, "=")
	if !ok {
		return fmt.Errorf("gcp_endpoints %q: want SERVICE=URL,... (services: container, artifactregistry, iam, compute, serviceusage)", s)
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("gcp_endpoints: %s=%q is not an http(s)://HOST:PORT URL", k, v)
	}
	field := map[string]*string{"container": &e.Container, "artifactregistry": &e.ArtifactRegistry, "iam": &e.IAM, "compute": &e.Compute, "serviceusage": &e.ServiceUsage}[k]
	if field == nil {
		return fmt.Errorf("gcp_endpoints: unknown service %q (services: container, artifactregistry, iam, compute, serviceusage)", k)
	}
	*field = v
	return nil
}

// Clients are the Google API clients provisioning uses.
type Clients struct {
	Cluster  *container.ClusterManagerClient
	Registry *artifactregistry.Client
	IAM      *admin.IamClient
	Compute  *compute.Service
	Services *serviceusage.Client
}

func grpcOpts(ep string) []option.ClientOption {
	if ep == "" {
		return nil
	}
	u, _ := url.Parse(ep)
	if u.Scheme == "https" {
		return []option.ClientOption{option.WithEndpoint(u.Host), option.WithoutAuthentication()}
	}
	return []option.ClientOption{option.WithEndpoint(u.Host), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
}

// Dial makes the clients, with Application Default Credentials unless ep overrides.
func Dial(ctx context.Context, ep Endpoints) (*Clients, error) { return DialFor(ctx, ep, "") }

// DialFor is Dial for work on project: when the credentials are a user's (an
// authorized_user ADC file from `gcloud auth application-default login`) that name no
// quota project, Service Usage calls name project as theirs (x-goog-user-project), as
// Google requires of user credentials for that API (it refuses them otherwise, billing
// gcloud's own project).
func DialFor(ctx context.Context, ep Endpoints, project string) (*Clients, error) {
	c := &Clients{}
	var err error
	var quota []option.ClientOption
	if project != "" && userADCWithoutQuotaProject(ctx) {
		// The header itself (option.WithQuotaProject sets it only with credentials, and
		// the test endpoints have none); the credentials name no quota project, so it
		// is not sent twice.
		quota = []option.ClientOption{option.WithGRPCDialOption(grpc.WithChainUnaryInterceptor(
			func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				return invoker(metadata.AppendToOutgoingContext(ctx, "x-goog-user-project", project), method, req, reply, cc, opts...)
			}))}
	}
	if c.Cluster, err = container.NewClusterManagerClient(ctx, grpcOpts(ep.Container)...); err != nil {
		return nil, credErr("GKE", err)
	}
	if c.Registry, err = artifactregistry.NewClient(ctx, grpcOpts(ep.ArtifactRegistry)...); err != nil {
		c.Close()
		return nil, credErr("Artifact Registry", err)
	}
	if c.IAM, err = admin.NewIamClient(ctx, grpcOpts(ep.IAM)...); err != nil {
		c.Close()
		return nil, credErr("IAM", err)
	}
	if c.Services, err = serviceusage.NewClient(ctx, append(grpcOpts(ep.ServiceUsage), quota...)...); err != nil {
		c.Close()
		return nil, credErr("Service Usage", err)
	}
	copts := []option.ClientOption{option.WithScopes(compute.ComputeScope)} // reads, and the network of a project without a default one
	if ep.Compute != "" {
		copts = []option.ClientOption{option.WithEndpoint(strings.TrimSuffix(ep.Compute, "/") + "/compute/v1/"),
			option.WithoutAuthentication(), option.WithHTTPClient(&http.Client{Transport: http.DefaultTransport})}
	}
	if c.Compute, err = compute.NewService(ctx, copts...); err != nil {
		c.Close()
		return nil, credErr("Compute Engine", err)
	}
	return c, nil
}

// userADCWithoutQuotaProject reports whether Application Default Credentials are a
// user's (type authorized_user) with no quota_project_id.
func userADCWithoutQuotaProject(ctx context.Context) bool {
	creds, err := googleoauth.FindDefaultCredentials(ctx, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil || len(creds.JSON) == 0 {
		return false
	}
	var f struct {
		Type         string `json:"type"`
		QuotaProject string `json:"quota_project_id"`
	}
	return json.Unmarshal(creds.JSON, &f) == nil && f.Type == "authorized_user" && f.QuotaProject == ""
}

// credErr words a client that could not be made: nearly always missing or unusable
// Application Default Credentials. Google's text stays in the chain, not the message.
func credErr(api string, err error) error {
	text := fmt.Sprintf("no Google credentials to call the %s API: run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file", api)
	if p := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"); p != "" {
		text = fmt.Sprintf("GOOGLE_APPLICATION_CREDENTIALS=%s %s, so the %s API cannot be called: set it to a service-account key file (JSON), or unset it and run `gcloud auth application-default login`", p, gcpkey.Problem(p), api)
	}
	return &apiError{text: text, code: errs.FailedPrecondition, err: err}
}

// Close closes every client.
func (c *Clients) Close() {
	if c.Cluster != nil {
		c.Cluster.Close()
	}
	if c.Registry != nil {
		c.Registry.Close()
	}
	if c.IAM != nil {
		c.IAM.Close()
	}
	if c.Services != nil {
		c.Services.Close()
	}
}

// Config says what to provision.
type Config struct {
	Project, Zone string
	Cluster       string // "" = DefaultCluster
	Namespace     string // Kubernetes namespace of jobs (the Workload Identity member)
	// Store is the gs:// store URL ("" = gs://PROJECT-kn-CLUSTER-jobs); ?endpoint= points at an
	// emulator.
	Store string
	// Registry is where the runner image goes ("" = the repository up creates,
	// REGION-docker.pkg.dev/PROJECT/kn-CLUSTER).
	Registry string
	// Runner publishes the runner image; nil leaves that step out.
	Runner Runner
	// Kube connects to the running cluster to make the Kubernetes service account of
	// job pods (KubeVia); nil leaves that step out (the fakes have no API server).
	Kube KubeFunc
	// LWSImage is the LeaderWorkerSet controller image ("" = the release's).
	LWSImage string
	// Pool, when set, is an accelerator pool up makes after the cluster (up
	// --accelerator, --min-nodes): the pool add step.
	Pool *PoolOptions
	// Poll is the first interval between polls of a long-running operation (0 = 500ms);
	// it grows to ten times that, at most 5 s.
	Poll time.Duration
	// APIWait bounds the wait for APIs just enabled to answer (0 = DefaultAPIWait).
	APIWait time.Duration
}

func (c *Config) fill() error {
	if c.Project == "" {
		return errors.New("no project: give --project, set KINETIC_PROJECT or GOOGLE_CLOUD_PROJECT, or a profile's project")
	}
	if Region(c.Zone) == "" {
		return fmt.Errorf("zone %q is not a zone (e.g. us-central1-a): give --zone", c.Zone)
	}
	if c.Cluster == "" {
		c.Cluster = DefaultCluster
	}
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	if c.Store == "" {
		c.Store = gkename.Store(c.Project, c.Cluster)
	}
	if !strings.HasPrefix(c.Store, "gs://") {
		return fmt.Errorf("store %q: GKE jobs use a gs:// store (e.g. --store %s)", c.Store, gkename.Store(c.Project, c.Cluster))
	}
	if b, _ := c.Bucket(); len(b) > 63 {
		return fmt.Errorf("store bucket %s is %d characters, over Cloud Storage's 63: give a shorter --cluster, or --store gs://BUCKET", b, len(b))
	}
	if c.Registry == "" {
		c.Registry = c.RepoHost()
	}
	if c.Poll == 0 {
		c.Poll = 500 * time.Millisecond
	}
	if c.APIWait == 0 {
		c.APIWait = DefaultAPIWait
	}
	return nil
}

// Region is the region of a zone ("us-central1-a" → "us-central1"), "" if not a zone.
func Region(zone string) string { return gkename.Region(zone) }

func (c *Config) location() string    { return "projects/" + c.Project + "/locations/" + c.Zone }
func (c *Config) clusterName() string { return c.location() + "/clusters/" + c.Cluster }
func (c *Config) poolName(p string) string {
	return c.clusterName() + "/nodePools/" + p
}
func (c *Config) repoParent() string { return "projects/" + c.Project + "/locations/" + Region(c.Zone) }
func (c *Config) repoName() string   { return c.repoParent() + "/repositories/" + c.Repository() }

// Repository is the cluster's Artifact Registry repository: kn-CLUSTER.
func (c *Config) Repository() string { return gkename.Repository(c.Cluster) }

// RepoHost is the Docker path of the repository: REGION-docker.pkg.dev/PROJECT/kn-CLUSTER.
func (c *Config) RepoHost() string { return gkename.Registry(c.Project, c.Zone, c.Cluster) }

// AccountID is the cluster's Google service account's id: kn-CLUSTER-jobs.
func (c *Config) AccountID() string { return gkename.AccountID(c.Cluster) }

// AccountEmail is the Google service account of job pods.
func (c *Config) AccountEmail() string {
	return c.AccountID() + "@" + c.Project + ".iam.gserviceaccount.com"
}
func (c *Config) accountName() string {
	return "projects/" + c.Project + "/serviceAccounts/" + c.AccountEmail()
}

// WorkloadPool is the cluster's Workload Identity pool.
func (c *Config) WorkloadPool() string { return c.Project + ".svc.id.goog" }

// KubeMember is the IAM member of the Kubernetes service account of job pods.
func (c *Config) KubeMember() string {
	return "serviceAccount:" + c.WorkloadPool() + "[" + c.Namespace + "/" + KubeServiceAccount + "]"
}

// Bucket is the store's bucket and the endpoint of an emulator ("" = Google).
func (c *Config) Bucket() (bucket, endpoint string) {
	u, err := url.Parse(c.Store)
	if err != nil {
		return strings.TrimPrefix(c.Store, "gs://"), ""
	}
	return u.Host, u.Query().Get("endpoint")
}

func storageService(ctx context.Context, endpoint string) (*storagev1.Service, error) {
	opts := []option.ClientOption{option.WithScopes(storagev1.DevstorageFullControlScope)}
	if endpoint != "" {
		opts = []option.ClientOption{option.WithoutAuthentication(), option.WithEndpoint(strings.TrimSuffix(endpoint, "/") + "/storage/v1/"),
			option.WithHTTPClient(&http.Client{Transport: http.DefaultTransport})}
	}
	s, err := storagev1.NewService(ctx, opts...)
	if err != nil {
		return nil, credErr("Cloud Storage", err)
	}
	return s, nil
}

func managedLabels() map[string]string { return map[string]string{ManagedLabel: "kinetic"} }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
