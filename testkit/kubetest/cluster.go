// Package kubetest starts a real single-node Kubernetes cluster on this machine for
// tests and for people (`make cluster`): etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, and a real kubelet on Debian's containerd and runc, all built from the
// Go module proxy (see ./tools and ../../../shared/notes/real-cluster.md). Every packet
// stays on loopback and on a bridge the harness creates (kn-br0, 10.85.0.1/24); pods
// reach the harness's registry and GCS emulator at 10.85.0.1.
//
// Only one cluster runs on a machine at a time (fixed ports and bridge); Start takes a
// machine-wide lock that Stop releases, so test packages running in parallel queue up.
package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kinetic-run/kinetic/internal/filelock"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

// Network facts: the bridge the harness makes, and the address the host has on it.
const (
	Bridge      = "kn-br0"
	HostIP      = "10.85.0.1"
	PodCIDR     = "10.85.0.0/24"
	APIPort     = "6443"
	RegistryURL = HostIP + ":5000"
	NodeName    = "kn-node"
)

// Options configure Start.
type Options struct {
	// Dir holds every file of the cluster; default a fresh temporary directory, removed by
	// Stop.
	Dir string
	// Log receives progress lines; default discard.
	Log io.Writer
	// Kwok also starts kwok, which manages nodes annotated kwok.x-k8s.io/node=fake.
	Kwok bool
	// InClusterAPI lets pods reach the API server at its service address (10.0.0.1:443,
	// what in-cluster clients such as controllers use): there is no kube-proxy, so a DNAT
	// rule on the bridge sends it to the apiserver, removed by Stop. The apiserver also
	// calls webhooks of services at their pods (--enable-aggregator-routing): the host
	// reaches pod addresses, not service ones.
	InClusterAPI bool
}

// APIServiceIP is the API server's service address (the first of 10.0.0.0/24).
const APIServiceIP = "10.0.0.1"

// CAFile is the API server's serving certificate chain (self-signed by the apiserver):
// the CA a client outside the kubeconfig verifies it with.
func (c *Cluster) CAFile() string { return c.path("pki", "serving", "apiserver.crt") }

// Cluster is a running cluster.
type Cluster struct {
	Dir string
	// Kubeconfig is an admin kubeconfig file (context "kinetic-test").
	Kubeconfig string
	// Token is the admin bearer token.
	Token string
	// GCS is the GCS emulator, listening on HostIP so pods reach it.
	GCS *gcstest.Server
	// Bins is the directory of the Kubernetes binaries (apiserver, controller-manager, scheduler, kubelet, etcd, kwok).
	Bins string

	ownDir   bool
	log      func(string, ...any)
	unlock   func() // releases the machine-wide cluster lock
	mu       sync.Mutex
	procs    []*proc
	registry *http.Server
	// registryGuard wraps the registry's handler (GuardRegistry).
	registryGuard atomic.Pointer[func(http.Handler) http.Handler]

	inClusterAPI bool
	dnat         []string // the iptables rule added for InClusterAPI, removed by Stop
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start brings the cluster up and returns once the node is Ready and the default
// service account exists. On error everything started is stopped.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", a...)
		}
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("kubetest: the cluster needs root (bridge, containerd, kubelet)")
	}
	bins, err := Binaries(ctx, logf)
	if err != nil {
		return nil, err
	}
	c = &Cluster{Dir: o.Dir, Bins: bins, log: logf, inClusterAPI: o.InClusterAPI}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "kinetic-cluster-"); err != nil {
			return nil, err
		}
		c.ownDir = true
	}
	if err := c.takeLock(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	start := time.Now()
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"network", c.network},
		{"registry", c.startRegistry},
		{"gcs", c.startGCS},
		{"etcd", c.startEtcd},
		{"apiserver", c.startAPIServer},
		{"controllers", c.startControllers},
		{"containerd", func(ctx context.Context) error { return c.startContainerd(ctx) }},
		{"kubelet", c.startKubelet},
		{"ready", c.waitReady},
	}
	for _, s := range steps {
		t := time.Now()
		if err := s.fn(ctx); err != nil {
			return c, fmt.Errorf("kubetest: %s: %w", s.name, err)
		}
		logf("kubetest: %s up (%s)", s.name, time.Since(t).Round(time.Millisecond))
	}
	if o.Kwok {
		if err := c.startKwok(ctx); err != nil {
			return c, fmt.Errorf("kubetest: kwok: %w", err)
		}
	}
	logf("kubetest: cluster ready in %s; KUBECONFIG=%s", time.Since(start).Round(time.Millisecond), c.Kubeconfig)
	return c, nil
}

