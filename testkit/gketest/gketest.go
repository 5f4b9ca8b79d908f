// Package gketest runs in-process fakes of the Google APIs that GKE provisioning calls,
// for tests and benchmarks: the GKE ClusterManager, Artifact Registry and Service Usage
// (each with its long-running Operations service) and IAM admin over gRPC, each
// implementing the real generated server interface (containerpb.ClusterManagerServer,
// artifactregistrypb.ArtifactRegistryServer, serviceusagepb.ServiceUsageServer,
// adminpb.IAMServer, longrunningpb.OperationsServer); Compute Engine's machine types and project over the
// REST API's JSON; and Cloud Storage through the fake-gcs-server emulator
// (testkit/gcstest) behind a proxy that adds the bucket IAM policy the emulator lacks.
// All listen on 127.0.0.1 and keep state. Long-running operations stay RUNNING for
// OpPolls polls, then are DONE and take effect. Every request is recorded (Requests),
// and a fault can be injected into any method (FailNext).
//
// No GKE exists here: these fakes are the proof that the requests are well-formed and
// the plan logic is right, not that Google accepts them (docs/status.md).
package gketest

import (
	"bytes"
	"cloud.google.com/go/iam/apiv1/iampb"
	"context"
	"encoding/json"
	"fmt"
	"google.golang.org/protobuf/types/known/anypb"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"cloud.google.com/go/container/apiv1/containerpb"
	"cloud.google.com/go/iam/admin/apiv1/adminpb"
	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"cloud.google.com/go/serviceusage/apiv1/serviceusagepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

// Request is one recorded call.
type Request struct {
	// Method is "container.ClusterManager/CreateCluster", "compute GET /compute/v1/…",
	// "storage POST /storage/v1/b".
	Method string
	// Body is the request as indented JSON with sorted keys ("" for none).
	Body string
}

// Mutating reports whether the call changes state.
func (r Request) Mutating() bool {
	m := r.Method
	if i := strings.LastIndexByte(m, '/'); i >= 0 && !strings.Contains(m, " ") {
		m = m[i+1:]
		for _, p := range []string{"Get", "List", "BatchGet"} {
			if strings.HasPrefix(m, p) {
				return false
			}
		}
		return true
	}
	return !strings.Contains(m, " GET ")
}

// MachineType is one machine type a zone offers.
type MachineType struct {
	Name     string
	CPUs     int64
	MemoryMB int64
	Shared   bool
}

// Options configure the fakes.
type Options struct {
	// Zones maps a zone to the machine types it offers; nil gives us-central1-a a
	// general-purpose list and us-east5-b (TPU-only) ct6e and n2d-highmem types.
	Zones map[string][]MachineType
	// OpPolls is how many polls an operation stays RUNNING (default 2).
	OpPolls int
	// APIEndpoint and APICA, when set, are what a cluster created here reports as its
	// endpoint (host:port) and CA certificate (PEM): a real API server's, so what
	// connects to the cluster reaches one. Unset, a cluster has no endpoint, and up
	// leaves out its Kubernetes steps.
	APIEndpoint string
	APICA       []byte
	// StorageUpstream is the GCS emulator the storage fake fronts ("" = one of its own);
	// StorageAddr is where the fake listens ("" = 127.0.0.1, any port): an address pods
	// reach when the store is theirs too.
	StorageUpstream, StorageAddr string
	// OnPool, when set, is called (without the fakes' lock) when a node pool's create
	// or delete operation is done, or a cluster's delete (pool nil): what GKE's nodes
	// would do in a real cluster (a test registers or removes nodes).
	OnPool func(event string, cluster string, pool *containerpb.NodePool)
	// NewProject starts every project with no API enabled (as a new project is); by
	// default gke.RequiredAPIs and every other are enabled.
	NewProject bool
	// NoDefaultNetwork: projects have no `default` VPC network (an organisation that
	// skips it, or a user who deleted it): a cluster created without a network is
	// refused, as GKE does.
	NoDefaultNetwork bool
	// ClusterOpPolls is OpPolls for creating a cluster (default OpPolls): a large one
	// keeps the cluster PROVISIONING, for an interruption.
	ClusterOpPolls int
	// Propagation is how long an API just enabled goes on refusing calls (403
	// SERVICE_DISABLED, "wait a few minutes for the action to propagate"), as Google's
	// do for a while after the enable operation finished. 0: ready at once.
	Propagation time.Duration
	// UserADC says the callers sign in with user credentials (an authorized_user ADC
	// file from `gcloud auth application-default login`): then Service Usage refuses a
	// call that names no quota project (the x-goog-user-project header) with 403
	// SERVICE_DISABLED and Google's documented message, as it does for gcloud's own
	// OAuth client's project.
	UserADC bool
}

// DefaultZones is Options.Zones' default.
func DefaultZones() map[string][]MachineType {
	return map[string][]MachineType{
		"us-central1-a": {{"e2-micro", 2, 1024, true}, {"e2-standard-4", 4, 16384, false}, {"n2-standard-4", 4, 16384, false}, {"g2-standard-4", 4, 16384, false}, {"ct5lp-hightpu-4t", 112, 196608, false}},
		// A TPU-first zone: no E2/N1/N2 types; the system pool must come from what is there.
		"us-east5-b": {{"ct6e-standard-4t", 180, 737280, false}, {"ct5p-hightpu-4t", 208, 458752, false}, {"n2d-standard-8", 8, 32768, false}, {"n2d-highmem-4", 4, 32768, false}},
	}
}

// Fake is the set of running fakes.
type Fake struct {
	// Endpoints point the clients here (gke.Dial).
	Endpoints gke.Endpoints
	// StorageEndpoint is the proxied emulator's URL: a store URL's ?endpoint=.
	StorageEndpoint string

	mu             sync.Mutex
	requests       []Request
	fail           map[string]error
	opPolls        int
	clusterOpPolls int
	zones          map[string][]MachineType

	clusters     map[string]*containerpb.Cluster
	ops          map[string]*op // by name (GKE ops: short name; LRO: full name)
	repos        map[string]*artifactregistrypb.Repository
	repoPol      map[string]*iampb.Policy
	accounts     map[string]*adminpb.ServiceAccount
	saPol        map[string]*iampb.Policy
	bucketPol    map[string]json.RawMessage
	apis         map[string]bool      // "PROJECT/SERVICE" → enabled (else !newProject)
	readyAt      map[string]time.Time // "PROJECT/SERVICE" → when an enabled API answers
	propagation  time.Duration
	userADC      bool
	opFail       map[containerpb.Operation_Type]*opFailure
	networks     map[string]bool // "PROJECT/NAME" → exists (else "default" unless noDefaultNet)
	noDefaultNet bool
	computeOps   map[string]func() // a compute operation's effect, run at its first poll
	newProject   bool
	apiEndpoint  string
	apiCA        []byte
	onPool       func(string, string, *containerpb.NodePool)
	hooks        []func() // OnPool calls due, run after the lock is released
	nextOp       int
}

type op struct {
	gkeOp  *containerpb.Operation
	lro    *longrunningpb.Operation
	target string
	left   int
	done   func()
}

// Start starts the fakes; they stop when t ends.
func Start(t testing.TB, o Options) *Fake {
	t.Helper()
	if o.Zones == nil {
		o.Zones = DefaultZones()
	}
	if o.OpPolls == 0 {
		o.OpPolls = 2
	}
	if o.ClusterOpPolls == 0 {
		o.ClusterOpPolls = o.OpPolls
	}
	f := &Fake{fail: map[string]error{}, opPolls: o.OpPolls, clusterOpPolls: o.ClusterOpPolls, zones: o.Zones,
		clusters: map[string]*containerpb.Cluster{}, ops: map[string]*op{}, repos: map[string]*artifactregistrypb.Repository{},
		repoPol: map[string]*iampb.Policy{}, accounts: map[string]*adminpb.ServiceAccount{}, saPol: map[string]*iampb.Policy{},
		bucketPol: map[string]json.RawMessage{}, apis: map[string]bool{}, newProject: o.NewProject,
		readyAt: map[string]time.Time{}, propagation: o.Propagation, userADC: o.UserADC, opFail: map[containerpb.Operation_Type]*opFailure{},
		networks: map[string]bool{}, noDefaultNet: o.NoDefaultNetwork, computeOps: map[string]func(){},
		apiEndpoint: o.APIEndpoint, apiCA: o.APICA, onPool: o.OnPool}

	serve := func(register func(*grpc.Server)) string {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer(grpc.UnaryInterceptor(f.intercept))
		register(s)
		go s.Serve(lis)
		t.Cleanup(s.Stop)
		return "http://" + lis.Addr().String()
	}
	f.Endpoints.Container = serve(func(s *grpc.Server) { containerpb.RegisterClusterManagerServer(s, &clusterServer{f: f}) })
	f.Endpoints.ArtifactRegistry = serve(func(s *grpc.Server) {
		artifactregistrypb.RegisterArtifactRegistryServer(s, &registryServer{f: f})
		longrunningpb.RegisterOperationsServer(s, &lroServer{f: f})
	})
	f.Endpoints.ServiceUsage = serve(func(s *grpc.Server) {
		serviceusagepb.RegisterServiceUsageServer(s, &usageServer{f: f})
		longrunningpb.RegisterOperationsServer(s, &lroServer{f: f})
	})
	f.Endpoints.IAM = serve(func(s *grpc.Server) { adminpb.RegisterIAMServer(s, &iamServer{f: f}) })

	cs := httptest.NewServer(http.HandlerFunc(f.compute))
	t.Cleanup(cs.Close)
	f.Endpoints.Compute = cs.URL

	upstream := o.StorageUpstream
	if upstream == "" {
		upstream = gcstest.Start(t).URL()
	}
	u, _ := url.Parse(upstream)
	proxy := httputil.NewSingleHostReverseProxy(u)
	// The emulator reads the bucket from the Host of a download: keep its own.
	director := proxy.Director
	proxy.Director = func(r *http.Request) { director(r); r.Host = u.Host }
	ss := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.storage(w, r, proxy) }))
	if o.StorageAddr != "" {
		lis, err := net.Listen("tcp", o.StorageAddr)
		if err != nil {
			t.Fatal(err)
		}
		ss.Listener.Close()
		ss.Listener = lis
	}
	ss.Start()
	t.Cleanup(ss.Close)
	f.StorageEndpoint = ss.URL
	return f
}

