// Package s3test starts an S3 emulator (github.com/johannesboyne/gofakes3, in memory, in
// the test's own process) for the store's s3:// conformance run and for jobs whose
// store is s3://. It listens on an address the caller picks: 127.0.0.1 for the store's
// tests, the test cluster's bridge address for pods.
package s3test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	_ "github.com/kinetic-run/kinetic/store/s3" // s3://, for the stores on this emulator
)

// Region is what the emulator's URLs name; the emulator accepts any.
const Region = "us-east-1"

// AccessKey and SecretKey are the emulator's credentials. gofakes3 does not check
// signatures, but the AWS SDK signs every request, so a client must have some.
const (
	AccessKey = "kinetic-test"
	SecretKey = "kinetic-test-secret"
)

// Server is a running emulator.
type Server struct {
	backend *s3mem.Backend
	srv     *http.Server
	addr    string
	n       atomic.Int64
}

// Start starts an emulator on host (any free port) and stops it when t ends.
func Start(t testing.TB, host string) *Server {
	t.Helper()
	be := s3mem.New()
	faker := gofakes3.New(be, gofakes3.WithIntegrityCheck(true))
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("s3test: listen on %s: %v", host, err)
	}
	s := &Server{backend: be, srv: &http.Server{Handler: faker.Server(), ReadHeaderTimeout: 10 * time.Second}, addr: l.Addr().String()}
	go s.srv.Serve(l)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// Endpoint is the emulator's base URL, http://host:port.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// NewBucket makes a bucket with a fresh name.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("kn-%d-%d", time.Now().UnixNano()%1e9, s.n.Add(1))
	if err := s.backend.CreateBucket(name); err != nil {
		t.Fatalf("s3test: create bucket %s: %v", name, err)
	}
	return name
}

// URL is the store URL of bucket (with an optional prefix path) on this emulator: its
// endpoint, region and path-style addressing as s3blob's parameters.
func (s *Server) URL(bucket, prefix string) string {
	q := url.Values{"endpoint": {s.Endpoint()}, "region": {Region}, "use_path_style": {"true"}}
	u := "s3://" + bucket
	if prefix != "" {
		u += "/" + prefix
	}
	return u + "?" + q.Encode()
}

// CredentialsFile writes an AWS shared credentials file (the format a store secret's
// `credentials` key holds) into dir and returns its path.
func CredentialsFile(dir string) (string, error) {
	p := filepath.Join(dir, "credentials")
	return p, os.WriteFile(p, []byte(Credentials()), 0o600)
}

// Credentials is the emulator's credentials in the AWS shared credentials file format.
func Credentials() string {
	return fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", AccessKey, SecretKey)
}

// Env is the environment that gives a process the emulator's credentials.
func Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + AccessKey, "AWS_SECRET_ACCESS_KEY=" + SecretKey, "AWS_REGION=" + Region}
}
