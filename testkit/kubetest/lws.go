package kubetest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// LWSVersion is the pinned LeaderWorkerSet release (module sigs.k8s.io/lws in the
// tools module ./tools, so the product never depends on it).
const LWSVersion = "v0.7.0"

// LWS webhook address: the controller serves its webhooks here, and the apiserver (on
// this machine) calls them by URL.
const lwsWebhookAddr = "127.0.0.1:9443"

var lwsResource = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

// LWSBinary returns the LeaderWorkerSet controller binary, built with Kubernetes into
// the tools directory (Binaries) if it is missing.
func LWSBinary(ctx context.Context, log func(string, ...any)) (string, error) {
	dir, err := Binaries(ctx, log)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "lws-controller"), nil
}

// lwsModuleDir is sigs.k8s.io/lws in the module cache (its CRD and webhook manifests).
func lwsModuleDir(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/lws")
	cmd.Dir = toolsModuleDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go list sigs.k8s.io/lws: %w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("go list sigs.k8s.io/lws: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// StartLWS installs LeaderWorkerSet on the cluster: its CRD from the module cache, its
// controller as a process (leader election and internal cert management off), its
// webhooks served on 127.0.0.1:9443 with a CA and serving certificate made here and
// registered by URL. It returns once a LeaderWorkerSet passes admission (dry run).
// Stop stops the controller with the rest of the cluster.
func (c *Cluster) StartLWS(ctx context.Context) error {
	start := time.Now()
	bin, err := LWSBinary(ctx, c.log)
	if err != nil {
		return err
	}
	mod, err := lwsModuleDir(ctx)
	if err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	// The CRD is applied server-side through the dynamic client, as `kinetic up` does
	// (infra/lws): the test cluster builds no kubectl, which would add its own packages
	// (kustomize, cli-runtime) to a fresh machine's Kubernetes build.
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crdPath := filepath.Join(mod, "config", "crd", "bases", "leaderworkerset.x-k8s.io_leaderworkersets.yaml")
	if err := applyFile(ctx, dyn.Resource(crds), crdPath); err != nil {
		return fmt.Errorf("kubetest: LeaderWorkerSet CRD: %w", err)
	}
	// Polled: the CRD has no conditions until the apiserver has looked at it.
	err = c.waitFor(ctx, nil, 60*time.Second, func() error {
		u, err := dyn.Resource(crds).Get(ctx, "leaderworkersets.leaderworkerset.x-k8s.io", metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cond := range conds {
			if m, ok := cond.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		return errors.New("the CRD is not Established yet")
	})
	if err != nil {
		return fmt.Errorf("kubetest: LeaderWorkerSet CRD: %w", err)
	}

	dir := c.path("lws")
	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	caPEM, err := writeServingCert(certDir)
	if err != nil {
		return fmt.Errorf("kubetest: LeaderWorkerSet certificates: %w", err)
	}
	host, port, _ := net.SplitHostPort(lwsWebhookAddr)
	cfg := fmt.Sprintf(`apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: %s
  port: %s
  certDir: %s
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:18081
`, host, port, certDir)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	p, err := c.run("lws-controller", bin, "--config", cfgPath, "--kubeconfig", c.Kubeconfig)
	if err != nil {
		return err
	}
	if err := c.registerLWSWebhooks(ctx, mod, caPEM); err != nil {
		return fmt.Errorf("kubetest: LeaderWorkerSet webhooks: %w", err)
	}
	// Ready when the apiserver admits a LeaderWorkerSet through the webhooks.
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": "kubetest-probe", "namespace": "default"},
		"spec": map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(1), "workerTemplate": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "none"}}}}}},
	}}
	err = c.waitFor(ctx, p, 90*time.Second, func() error {
		_, err := dyn.Resource(lwsResource).Namespace("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	if err != nil {
		return fmt.Errorf("kubetest: LeaderWorkerSet controller: %w", err)
	}
	c.log("kubetest: LeaderWorkerSet %s up (%s)", LWSVersion, time.Since(start).Round(time.Millisecond))
	return nil
}

// registerLWSWebhooks registers LeaderWorkerSet's webhook configurations (from its
// config/webhook/manifests.yaml) pointing at lwsWebhookAddr by URL. The pod webhooks
// see only pods of a LeaderWorkerSet, so the cluster's other pods never depend on the
// controller.
func (c *Cluster) registerLWSWebhooks(ctx context.Context, mod string, caPEM []byte) error {
	raw, err := os.ReadFile(filepath.Join(mod, "config", "webhook", "manifests.yaml"))
	if err != nil {
		return err
	}
	cs, err := c.Client()
	if err != nil {
		return err
	}
	lwsPods := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "leaderworkerset.sigs.k8s.io/name", Operator: metav1.LabelSelectorOpExists}}}
	fix := func(cc *admissionv1.WebhookClientConfig, rules []admissionv1.RuleWithOperations) (*metav1.LabelSelector, error) {
		if cc.Service == nil || cc.Service.Path == nil {
			return nil, errors.New("a webhook without a service path")
		}
		u := "https://" + lwsWebhookAddr + *cc.Service.Path
		cc.URL, cc.Service, cc.CABundle = &u, nil, caPEM
		for _, r := range rules {
			for _, res := range r.Resources {
				if res == "pods" {
					return lwsPods, nil
				}
			}
		}
		return nil, nil
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(doc) == 0 {
			continue
		}
		switch (&unstructured.Unstructured{Object: doc}).GetKind() {
		case "MutatingWebhookConfiguration":
			var m admissionv1.MutatingWebhookConfiguration
			if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(doc, &m); err != nil {
				return err
			}
			m.Name = "kinetic-test-lws-mutating"
			for i := range m.Webhooks {
				w := &m.Webhooks[i]
				if w.ObjectSelector, err = fix(&w.ClientConfig, w.Rules); err != nil {
					return err
				}
			}
			cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, m.Name, metav1.DeleteOptions{})
			if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &m, metav1.CreateOptions{}); err != nil {
				return err
			}
		case "ValidatingWebhookConfiguration":
			var v admissionv1.ValidatingWebhookConfiguration
			if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(doc, &v); err != nil {
				return err
			}
			v.Name = "kinetic-test-lws-validating"
			for i := range v.Webhooks {
				w := &v.Webhooks[i]
				if w.ObjectSelector, err = fix(&w.ClientConfig, w.Rules); err != nil {
					return err
				}
			}
			cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, v.Name, metav1.DeleteOptions{})
			if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &v, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
	}
}

// writeServingCert makes a CA and a serving certificate for 127.0.0.1 signed by it,
// writes tls.crt and tls.key (controller-runtime's names) into dir, and returns the CA
// in PEM for the webhook configurations' caBundle.
func writeServingCert(dir string) ([]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kinetic-test-lws-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	// Checked here, so a mistake shows as a clear error rather than a TLS failure in
	// the apiserver's log.
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// applyFile applies every object of the YAML file at path server-side through ri (a
// cluster-scoped resource), as field manager "kubetest".
func applyFile(ctx context.Context, ri dynamic.ResourceInterface, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 1<<20)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if _, err := ri.Apply(ctx, u.GetName(), &u, metav1.ApplyOptions{FieldManager: "kubetest", Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
}
