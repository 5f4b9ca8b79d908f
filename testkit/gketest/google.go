package gketest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Google's behaviour beyond request shapes, as its documentation and its answers
// describe it: calls to an API that is off (or was enabled moments ago) are refused
// with 403 SERVICE_DISABLED; Service Usage asks user credentials for a quota project;
// a cluster runs one operation at a time (FAILED_PRECONDITION "Cluster is running
// incompatible operation", CLUSTER_ALREADY_HAS_OPERATION); an operation can end DONE
// with an error (a quota, a zone's stockout) and leave its cluster or node pool in
// ERROR.

// services maps a gRPC service to the Google API it belongs to.
var services = map[string]string{
	"google.container.v1.ClusterManager":                   "container.googleapis.com",
	"google.devtools.artifactregistry.v1.ArtifactRegistry": "artifactregistry.googleapis.com",
	"google.iam.admin.v1.IAM":                              "iam.googleapis.com",
}

var titles = map[string]string{
	"container.googleapis.com":        "Kubernetes Engine API",
	"artifactregistry.googleapis.com": "Artifact Registry API",
	"iam.googleapis.com":              "Identity and Access Management (IAM) API",
	"compute.googleapis.com":          "Compute Engine API",
}

var projectRE = regexp.MustCompile(`projects/([a-z][a-z0-9-]*)`)

// gcloudProject is the project of gcloud's own OAuth client, which user credentials
// without a quota project are billed to (and where Service Usage is not enabled).
const gcloudProject = "764086051850"

// refuse is what Google answers before a call's handler runs: an API that is off or
// not yet ready, a user without a quota project at Service Usage.
func (f *Fake) refuse(ctx context.Context, method, body string) error {
	svc := method[:strings.IndexByte(method, '/')]
	if svc == "google.api.serviceusage.v1.ServiceUsage" && f.userADC {
		if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("x-goog-user-project")) == 0 {
			return googleErr(codes.PermissionDenied, "Your application is authenticating by using local Application Default Credentials. The serviceusage.googleapis.com API requires a quota project, which is not set by default. To learn how to set your quota project, see https://cloud.google.com/docs/authentication/adc-troubleshooting/user-creds .",
				"SERVICE_DISABLED", map[string]string{"service": "serviceusage.googleapis.com", "consumer": "projects/" + gcloudProject})
		}
	}
	api := services[svc]
	m := projectRE.FindStringSubmatch(body)
	if api == "" || m == nil {
		return nil
	}
	if msg := f.disabled(m[1], api); msg != "" {
		return googleErr(codes.PermissionDenied, msg, "SERVICE_DISABLED", map[string]string{"service": api, "consumer": "projects/" + m[1]})
	}
	return nil
}

// disabled is Google's message when api cannot be called on project: off, or enabled
// less than Options.Propagation ago; "" when it can.
func (f *Fake) disabled(project, api string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.apiEnabled(project, api) && !time.Now().Before(f.readyAt[project+"/"+api]) {
		return ""
	}
	title := titles[api]
	if title == "" {
		title = api
	}
	return fmt.Sprintf("%s has not been used in project %s before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/%s/overview?project=%s then retry. If you enabled this API recently, wait a few minutes for the action to propagate to our systems and retry.", title, project, api, project)
}

// googleErr is a gRPC error with Google's ErrorInfo detail.
func googleErr(c codes.Code, msg, reason string, md map[string]string) error {
	st, err := status.New(c, msg).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: "googleapis.com", Metadata: md})
	if err != nil {
		return status.Error(c, msg)
	}
	return st.Err()
}

// busy is the running operation on cluster (or one of its pools), "" if none; mu is
// held.
func (f *Fake) busy(cluster string) string {
	for _, k := range sortedOps(f.ops) {
		o := f.ops[k]
		if o.gkeOp != nil && o.left > 0 && (o.target == cluster || strings.HasPrefix(o.target, cluster+"/nodePools/")) {
			return o.gkeOp.Name
		}
	}
	return ""
}

// busyErr is GKE's refusal of a second operation on a cluster.
func busyErr(op string) error {
	return googleErr(codes.FailedPrecondition, fmt.Sprintf("Cluster is running incompatible operation %s.", op), "CLUSTER_ALREADY_HAS_OPERATION", map[string]string{"operation": op})
}

type opFailure struct {
	code codes.Code
	msg  string
}

// FailOp makes the next operation of kind (CREATE_CLUSTER, CREATE_NODE_POOL) end DONE
// with an error whose code and message are Google's (e.g. codes.ResourceExhausted and
// "Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 0.0 in region us-central1.", or
// "… ZONE_RESOURCE_POOL_EXHAUSTED …"), leaving its cluster or node pool in ERROR with
// that status message, as GKE does.
func (f *Fake) FailOp(kind containerpb.Operation_Type, code codes.Code, msg string) {
	f.mu.Lock()
	f.opFail[kind] = &opFailure{code: code, msg: msg}
	f.mu.Unlock()
}

