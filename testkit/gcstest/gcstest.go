// Package gcstest gives tests a real GCS emulator: fake-gcs-server
// (github.com/fsouza/fake-gcs-server), built from the Go module proxy at the version
// Kinetic's go.mod pins (pin.go; the product never imports it) into a per-user tools
// cache, started on 127.0.0.1 on a free port with the in-memory backend, and stopped when
// the test ends.
//
//	srv := gcstest.Start(t)
//	srv.CreateBucket(t, "b")
//	s, err := store.Open(ctx, "gs://b?endpoint="+srv.URL())
//
// The binary is built once per version with `go build` inside this module into the tools
// cache (testkit/toolcache: fake-gcs-server-<version>/), under a file lock so parallel
// test packages do not build it twice, and reused after that. It works from a TestMain
// (before flags are parsed) and from a plain main.
// $KINETIC_FAKE_GCS_SERVER names a prebuilt binary to use instead.
//
// Importing gcstest links the store's gs:// driver (store/gcs).
//
// When the binary cannot be built (no Go toolchain or no module proxy), Start fails the
// test, unless KINETIC_ALLOW_SKIP_GCS=1, when it skips it: CI must exercise the emulator.
package gcstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/srcroot"
	"github.com/kinetic-run/kinetic/testkit/toolcache"
	// The store's gs:// driver: every test that speaks to the emulator through a store
	// needs it, and store itself links no cloud SDK.
	_ "github.com/kinetic-run/kinetic/store/gcs"
	"github.com/kinetic-run/kinetic/testkit/tier"
)

// Version is the pinned fake-gcs-server release: the version this module's go.mod
// requires (pin.go keeps it there; TestVersionIsTheModules holds the two equal).
const Version = "v1.56.1"

// Module is fake-gcs-server's module path.
const Module = "github.com/fsouza/fake-gcs-server"

const (
	envBinary    = "KINETIC_FAKE_GCS_SERVER"
	envAllowSkip = "KINETIC_ALLOW_SKIP_GCS"
)

// Server is one running fake-gcs-server.
type Server struct {
	url  string
	cmd  *exec.Cmd
	out  *syncBuffer
	stop func()
}

// URL returns the server's base URL, e.g. "http://127.0.0.1:41234": the value of a gs://
// store URL's endpoint parameter.
func (s *Server) URL() string { return s.url }

// Endpoint returns the server's host:port, the form of STORAGE_EMULATOR_HOST.
func (s *Server) Endpoint() string { return strings.TrimPrefix(s.url, "http://") }

// Start starts a fresh fake-gcs-server (memory backend, plain HTTP, 127.0.0.1 only) and
// stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	tier.Heavy(t, "starts fake-gcs-server")
	bin, err := Binary()
	if err != nil {
		if os.Getenv(envAllowSkip) == "1" {
			t.Skipf("gcstest: no GCS emulator (%s=1): %v", envAllowSkip, err)
		}
		t.Fatalf("gcstest: cannot build the GCS emulator: %v\n(set %s=1 to skip GCS tests where the Go module proxy cannot be reached; CI must not)", err, envAllowSkip)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port can be taken between probe and bind
		s, err := start(t, bin)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("gcstest: start %s: %v", bin, lastErr)
	return nil
}

func start(t testing.TB, bin string) (*Server, error) {
	s, err := launch(bin, "127.0.0.1")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			if o := s.out.String(); o != "" {
				t.Logf("fake-gcs-server output:\n%s", o)
			}
		}
	})
	return s, nil
}

// Launch starts a fake-gcs-server listening on host (an address of this machine, e.g. a
// bridge address that pods can reach) outside any test; the caller stops it with Stop.
func Launch(host string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := launch(bin, host)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// Stop stops the server.
func (s *Server) Stop() {
	if s.stop != nil {
		s.stop()
	}
}

// Output returns what the server printed.
func (s *Server) Output() string { return s.out.String() }

func launch(bin, host string) (*Server, error) {
	port, err := freePort(host)
	if err != nil {
		return nil, err
	}
	hostPort := net.JoinHostPort(host, strconv.Itoa(port))
	base := "http://" + hostPort
	out := &syncBuffer{}
	cmd := exec.Command(bin,
		"-scheme", "http",
		"-backend", "memory",
		"-host", host,
		"-port", strconv.Itoa(port),
		"-public-host", hostPort, // XML API reads (GET /bucket/object) match on this host
		"-external-url", base, // resumable uploads' Location header
		"-log-level", "warn",
	)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = os.Environ()
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("fake-gcs-server exited before answering (%v):\n%s", err, out.String())
		default:
		}
		resp, err := client.Get(base + "/storage/v1/b")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("fake-gcs-server did not answer on %s within 30s (last: %v):\n%s", base, err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &Server{url: base, cmd: cmd, out: out, stop: stop}, nil
}

// CreateBucket creates bucket name on the server.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	if err := s.MakeBucket(name); err != nil {
		t.Fatalf("gcstest: %v", err)
	}
}

// MakeBucket creates bucket name on the server, outside any test.
func (s *Server) MakeBucket(name string) error {
	body, _ := json.Marshal(map[string]string{"name": name})
	resp, err := http.Post(s.url+"/storage/v1/b?project=kinetic-test", "application/json", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("create bucket %s: %s: %s", name, resp.Status, msg)
	}
	return nil
}

// NewBucket creates a bucket with a fresh random name on the server and returns the name.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "kinetic-test-" + hex.EncodeToString(b[:])
	s.CreateBucket(t, name)
	return name
}

func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary returns the path of the fake-gcs-server binary, building it into the tools
// cache on first use (within 15 minutes).
func Binary() (string, error) {
	buildOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		buildPath, buildErr = binary(ctx)
	})
	return buildPath, buildErr
}

// BuildBinary is Binary bounded by ctx alone: the build step before the tests
// (kubetest.BuildTools), which on a loaded machine may take longer than a test would
// wait.
func BuildBinary(ctx context.Context) (string, error) {
	return binary(ctx)
}

// CacheDir returns the directory the pinned version is built into.
func CacheDir() (string, error) {
	return toolcache.Dir("fake-gcs-server-" + Version)
}

func binary(ctx context.Context) (string, error) {
	if p := os.Getenv(envBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", envBinary, err)
		}
		return p, nil
	}
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bin", "fake-gcs-server")
	goBin, err := exec.LookPath("go")
	if err != nil && !toolcache.Executable(bin) {
		return "", fmt.Errorf("building %s@%s needs the go command: %w", Module, Version, err)
	}
	err = toolcache.Fill(ctx, dir, func() bool { return toolcache.Executable(bin) }, func(ctx context.Context, tmp string) error {
		toolcache.Logf("gcstest: building %s@%s into %s", Module, Version, dir)
		// Built inside this module, from the version its go.mod pins, with the settings
		// of the build that runs it (make exports one set): the Google Cloud, gRPC and
		// OpenTelemetry packages it shares with the product are compiled once for both.
		// (`go install module@version` built them again with the release's own go.sum:
		// minutes of a fresh machine's CPU.)
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", filepath.Join(tmp, "bin", "fake-gcs-server"), Module)
		cmd.Dir = srcroot.MustDir()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build %s (%s): %w\n%s", Module, Version, err, bytes.TrimSpace(out))
		}
		toolcache.Logf("gcstest: go build %s (%s): %s", Module, Version, toolcache.CPU(cmd.ProcessState))
		return nil
	})
	if err != nil {
		return "", err
	}
	return bin, nil
}

// syncBuffer collects the server's output for failure messages, bounded.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 1<<20 {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