// StoreURL is the gs:// store URL of bucket on the emulator.
func (f *Fake) StoreURL(bucket string) string {
	return "gs://" + bucket + "?endpoint=" + f.StorageEndpoint
}

// Requests returns the calls so far, oldest first.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Mutations returns the calls so far that change state.
func (f *Fake) Mutations() []Request {
	var out []Request
	for _, r := range f.Requests() {
		if r.Mutating() {
			out = append(out, r)
		}
	}
	return out
}

// Reset forgets the recorded calls.
func (f *Fake) Reset() {
	f.mu.Lock()
	f.requests = nil
	f.mu.Unlock()
}

// FailNext makes the next call of method (as in Request.Method, e.g.
// "google.container.v1.ClusterManager/CreateCluster") fail with err.
func (f *Fake) FailNext(method string, err error) {
	f.mu.Lock()
	f.fail[method] = err
	f.mu.Unlock()
}

// Cluster returns a copy of the cluster's state, nil if none.
func (f *Fake) Cluster(name string) *containerpb.Cluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.clusters[name]; c != nil {
		return proto.Clone(c).(*containerpb.Cluster)
	}
	return nil
}

// PutCluster sets the state of cluster name (projects/P/locations/Z/clusters/C), as if
// it existed at Google: for tests of what reads a running cluster (its endpoint and CA).
func (f *Fake) PutCluster(name string, c *containerpb.Cluster) {
	f.mu.Lock()
	f.clusters[name] = proto.Clone(c).(*containerpb.Cluster)
	f.mu.Unlock()
}

