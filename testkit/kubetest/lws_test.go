package kubetest

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// TestServingCert: the webhook certificate verifies for 127.0.0.1 against the CA that
// goes into the webhook configurations' caBundle.
func TestServingCert(t *testing.T) {
	dir := t.TempDir()
	caPEM, err := writeServingCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("caBundle is not PEM")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(raw)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate does not verify for 127.0.0.1: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "tls.key")); fi == nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("tls.key mode %v", fi)
	}
}