// MachineLock is the file whose lock serialises clusters on this machine: the bridge,
// the ports and the webhook address are the machine's, whatever tools cache a run uses
// (a cold run with its own KINETIC_TOOLS_CACHE beside a warm one must still queue).
const MachineLock = "/tmp/kinetic-kubetest-cluster.lock"

// takeLock serialises clusters on this machine: MachineLock, then (for checkouts older
// than MachineLock, which lock only that) cluster.lock in the tools cache.
func (c *Cluster) takeLock() error {
	tools, err := ToolsDir()
	if err != nil {
		return err
	}
	machine, err := filelock.Lock(MachineLock)
	if err != nil {
		return err
	}
	cache, err := filelock.Lock(filepath.Join(filepath.Dir(tools), "cluster.lock"))
	if err != nil {
		machine()
		return err
	}
	c.unlock = func() { cache(); machine() }
	return nil
}

// Stop stops every process in reverse order of start (the apiserver before etcd), removes
// the containers the kubelet left, and releases the lock.
func (c *Cluster) Stop() {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		if p.name == "containerd" {
			c.killShims()
		}
		p.stop()
	}
	if c.registry != nil {
		c.registry.Close()
	}
	if c.dnat != nil {
		exec.Command("iptables", append([]string{"-t", "nat", "-D"}, c.dnat...)...).Run()
		c.dnat = nil
	}
	if c.GCS != nil {
		c.GCS.Stop()
	}
	// The kubelet's mounts (service account tokens, emptyDirs) outlive it.
	c.unmountUnder(c.Dir)
	if c.ownDir {
		os.RemoveAll(c.Dir)
	}
	if c.unlock != nil {
		c.unlock()
		c.unlock = nil
	}
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// killShims stops the containers and their containerd shims, which run in their own
// process groups and would otherwise outlive the cluster. A container's first process is
// a child of its shim; killing it ends the container's whole PID namespace.
func (c *Cluster) killShims() {
	out, _ := exec.Command("pgrep", "-f", "containerd-shim.* -address "+c.path("containerd", "containerd.sock")).Output()
	for _, shim := range strings.Fields(string(out)) {
		kids, _ := exec.Command("pgrep", "-P", shim).Output()
		for _, pid := range append(strings.Fields(string(kids)), shim) {
			var n int
			fmt.Sscan(pid, &n)
			if n > 0 {
				syscall.Kill(n, syscall.SIGKILL)
			}
		}
	}
}

func (c *Cluster) unmountUnder(dir string) {
	raw, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			points = append(points, f[1])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		unix.Unmount(points[i], unix.MNT_DETACH)
	}
}

func (c *Cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.Dir}, elem...)...)
}

