package gke

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"

	"cloud.google.com/go/container/apiv1/containerpb"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
)

// AnnotationGSA is the annotation that binds a Kubernetes service account to a Google
// one (Workload Identity).
const AnnotationGSA = "iam.gke.io/gcp-service-account"

// KubeFunc connects to a running cluster's API server.
type KubeFunc func(ctx context.Context, cl *containerpb.Cluster) (kubernetes.Interface, error)

// KubeWithADC connects with the cluster's endpoint and CA and an access token from
// Application Default Credentials (what `gcloud container clusters get-credentials`
// sets up, without touching the kubeconfig).
func KubeWithADC(ctx context.Context, cl *containerpb.Cluster) (kubernetes.Interface, error) {
	ca, err := base64.StdEncoding.DecodeString(cl.GetMasterAuth().GetClusterCaCertificate())
	if err != nil {
		return nil, fmt.Errorf("cluster CA certificate: %w", err)
	}
	ts, err := google.DefaultTokenSource(ctx, gkeconn.Scope)
	if err != nil {
		return nil, credErr("Kubernetes", err)
	}
	if _, err := ts.Token(); err != nil {
		return nil, credErr("Kubernetes", err)
	}
	// The token is refreshed as it expires (a long up outlives one), as gkeconn does.
	return kubernetes.NewForConfig(&rest.Config{Host: "https://" + cl.GetEndpoint(),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca}, UserAgent: "kinetic",
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return &oauth2.Transport{Source: ts, Base: rt} }})
}

// kubeStep plans the namespace and the Kubernetes service account of job pods, annotated
// with the Google service account (Workload Identity). cl is nil when the cluster is not
// running yet: then the step connects once it is.
func (c *Clients) kubeStep(ctx context.Context, cfg *Config, cl *containerpb.Cluster) (Step, error) {
	what := fmt.Sprintf("Kubernetes service account %s/%s (%s=%s)", cfg.Namespace, KubeServiceAccount, AnnotationGSA, cfg.AccountEmail())
	apply := func(ctx context.Context, pr *progress) error {
		cur, err := c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: cfg.clusterName()})
		if err != nil {
			return err
		}
		cs, err := cfg.Kube(ctx, cur)
		if err != nil {
			return err
		}
		return ensureKSA(ctx, cs, cfg)
	}
	if cl == nil {
		return Step{What: what, Action: ActCreate, apply: apply}, nil
	}
	cs, err := cfg.Kube(ctx, cl)
	if err != nil {
		return Step{}, err
	}
	sa, err := cs.CoreV1().ServiceAccounts(cfg.Namespace).Get(ctx, KubeServiceAccount, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return Step{What: what, Action: ActCreate, apply: apply}, nil
	case err != nil:
		return Step{}, fmt.Errorf("read service account %s/%s in cluster %s: %w", cfg.Namespace, KubeServiceAccount, cfg.Cluster, err)
	case sa.Annotations[AnnotationGSA] != cfg.AccountEmail():
		return Step{What: what, Action: ActUpdate, apply: apply}, nil
	}
	return Step{What: what, Action: ActOK}, nil
}

func ensureKSA(ctx context.Context, cs kubernetes.Interface, cfg *Config) error {
	lbl := map[string]string{"app.kubernetes.io/managed-by": "kinetic"}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, cfg.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace, Labels: lbl}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	} else if err != nil {
		return err
	}
	sas := cs.CoreV1().ServiceAccounts(cfg.Namespace)
	sa, err := sas.Get(ctx, KubeServiceAccount, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: KubeServiceAccount, Labels: lbl,
			Annotations: map[string]string{AnnotationGSA: cfg.AccountEmail()}}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if sa.Annotations == nil {
		sa.Annotations = map[string]string{}
	}
	sa.Annotations[AnnotationGSA] = cfg.AccountEmail()
	_, err = sas.Update(ctx, sa, metav1.UpdateOptions{})
	return err
}
