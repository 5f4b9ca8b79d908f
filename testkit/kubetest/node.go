package kubetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// PauseImage is the sandbox image, built from Kubernetes' pause.c and pushed to the
// harness registry.
const PauseImage = RegistryURL + "/pause:3.10"

// startRegistry serves an in-memory OCI registry on HostIP:5000 (go-containerregistry's
// registry), from which containerd pulls over plain HTTP.
func (c *Cluster) startRegistry(ctx context.Context) error {
	l, err := net.Listen("tcp", RegistryURL)
	if err != nil {
		return fmt.Errorf("listen %s: %w", RegistryURL, err)
	}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	c.registry = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g := c.registryGuard.Load(); g != nil {
			(*g)(reg).ServeHTTP(w, r)
			return
		}
		reg.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go c.registry.Serve(l)
	pause, err := PauseBinary(ctx, c.Bins)
	if err != nil {
		return err
	}
	return PushFiles(ctx, PauseImage, []File{{Path: "pause", Source: pause, Mode: 0o755}}, []string{"/pause"}, nil)
}

// PauseBinary compiles pause.c (from the k8s.io/kubernetes module) once into bins, the
// directory of the Kubernetes binaries in the tools cache (Binaries).
func PauseBinary(ctx context.Context, bins string) (string, error) {
	out := filepath.Join(bins, "pause")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", err
	}
	src := filepath.Join(string(trimNL(modcache)), "k8s.io", "kubernetes@"+Version, "build", "pause", "linux", "pause.c")
	if _, err := os.Stat(src); err != nil {
		dl := exec.CommandContext(ctx, "go", "mod", "download", "k8s.io/kubernetes@"+Version)
		dl.Dir = filepath.Dir(bins)
		if b, err := dl.CombinedOutput(); err != nil {
			return "", fmt.Errorf("download k8s.io/kubernetes for pause.c: %v: %s", err, b)
		}
	}
	tmp := out + ".tmp"
	if b, err := exec.CommandContext(ctx, "gcc", "-Os", "-static", "-DVERSION=v3.10-kinetic", "-o", tmp, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("gcc pause.c (gcc and a static libc are needed): %v: %s", err, b)
	}
	return out, os.Rename(tmp, out)
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func (c *Cluster) startContainerd(ctx context.Context) error {
	if _, err := exec.LookPath("containerd"); err != nil {
		return fmt.Errorf("containerd is not installed (apt-get install containerd runc containernetworking-plugins): %w", err)
	}
	dir := c.path("containerd")
	cni := c.path("cni", "net.d")
	for _, d := range []string{dir, cni} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// InClusterAPI: pods route the service range through the bridge, where the DNAT
	// rule sends the API service address on to the apiserver.
	routes := ""
	if c.inClusterAPI {
		routes = `, "routes": [{"dst": "10.0.0.0/24"}]`
	}
	conf := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "kinetic", "plugins": [
  {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "gateway": %q}]], "dataDir": %q%s}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
`, Bridge, PodCIDR, HostIP, c.path("cni", "ipam"), routes)
	if err := os.WriteFile(filepath.Join(cni, "10-kinetic.conflist"), []byte(conf), 0o644); err != nil {
		return err
	}
	toml := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors.%q]
    endpoint = ["http://%s"]
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.path("containerd", "containerd.sock"), PauseImage, cni, RegistryURL, RegistryURL)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(toml), 0o644); err != nil {
		return err
	}
	p, err := c.run("containerd", "containerd", "--config", filepath.Join(dir, "config.toml"))
	if err != nil {
		return err
	}
	return c.waitFor(ctx, p, 30*time.Second, func() error {
		_, err := os.Stat(c.path("containerd", "containerd.sock"))
		return err
	})
}

// startKubelet starts the node's kubelet. In-place pod resize is off: Kubernetes 1.33's
// kubelet can see a starting container without its "actuated resources" record, take
// it for a resize, and with cgroupsPerQOS=false (this node's) dereference the nil pod
// cgroup config in doPodResizeAction and exit ("Missing actuated resource record", then
// a nil pointer panic: kubernetes/kubernetes#137999 and #140387, fixed after 1.33). The
// node then went NotReady part-way through a run, which docs/status.md listed as a
// flake under load. Kinetic never resizes pods, so nothing it does needs the gate.
func (c *Cluster) startKubelet(ctx context.Context) error {
	dir := c.path("kubelet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
maxOpenFiles: 20000
makeIPTablesUtilChains: false
address: %s
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://%s
serializeImagePulls: false
maxPods: 110
evictionHard: {memory.available: "50Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
syncFrequency: 5s
nodeStatusUpdateFrequency: 5s
featureGates: {InPlacePodVerticalScaling: false}
`, HostIP, c.path("containerd", "containerd.sock"))
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	_, err := c.run("kubelet", filepath.Join(c.Bins, "kubelet"),
		"--kubeconfig="+c.Kubeconfig, "--config="+filepath.Join(dir, "config.yaml"),
		"--root-dir="+filepath.Join(dir, "root"), "--cert-dir="+filepath.Join(dir, "pki"),
		"--hostname-override="+NodeName, "--node-ip="+HostIP, "--v=0")
	return err
}

// Client returns an admin clientset.
func (c *Cluster) Client() (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return kubernetes.NewForConfig(cfg)
}

// waitReady waits for the node to be Ready and the default service account to exist
// (pods are refused until it does).
func (c *Cluster) waitReady(ctx context.Context) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	var kubelet *proc
	for _, p := range c.procs {
		if p.name == "kubelet" {
			kubelet = p
		}
	}
	return c.waitFor(ctx, kubelet, 90*time.Second, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := false
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			return errors.New("node not Ready")
		}
		_, err = cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

func (c *Cluster) startKwok(ctx context.Context) error {
	_, err := c.run("kwok", filepath.Join(c.Bins, "kwok"),
		"--kubeconfig="+c.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=10.86.0.0/16", "--node-ip=10.86.0.1")
	return err
}

// FakeNode describes a node kwok runs: it reports Ready, "runs" the pods scheduled on it
// and completes the pods of Jobs, without containers. Use it for scheduling and scale
// tests (GPU and TPU nodes with GKE's labels, capacity and taints).
type FakeNode struct {
	Name     string
	Labels   map[string]string
	Capacity map[string]string // resource name → quantity; cpu, memory and pods have defaults
	Taints   []corev1.Taint
}

// AddFakeNode registers a kwok node (Start with Options.Kwok). The real node is never
// annotated for kwok.
func (c *Cluster) AddFakeNode(ctx context.Context, n FakeNode) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"),
		corev1.ResourcePods: resource.MustParse("1000"),
	}
	for k, v := range n.Capacity {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("fake node %s: %s=%q: %w", n.Name, k, v, err)
		}
		capacity[corev1.ResourceName(k)] = q
	}
	labels := map[string]string{"type": "kwok", "kubernetes.io/hostname": n.Name}
	for k, v := range n.Labels {
		labels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Spec:   corev1.NodeSpec{Taints: n.Taints},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	_, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	return err
}

// GuardRegistry puts guard in front of the harness registry from now on (nil removes
// it): e.g. a test's stand-in for Artifact Registry, which asks for Google's tokens.
func (c *Cluster) GuardRegistry(guard func(http.Handler) http.Handler) {
	if guard == nil {
		c.registryGuard.Store(nil)
		return
	}
	c.registryGuard.Store(&guard)
}