// run starts a long-lived process with its output in logs/NAME.log.
func (c *Cluster) run(name string, bin string, args ...string) (*proc, error) {
	if err := os.MkdirAll(c.path("logs"), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(c.path("logs", name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); logf.Close(); close(p.done) }()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// LogTail returns the last n bytes of a component's log, for failure messages.
func (c *Cluster) LogTail(name string, n int) string {
	b, _ := os.ReadFile(c.path("logs", name+".log"))
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitFor polls check until it succeeds, the process dies, or the timeout passes.
func (c *Cluster) waitFor(ctx context.Context, p *proc, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		if p != nil {
			select {
			case <-p.done:
				return fmt.Errorf("%s exited (%v):\n%s", p.name, p.err, c.LogTail(p.name, 3000))
			default:
			}
		}
		if time.Now().After(deadline) {
			name := ""
			if p != nil {
				name = p.name
			}
			return fmt.Errorf("not ready within %s: %v\n%s", timeout, last, c.LogTail(name, 3000))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) network(ctx context.Context) error {
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("the ip command (iproute2) is needed: %w", err)
	}
	if err := exec.Command("ip", "link", "show", Bridge).Run(); err != nil {
		if out, err := exec.Command("ip", "link", "add", Bridge, "type", "bridge").CombinedOutput(); err != nil {
			return fmt.Errorf("ip link add %s: %v: %s", Bridge, err, out)
		}
	}
	out, _ := exec.Command("ip", "-4", "addr", "show", "dev", Bridge).Output()
	if !strings.Contains(string(out), HostIP+"/") {
		if out, err := exec.Command("ip", "addr", "add", HostIP+"/24", "dev", Bridge).CombinedOutput(); err != nil {
			return fmt.Errorf("ip addr add: %v: %s", err, out)
		}
	}
	if out, err := exec.Command("ip", "link", "set", Bridge, "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set up: %v: %s", err, out)
	}
	if c.inClusterAPI {
		rule := []string{"PREROUTING", "-i", Bridge, "-d", APIServiceIP, "-p", "tcp", "--dport", "443", "-j", "DNAT", "--to-destination", HostIP + ":" + APIPort}
		// A rule left by a killed run is removed first, so there is one.
		for exec.Command("iptables", append([]string{"-t", "nat", "-D"}, rule...)...).Run() == nil {
		}
		if out, err := exec.Command("iptables", append([]string{"-t", "nat", "-A"}, rule...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables DNAT for the API service: %v: %s", err, out)
		}
		c.dnat = rule
	}
	return nil
}

func (c *Cluster) startGCS(ctx context.Context) error {
	s, err := gcstest.Launch(HostIP)
	if err != nil {
		return err
	}
	c.GCS = s
	return nil
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	p, err := c.run("etcd", filepath.Join(c.Bins, "etcd"),
		"--data-dir", c.path("etcd"),
		"--listen-client-urls", "http://127.0.0.1:2379",
		"--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380",
		"--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "default=http://127.0.0.1:2380",
		"--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		return err
	}
	return c.waitFor(ctx, p, 30*time.Second, func() error { return httpOK("http://127.0.0.1:2379/health", "") })
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	pki := c.path("pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pki, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pki, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return err
	}
	var tok [16]byte
	rand.Read(tok[:])
	c.Token = hex.EncodeToString(tok[:])
	if err := os.WriteFile(filepath.Join(pki, "tokens.csv"), []byte(c.Token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return err
	}
	c.Kubeconfig = c.path("kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kinetic-test
  cluster:
    server: https://%s:%s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: kinetic-test
  context: {cluster: kinetic-test, user: admin, namespace: default}
current-context: kinetic-test
`, HostIP, APIPort, c.Token)
	if err := os.WriteFile(c.Kubeconfig, []byte(kc), 0o600); err != nil {
		return err
	}
	p, err := c.run("kube-apiserver", filepath.Join(c.Bins, "kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address=0.0.0.0", "--advertise-address="+HostIP, "--secure-port="+APIPort,
		"--cert-dir="+filepath.Join(pki, "serving"),
		"--service-account-key-file="+filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--token-auth-file="+filepath.Join(pki, "tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--allow-privileged=true",
		"--max-requests-inflight=1000", "--max-mutating-requests-inflight=500",
		"--enable-aggregator-routing="+strconv.FormatBool(c.inClusterAPI),
		"--v=0")
	if err != nil {
		return err
	}
	return c.waitFor(ctx, p, 60*time.Second, func() error {
		return httpOK("https://127.0.0.1:"+APIPort+"/readyz", c.Token)
	})
}

func (c *Cluster) startControllers(ctx context.Context) error {
	pki := c.path("pki")
	if _, err := c.run("kube-controller-manager", filepath.Join(c.Bins, "kube-controller-manager"),
		"--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1",
		"--service-account-private-key-file="+filepath.Join(pki, "sa.key"),
		"--root-ca-file="+filepath.Join(pki, "serving", "apiserver.crt"),
		"--use-service-account-credentials=false",
		"--kube-api-qps=200", "--kube-api-burst=400",
		"--concurrent-job-syncs=20", "--concurrent-gc-syncs=40"); err != nil {
		return err
	}
	_, err := c.run("kube-scheduler", filepath.Join(c.Bins, "kube-scheduler"),
		"--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1",
		"--kube-api-qps=200", "--kube-api-burst=400")
	return err
}

func httpOK(url, token string) error {
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
		return fmt.Errorf("%s: %s %s", url, resp.Status, b)
	}
	return nil
}
