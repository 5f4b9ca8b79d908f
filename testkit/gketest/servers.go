package gketest

import (
	"context"
	"encoding/base64"
	"strings"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"cloud.google.com/go/container/apiv1/containerpb"
	"cloud.google.com/go/iam/admin/apiv1/adminpb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// clusterServer is the GKE ClusterManager: clusters and node pools, with operations.
type clusterServer struct {
	containerpb.UnimplementedClusterManagerServer
	f *Fake
}

func (s *clusterServer) GetCluster(ctx context.Context, r *containerpb.GetClusterRequest) (*containerpb.Cluster, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tickTarget(r.Name)
	c := f.clusters[r.Name]
	if c == nil {
		return nil, notFound("cluster " + r.Name)
	}
	return proto.Clone(c).(*containerpb.Cluster), nil
}

func (s *clusterServer) CreateCluster(ctx context.Context, r *containerpb.CreateClusterRequest) (*containerpb.Operation, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.GetCluster().GetName() == "" || !strings.HasPrefix(r.Parent, "projects/") {
		return nil, status.Error(codes.InvalidArgument, "cluster name and parent are required")
	}
	name := r.Parent + "/clusters/" + r.Cluster.Name
	if f.clusters[name] != nil {
		return nil, status.Errorf(codes.AlreadyExists, "Already exists: %s", name)
	}
	network := r.Cluster.GetNetwork()
	if network == "" {
		network = "default"
	}
	if project := strings.Split(r.Parent, "/")[1]; !f.networkExists(project, network) {
		return nil, status.Errorf(codes.InvalidArgument, "Network %q does not exist.", network)
	}
	c := proto.Clone(r.Cluster).(*containerpb.Cluster)
	c.Status = containerpb.Cluster_PROVISIONING
	c.Location = r.Parent[strings.LastIndex(r.Parent, "/")+1:]
	c.SelfLink = name
	for _, np := range c.NodePools {
		np.Status = containerpb.NodePool_PROVISIONING
	}
	f.clusters[name] = c
	return f.newGKEOp(containerpb.Operation_CREATE_CLUSTER, name, func() {
		c.Status = containerpb.Cluster_RUNNING
		c.CurrentMasterVersion = "1.33.5-gke.1000000"
		if f.apiEndpoint != "" {
			c.Endpoint = f.apiEndpoint
			c.MasterAuth = &containerpb.MasterAuth{ClusterCaCertificate: base64.StdEncoding.EncodeToString(f.apiCA)}
		}
		for _, np := range c.NodePools {
			np.Status = containerpb.NodePool_RUNNING
		}
	}), nil
}

func (s *clusterServer) UpdateCluster(ctx context.Context, r *containerpb.UpdateClusterRequest) (*containerpb.Operation, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clusters[r.Name]
	if c == nil {
		return nil, notFound("cluster " + r.Name)
	}
	if op := f.busy(r.Name); op != "" {
		return nil, busyErr(op)
	}
	c.Status = containerpb.Cluster_RECONCILING
	u := r.GetUpdate()
	return f.newGKEOp(containerpb.Operation_UPDATE_CLUSTER, r.Name, func() {
		if u.DesiredWorkloadIdentityConfig != nil {
			c.WorkloadIdentityConfig = u.DesiredWorkloadIdentityConfig
		}
		if u.DesiredAddonsConfig != nil {
			if c.AddonsConfig == nil {
				c.AddonsConfig = &containerpb.AddonsConfig{}
			}
			if g := u.DesiredAddonsConfig.GcsFuseCsiDriverConfig; g != nil {
				c.AddonsConfig.GcsFuseCsiDriverConfig = g
			}
		}
		c.Status = containerpb.Cluster_RUNNING
	}), nil
}

func (s *clusterServer) DeleteCluster(ctx context.Context, r *containerpb.DeleteClusterRequest) (*containerpb.Operation, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clusters[r.Name]
	if c == nil {
		return nil, notFound("cluster " + r.Name)
	}
	c.Status = containerpb.Cluster_STOPPING
	return f.newGKEOp(containerpb.Operation_DELETE_CLUSTER, r.Name, func() {
		delete(f.clusters, r.Name)
		f.hook("delete-cluster", r.Name, nil)
	}), nil
}

func (s *clusterServer) GetOperation(ctx context.Context, r *containerpb.GetOperationRequest) (*containerpb.Operation, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	short := r.Name[strings.LastIndex(r.Name, "/")+1:]
	o := f.ops[short]
	if o == nil || o.gkeOp == nil {
		return nil, notFound("operation " + r.Name)
	}
	f.tick(o)
	return proto.Clone(o.gkeOp).(*containerpb.Operation), nil
}

func (s *clusterServer) pool(r string) (*containerpb.Cluster, int) {
	i := strings.Index(r, "/nodePools/")
	if i < 0 {
		return nil, -1
	}
	c := s.f.clusters[r[:i]]
	if c == nil {
		return nil, -1
	}
	for j, np := range c.NodePools {
		if np.Name == r[i+len("/nodePools/"):] {
			return c, j
		}
	}
	return c, -1
}

func (s *clusterServer) ListNodePools(ctx context.Context, r *containerpb.ListNodePoolsRequest) (*containerpb.ListNodePoolsResponse, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clusters[r.Parent]
	if c == nil {
		return nil, notFound("cluster " + r.Parent)
	}
	out := &containerpb.ListNodePoolsResponse{}
	for _, np := range c.NodePools {
		out.NodePools = append(out.NodePools, proto.Clone(np).(*containerpb.NodePool))
	}
	return out, nil
}

func (s *clusterServer) GetNodePool(ctx context.Context, r *containerpb.GetNodePoolRequest) (*containerpb.NodePool, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	c, i := s.pool(r.Name)
	if c == nil || i < 0 {
		return nil, notFound("node pool " + r.Name)
	}
	return proto.Clone(c.NodePools[i]).(*containerpb.NodePool), nil
}

func (s *clusterServer) CreateNodePool(ctx context.Context, r *containerpb.CreateNodePoolRequest) (*containerpb.Operation, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clusters[r.Parent]
	if c == nil {
		return nil, notFound("cluster " + r.Parent)
	}
	if _, i := s.pool(r.Parent + "/nodePools/" + r.GetNodePool().GetName()); i >= 0 {
		return nil, status.Errorf(codes.AlreadyExists, "node pool %s exists", r.NodePool.Name)
	}
	if op := f.busy(r.Parent); op != "" {
		return nil, busyErr(op)
	}
	if pp := r.NodePool.GetPlacementPolicy(); pp.GetTpuTopology() != "" && pp.GetType() != containerpb.NodePool_PlacementPolicy_COMPACT {
		return nil, status.Error(codes.InvalidArgument, "tpu_topology requires COMPACT placement")
	}
	if r.NodePool.GetConfig().GetSpot() && r.NodePool.GetConfig().GetReservationAffinity() != nil {
		return nil, status.Error(codes.InvalidArgument, "spot VMs cannot consume a reservation")
	}
	np := proto.Clone(r.NodePool).(*containerpb.NodePool)
	np.Status = containerpb.NodePool_PROVISIONING
	c.NodePools = append(c.NodePools, np)
	c.Status = containerpb.Cluster_RECONCILING
	return f.newGKEOp(containerpb.Operation_CREATE_NODE_POOL, r.Parent+"/nodePools/"+np.Name, func() {
		np.Status = containerpb.NodePool_RUNNING
		c.Status = containerpb.Cluster_RUNNING
		f.hook("create-pool", r.Parent, np)
	}), nil
}

func (s *clusterServer) DeleteNodePool(ctx context.Context, r *containerpb.DeleteNodePoolRequest) (*containerpb.Operation, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c, i := s.pool(r.Name)
	if c == nil || i < 0 {
		return nil, notFound("node pool " + r.Name)
	}
	if op := f.busy(c.SelfLink); op != "" {
		return nil, busyErr(op)
	}
	np := c.NodePools[i]
	np.Status = containerpb.NodePool_STOPPING
	return f.newGKEOp(containerpb.Operation_DELETE_NODE_POOL, r.Name, func() {
		f.hook("delete-pool", c.SelfLink, np)
		for j, p := range c.NodePools {
			if p == np {
				c.NodePools = append(c.NodePools[:j], c.NodePools[j+1:]...)
				break
			}
		}
	}), nil
}

// registryServer is Artifact Registry: repositories (long-running create and delete)
// and their IAM policies.
type registryServer struct {
	artifactregistrypb.UnimplementedArtifactRegistryServer
	f *Fake
}

func (s *registryServer) GetRepository(ctx context.Context, r *artifactregistrypb.GetRepositoryRequest) (*artifactregistrypb.Repository, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.tickTarget(r.Name)
	if repo := s.f.repos[r.Name]; repo != nil {
		return proto.Clone(repo).(*artifactregistrypb.Repository), nil
	}
	return nil, notFound("repository " + r.Name)
}

func (s *registryServer) CreateRepository(ctx context.Context, r *artifactregistrypb.CreateRepositoryRequest) (*longrunningpb.Operation, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	name := r.Parent + "/repositories/" + r.RepositoryId
	if f.repos[name] != nil {
		return nil, status.Errorf(codes.AlreadyExists, "the repository already exists")
	}
	repo := proto.Clone(r.Repository).(*artifactregistrypb.Repository)
	repo.Name = name
	return f.newLRO(r.Parent, name, func() proto.Message {
		f.repos[name] = repo
		return repo
	}), nil
}

func (s *registryServer) DeleteRepository(ctx context.Context, r *artifactregistrypb.DeleteRepositoryRequest) (*longrunningpb.Operation, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.repos[r.Name] == nil {
		return nil, notFound("repository " + r.Name)
	}
	parent := r.Name[:strings.Index(r.Name, "/repositories/")]
	return f.newLRO(parent, r.Name, func() proto.Message {
		delete(f.repos, r.Name)
		delete(f.repoPol, r.Name)
		return &emptypb.Empty{}
	}), nil
}

func (s *registryServer) GetIamPolicy(ctx context.Context, r *iampb.GetIamPolicyRequest) (*iampb.Policy, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.f.repos[r.Resource] == nil {
		return nil, notFound("repository " + r.Resource)
	}
	return policyOf(s.f.repoPol, r.Resource), nil
}

func (s *registryServer) SetIamPolicy(ctx context.Context, r *iampb.SetIamPolicyRequest) (*iampb.Policy, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.f.repos[r.Resource] == nil {
		return nil, notFound("repository " + r.Resource)
	}
	return setPolicy(s.f.repoPol, r.Resource, r.Policy)
}

func policyOf(m map[string]*iampb.Policy, k string) *iampb.Policy {
	if p := m[k]; p != nil {
		return proto.Clone(p).(*iampb.Policy)
	}
	return &iampb.Policy{Version: 1, Etag: []byte{0}}
}

// setPolicy checks the etag (read-modify-write) and stores a new version.
func setPolicy(m map[string]*iampb.Policy, k string, p *iampb.Policy) (*iampb.Policy, error) {
	cur := policyOf(m, k)
	if len(p.Etag) > 0 && string(p.Etag) != string(cur.Etag) {
		return nil, status.Error(codes.Aborted, "etag mismatch: the policy changed since it was read")
	}
	n := proto.Clone(p).(*iampb.Policy)
	n.Etag = []byte{cur.Etag[0] + 1}
	m[k] = n
	return proto.Clone(n).(*iampb.Policy), nil
}

// lroServer is google.longrunning.Operations for Artifact Registry's operations.
type lroServer struct {
	longrunningpb.UnimplementedOperationsServer
	f *Fake
}

func (s *lroServer) GetOperation(ctx context.Context, r *longrunningpb.GetOperationRequest) (*longrunningpb.Operation, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	o := s.f.ops[r.Name]
	if o == nil || o.lro == nil {
		return nil, notFound("operation " + r.Name)
	}
	s.f.tick(o)
	return proto.Clone(o.lro).(*longrunningpb.Operation), nil
}

// iamServer is IAM admin: service accounts and their IAM policies.
type iamServer struct {
	adminpb.UnimplementedIAMServer
	f *Fake
}

// email from "projects/P/serviceAccounts/EMAIL" (or projects/-).
func email(name string) string { return name[strings.LastIndex(name, "/")+1:] }

func (s *iamServer) GetServiceAccount(ctx context.Context, r *adminpb.GetServiceAccountRequest) (*adminpb.ServiceAccount, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if a := s.f.accounts[email(r.Name)]; a != nil {
		return proto.Clone(a).(*adminpb.ServiceAccount), nil
	}
	return nil, notFound("service account " + r.Name)
}

func (s *iamServer) CreateServiceAccount(ctx context.Context, r *adminpb.CreateServiceAccountRequest) (*adminpb.ServiceAccount, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	project := strings.TrimPrefix(r.Name, "projects/")
	if n := len(r.AccountId); n < 6 || n > 30 {
		return nil, status.Error(codes.InvalidArgument, "account_id must be 6 to 30 characters")
	}
	e := r.AccountId + "@" + project + ".iam.gserviceaccount.com"
	if s.f.accounts[e] != nil {
		return nil, status.Errorf(codes.AlreadyExists, "Service account %s already exists within project projects/%s.", r.AccountId, project)
	}
	a := proto.Clone(r.ServiceAccount).(*adminpb.ServiceAccount)
	a.Name, a.Email, a.ProjectId, a.UniqueId = "projects/"+project+"/serviceAccounts/"+e, e, project, "1000000000000000000001"
	s.f.accounts[e] = a
	return proto.Clone(a).(*adminpb.ServiceAccount), nil
}

func (s *iamServer) DeleteServiceAccount(ctx context.Context, r *adminpb.DeleteServiceAccountRequest) (*emptypb.Empty, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	e := email(r.Name)
	if s.f.accounts[e] == nil {
		return nil, notFound("service account " + r.Name)
	}
	delete(s.f.accounts, e)
	delete(s.f.saPol, e)
	return &emptypb.Empty{}, nil
}

func (s *iamServer) GetIamPolicy(ctx context.Context, r *iampb.GetIamPolicyRequest) (*iampb.Policy, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.f.accounts[email(r.Resource)] == nil {
		return nil, notFound("service account " + r.Resource)
	}
	return policyOf(s.f.saPol, email(r.Resource)), nil
}

func (s *iamServer) SetIamPolicy(ctx context.Context, r *iampb.SetIamPolicyRequest) (*iampb.Policy, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.f.accounts[email(r.Resource)] == nil {
		return nil, notFound("service account " + r.Resource)
	}
	for _, b := range r.GetPolicy().GetBindings() {
		for _, m := range b.Members {
			// Google refuses a Workload Identity member whose pool does not exist yet.
			if strings.Contains(m, ".svc.id.goog[") && !s.f.poolExists(m) {
				return nil, status.Errorf(codes.InvalidArgument, "Identity Pool does not exist (%s)", m)
			}
		}
	}
	return setPolicy(s.f.saPol, email(r.Resource), r.Policy)
}

// poolExists: some RUNNING cluster has the member's workload pool; mu is held.
func (f *Fake) poolExists(member string) bool {
	pool := strings.TrimPrefix(member[:strings.Index(member, "[")], "serviceAccount:")
	for _, c := range f.clusters {
		if c.GetWorkloadIdentityConfig().GetWorkloadPool() == pool && c.Status != containerpb.Cluster_PROVISIONING {
			return true
		}
	}
	return false
}
