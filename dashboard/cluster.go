package dashboard

import (
	"net/http"
	"runtime"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/infra/gke"
)

// ClusterView is the cluster page.
type ClusterView struct {
	Backend string
	Local   bool
	CPUs    int
	Context string
	Server  string
	Error   string
	Nodes   []infra.Node
	Pools   []Pool
	// GKE is the cluster as Google's APIs describe it (gke backends), or why not.
	GKE    *gke.Status
	GKEErr string
	// Warm are the pods kept for the next job in the namespace (warm pods hold their
	// accelerator while they wait), or why they could not be listed; Now is when.
	Warm      []infra.WarmPod
	WarmErr   string
	Namespace string
	Now       time.Time
}

// Pool is the nodes of one node pool.
type Pool struct {
	Name                 string
	Nodes, Ready         int
	Accelerators         []string
	Allocatable, Used    int64
	UsedKnown, HasDevice bool
}

func (s *Server) clusterPage(w http.ResponseWriter, r *http.Request) {
	v := &ClusterView{Backend: s.o.Backend, CPUs: runtime.NumCPU()}
	if s.o.Cloud != nil {
		st, err := s.o.Cloud(r.Context())
		if err != nil {
			v.GKEErr = err.Error()
		} else if g, ok := st.(*gke.Status); ok {
			v.GKE = g
		}
	}
	switch {
	case s.o.Backend == "" || backend.SharesFiles(s.o.Backend):
		v.Local = true
	case s.o.Cluster == nil:
		v.Error = "no cluster is configured for this backend"
		if s.o.ClusterErr != nil {
			v.Error = s.o.ClusterErr.Error()
		}
	default:
		s.readCluster(r, v)
	}
	s.page(w, http.StatusOK, "cluster.html", "Cluster", "cluster", v)
}

// readCluster fills v from the cluster: its nodes, their pools and the warm pods.
func (s *Server) readCluster(r *http.Request, v *ClusterView) {
	v.Context = s.o.Cluster.Context
	if s.o.Cluster.Config != nil {
		v.Server = s.o.Cluster.Config.Host
	}
	nodes, err := infra.Nodes(r.Context(), s.o.Cluster)
	if err != nil {
		v.Error = err.Error()
		return
	}
	v.Nodes = nodes
	v.Namespace, v.Now = s.o.Cluster.Namespace, time.Now()
	if v.Warm, err = infra.ListWarmPods(r.Context(), s.o.Cluster); err != nil {
		v.WarmErr = err.Error()
	}
	v.Pools = poolsOf(nodes)
}

// poolsOf sums nodes by pool, in the order the pools first appear.
func poolsOf(nodes []infra.Node) []Pool {
	byName := map[string]*Pool{}
	var order []string
	for _, n := range nodes {
		name := n.Pool
		if name == "" {
			name = "(no pool label)"
		}
		p := byName[name]
		if p == nil {
			p = &Pool{Name: name, UsedKnown: true}
			byName[name] = p
			order = append(order, name)
		}
		p.add(n)
	}
	var pools []Pool
	for _, name := range order {
		pools = append(pools, *byName[name])
	}
	return pools
}

// add counts node n in p.
func (p *Pool) add(n infra.Node) {
	p.Nodes++
	if n.Ready {
		p.Ready++
	}
	p.Allocatable += n.Allocatable
	if n.Used < 0 {
		p.UsedKnown = false
	} else {
		p.Used += n.Used
	}
	if n.Resource != "" {
		p.HasDevice = true
	}
	for _, a := range n.Accelerators {
		if !contains(p.Accelerators, a) {
			p.Accelerators = append(p.Accelerators, a)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
