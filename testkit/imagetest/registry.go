package imagetest

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/kinetic-run/kinetic/testkit/tier"
)

// Registry is a registry started by a test, reachable over plain HTTP at Host.
type Registry struct {
	// Host is "127.0.0.1:PORT", the registry part of image references.
	Host string

	mu       sync.Mutex
	requests []string
}

// Requests returns the requests served so far ("METHOD PATH"), oldest first. Only the
// in-process registry records them.
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// ResetRequests forgets the requests recorded so far.
func (r *Registry) ResetRequests() {
	r.mu.Lock()
	r.requests = nil
	r.mu.Unlock()
}

// StartRegistry starts go-containerregistry's in-process registry on 127.0.0.1 and
// stops it when t ends. It records every request (Requests).
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = srv.Listener.Addr().String()
	return r
}

// StartDockerRegistry starts Debian's docker-registry (github.com/docker/distribution)
// on 127.0.0.1 at a free port with its own config file and storage under a temporary
// directory, and stops it when t ends. addr, if given, is the listen address instead
// (e.g. "10.85.0.1:5000" for pods).
func StartDockerRegistry(t testing.TB, addr ...string) *Registry {
	t.Helper()
	tier.Heavy(t, "starts docker-registry")
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Skip("imagetest: docker-registry is not installed (apt-get install docker-registry); CI installs it")
	}
	dir := t.TempDir()
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		listen := ""
		if len(addr) > 0 {
			listen = addr[0]
		} else {
			port, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			listen = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		}
		r, err := startDockerRegistry(t, bin, dir, listen)
		if err == nil {
			return r
		}
		last = err
	}
	t.Fatalf("imagetest: start docker-registry: %v", last)
	return nil
}

func startDockerRegistry(t testing.TB, bin, dir, listen string) (*Registry, error) {
	conf := filepath.Join(dir, "config.yml")
	storage := filepath.Join(dir, "storage")
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, storage, listen)
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	out := &syncBuffer{}
	cmd := exec.Command(bin, "serve", conf)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("docker-registry exited (%v):\n%s", err, out.String())
		default:
		}
		resp, err := client.Get("http://" + listen + "/v2/")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("docker-registry did not answer on %s within 20s (last: %v):\n%s", listen, err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() && out.String() != "" {
			t.Logf("docker-registry output:\n%s", out.String())
		}
	})
	return &Registry{Host: listen}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) < 1<<20 {
		b.buf = append(b.buf, p...)
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