// Count is how many calls of method were recorded.
func (f *Fake) Count(method string) int {
	n := 0
	for _, r := range f.Requests() {
		if r.Method == method {
			n++
		}
	}
	return n
}

// Counts says how many of each kind of thing exist (clusters, node pools, repos, accounts).
func (f *Fake) Counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := map[string]int{"clusters": len(f.clusters), "repositories": len(f.repos), "service_accounts": len(f.accounts)}
	for _, c := range f.clusters {
		n["node_pools"] += len(c.NodePools)
	}
	return n
}

func (f *Fake) record(method string, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, Request{Method: method, Body: body})
	if err, ok := f.fail[method]; ok {
		delete(f.fail, method)
		return err
	}
	return nil
}

func (f *Fake) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	body := ""
	if m, ok := req.(proto.Message); ok {
		b, _ := protojson.Marshal(m)
		body = canonical(b)
	}
	method := strings.TrimPrefix(info.FullMethod, "/")
	if err := f.record(method, body); err != nil {
		return nil, err
	}
	if err := f.refuse(ctx, method, body); err != nil {
		return nil, err
	}
	resp, err := h(ctx, req)
	f.runHooks()
	return resp, err
}

// hook queues an OnPool call; mu is held.
func (f *Fake) hook(event, cluster string, np *containerpb.NodePool) {
	if f.onPool == nil {
		return
	}
	var cp *containerpb.NodePool
	if np != nil {
		cp = proto.Clone(np).(*containerpb.NodePool)
	}
	f.hooks = append(f.hooks, func() { f.onPool(event, cluster, cp) })
}