// failing replaces done with the failure FailOp asked for kind, if any; mu is held.
func (f *Fake) failing(kind containerpb.Operation_Type, target string, o *containerpb.Operation, done func()) func() {
	fl := f.opFail[kind]
	if fl == nil {
		return done
	}
	delete(f.opFail, kind)
	return func() {
		o.Error = &rpcstatus.Status{Code: int32(fl.code), Message: fl.msg}
		o.StatusMessage = fl.msg
		switch kind {
		case containerpb.Operation_CREATE_CLUSTER:
			if c := f.clusters[target]; c != nil {
				c.Status, c.StatusMessage = containerpb.Cluster_ERROR, fl.msg
				for _, np := range c.NodePools {
					np.Status, np.StatusMessage = containerpb.NodePool_ERROR, fl.msg
				}
			}
		case containerpb.Operation_CREATE_NODE_POOL:
			i := strings.Index(target, "/nodePools/")
			if c := f.clusters[target[:i]]; c != nil {
				c.Status = containerpb.Cluster_RUNNING
				for _, np := range c.NodePools {
					if np.Name == target[i+len("/nodePools/"):] {
						np.Status, np.StatusMessage = containerpb.NodePool_ERROR, fl.msg
					}
				}
			}
		}
	}
}

// networkExists says whether project has the VPC network name; mu is held.
func (f *Fake) networkExists(project, name string) bool {
	if on, ok := f.networks[project+"/"+name]; ok {
		return on
	}
	return name == "default" && !f.noDefaultNet
}

// Network says whether project has the VPC network name.
func (f *Fake) Network(project, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.networkExists(project, name)
}

// computeGlobal serves compute/v1/projects/P/global/networks[/N] (get, insert, delete:
// operations that take effect at their first poll) and global/operations/OP.
func (f *Fake) computeGlobal(w http.ResponseWriter, r *http.Request, parts []string) {
	project := parts[3]
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := func(code int, msg string) {
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"code":%d,"message":%q}}`, code, msg)
	}
	newOp := func(kind, target string, effect func()) {
		f.nextOp++
		name := fmt.Sprintf("operation-%d-compute", f.nextOp)
		f.computeOps[name] = effect
		json.NewEncoder(w).Encode(map[string]any{"kind": "compute#operation", "name": name, "operationType": kind, "status": "RUNNING",
			"targetLink": "https://www.googleapis.com/compute/v1/projects/" + project + "/global/networks/" + target})
	}
	switch {
	case parts[5] == "operations" && len(parts) == 7 && r.Method == http.MethodGet:
		effect, ok := f.computeOps[parts[6]]
		if !ok {
			fail(404, "The resource 'projects/"+project+"/global/operations/"+parts[6]+"' was not found")
			return
		}
		if effect != nil {
			effect()
			f.computeOps[parts[6]] = nil
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": "compute#operation", "name": parts[6], "status": "DONE"})
	case len(parts) == 7 && r.Method == http.MethodGet:
		if !f.networkExists(project, parts[6]) {
			fail(404, "The resource 'projects/"+project+"/global/networks/"+parts[6]+"' was not found")
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": "compute#network", "name": parts[6], "autoCreateSubnetworks": true})
	case len(parts) == 6 && r.Method == http.MethodPost:
		var n struct {
			Name string `json:"name"`
			Auto bool   `json:"autoCreateSubnetworks"`
		}
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n.Name == "" {
			fail(400, "Invalid value for field 'resource.name'")
			return
		}
		if f.networkExists(project, n.Name) {
			fail(409, "The resource 'projects/"+project+"/global/networks/"+n.Name+"' already exists")
			return
		}
		newOp("insert", n.Name, func() { f.networks[project+"/"+n.Name] = true })
	case len(parts) == 7 && r.Method == http.MethodDelete:
		if !f.networkExists(project, parts[6]) {
			fail(404, "The resource 'projects/"+project+"/global/networks/"+parts[6]+"' was not found")
			return
		}
		for _, c := range f.clusters {
			if strings.HasPrefix(c.SelfLink, "projects/"+project+"/") && c.Network == parts[6] {
				fail(400, "The network resource 'projects/"+project+"/global/networks/"+parts[6]+"' is already being used by 'projects/"+project+"/global/firewalls/gke-"+c.Name+"-all'")
				return
			}
		}
		newOp("delete", parts[6], func() { f.networks[project+"/"+parts[6]] = false })
	default:
		fail(404, "no such path "+r.URL.Path)
	}
}