// runHooks runs the queued OnPool calls, outside the lock, before the call that made
// them due answers (so a poll that sees an operation DONE sees its nodes too).
func (f *Fake) runHooks() {
	f.mu.Lock()
	hs := f.hooks
	f.hooks = nil
	f.mu.Unlock()
	for _, h := range hs {
		h()
	}
}

// canonical re-encodes JSON indented with sorted keys (protojson's spacing is not stable).
func canonical(b []byte) string {
	if len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return ""
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

// newOp registers an operation that finishes after opPolls polls; mu is held.
func (f *Fake) newGKEOp(kind containerpb.Operation_Type, target string, done func()) *containerpb.Operation {
	f.nextOp++
	o := &containerpb.Operation{Name: fmt.Sprintf("operation-%d", f.nextOp), OperationType: kind, Status: containerpb.Operation_RUNNING, TargetLink: target}
	left := f.opPolls
	if kind == containerpb.Operation_CREATE_CLUSTER {
		left = f.clusterOpPolls
	}
	f.ops[o.Name] = &op{gkeOp: o, target: target, left: left, done: f.failing(kind, target, o, done)}
	return proto.Clone(o).(*containerpb.Operation)
}

func (f *Fake) newLRO(parent, target string, done func() proto.Message) *longrunningpb.Operation {
	f.nextOp++
	o := &longrunningpb.Operation{Name: fmt.Sprintf("%s/operations/op-%d", parent, f.nextOp)}
	d := func() { f.finishLRO(o, done()) }
	f.ops[o.Name] = &op{lro: o, target: target, left: f.opPolls, done: d}
	return proto.Clone(o).(*longrunningpb.Operation)
}

// finishLRO marks o done with resp; mu is held.
func (f *Fake) finishLRO(o *longrunningpb.Operation, resp proto.Message) {
	anyResp, _ := anypb.New(resp)
	o.Done = true
	o.Result = &longrunningpb.Operation_Response{Response: anyResp}
}

// tick advances one operation; mu is held.
func (f *Fake) tick(o *op) {
	if o.left <= 0 {
		return
	}
	o.left--
	if o.left == 0 {
		if o.gkeOp != nil {
			o.gkeOp.Status = containerpb.Operation_DONE
		}
		o.done()
	}
}

// tickTarget advances the operations on target (a GetCluster of a PROVISIONING cluster
// sees it progress, as it does at Google); mu is held.
func (f *Fake) tickTarget(target string) {
	for _, k := range sortedOps(f.ops) {
		if o := f.ops[k]; o.target == target {
			f.tick(o)
		}
	}
}

func sortedOps(m map[string]*op) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func notFound(what string) error { return status.Errorf(codes.NotFound, "%s not found", what) }

// compute serves the Compute Engine REST calls provisioning makes: a zone's machine
// types and a project.
func (f *Fake) compute(w http.ResponseWriter, r *http.Request) {
	if err := f.record("compute "+r.Method+" "+r.URL.Path, ""); err != nil {
		http.Error(w, `{"error":{"code":500,"message":"`+err.Error()+`"}}`, 500)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) >= 4 && parts[2] == "projects" {
		if msg := f.disabled(parts[3], "compute.googleapis.com"); msg != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"error":{"code":403,"message":%q,"errors":[{"message":%q,"domain":"usageLimits","reason":"accessNotConfigured"}],"status":"PERMISSION_DENIED"}}`, msg, msg)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	// compute/v1/projects/P[/zones/Z/machineTypes]
	switch {
	case len(parts) >= 6 && parts[4] == "global" && (parts[5] == "networks" || parts[5] == "operations"):
		f.computeGlobal(w, r, parts)
	case len(parts) == 4 && parts[2] == "projects":
		json.NewEncoder(w).Encode(map[string]any{"kind": "compute#project", "name": parts[3], "defaultServiceAccount": "123456789-compute@developer.gserviceaccount.com"})
	case len(parts) == 7 && parts[4] == "zones" && parts[6] == "machineTypes":
		f.mu.Lock()
		mts, ok := f.zones[parts[5]]
		f.mu.Unlock()
		if !ok {
			w.WriteHeader(404)
			fmt.Fprintf(w, `{"error":{"code":404,"message":"The resource 'projects/%s/zones/%s' was not found"}}`, parts[3], parts[5])
			return
		}
		var items []map[string]any
		for _, m := range mts {
			items = append(items, map[string]any{"kind": "compute#machineType", "name": m.Name, "guestCpus": m.CPUs, "memoryMb": m.MemoryMB, "isSharedCpu": m.Shared, "zone": parts[5]})
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": "compute#machineTypeList", "items": items})
	default:
		w.WriteHeader(404)
		fmt.Fprintf(w, `{"error":{"code":404,"message":"no such path %s"}}`, r.URL.Path)
	}
}

// storage records the call and serves /b/BUCKET/iam (the emulator has no IAM); the
// rest goes to fake-gcs-server.
func (f *Fake) storage(w http.ResponseWriter, r *http.Request, proxy http.Handler) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if err := f.record("storage "+r.Method+" "+r.URL.Path, canonical(body)); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		fmt.Fprintf(w, `{"error":{"code":500,"message":%q}}`, err.Error())
		return
	}
	if r.Method == http.MethodPost && strings.TrimSuffix(r.URL.Path, "/") == "/storage/v1/b" && !ubla(body) {
		// The project's organisation enforces uniform bucket-level access (the org policy
		// constraint storage.uniformBucketLevelAccess), as many do: Cloud Storage refuses a
		// bucket without it with 412, as documented.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusPreconditionFailed)
		fmt.Fprint(w, `{"error":{"code":412,"message":"Request violates constraint 'constraints/storage.uniformBucketLevelAccess'","errors":[{"message":"Request violates constraint 'constraints/storage.uniformBucketLevelAccess'","domain":"global","reason":"conditionNotMet","locationType":"header","location":"If-Match"}]}}`)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/iam") {
		bucket := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/storage/v1/b/"), "/iam")
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.Method {
		case http.MethodGet:
			if p, ok := f.bucketPol[bucket]; ok {
				w.Write(p)
				return
			}
			fmt.Fprintf(w, `{"kind":"storage#policy","resourceId":"projects/_/buckets/%s","version":1,"etag":"CAE=","bindings":[{"role":"roles/storage.legacyBucketOwner","members":["projectOwner:p"]}]}`, bucket)
		case http.MethodPut:
			f.bucketPol[bucket] = body
			w.Write(body)
		}
		return
	}
	proxy.ServeHTTP(w, r)
}

// ubla reports whether a bucket insert's body asks for uniform bucket-level access.
func ubla(body []byte) bool {
	var b struct {
		IAMConfiguration struct {
			UniformBucketLevelAccess struct {
				Enabled bool `json:"enabled"`
			} `json:"uniformBucketLevelAccess"`
		} `json:"iamConfiguration"`
	}
	return json.Unmarshal(body, &b) == nil && b.IAMConfiguration.UniformBucketLevelAccess.Enabled
}
