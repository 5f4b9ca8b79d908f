package gke

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
	"github.com/kinetic-run/kinetic/infra/lws"
)

// AnnotationGSA is the annotation that binds a Kubernetes service account to a Google
// one (Workload Identity).
const AnnotationGSA = "iam.gke.io/gcp-service-account"

// KubeFunc is the client configuration of a running cluster's API server: id names
// the cluster, rec is what GetCluster has just returned for it.
type KubeFunc func(ctx context.Context, id gkeconn.Cluster, rec *containerpb.Cluster) (*rest.Config, error)

// KubeVia connects through conn: the cluster's endpoint and CA from rec, requests
// authorised by Application Default Credentials (what `gcloud container clusters
// get-credentials` sets up, without touching the kubeconfig). rec is cached as conn's
// entry for the cluster, so the first job after `up` makes no GKE API call, and a
// re-created cluster's new CA replaces a stale one.
func KubeVia(conn *gkeconn.Connector) KubeFunc {
	return func(ctx context.Context, id gkeconn.Cluster, rec *containerpb.Cluster) (*rest.Config, error) {
		return conn.RESTConfigFrom(ctx, id, rec)
	}
}

// connCluster is the cluster as gkeconn names it.
func (c *Config) connCluster() gkeconn.Cluster {
	return gkeconn.Cluster{Project: c.Project, Zone: c.Zone, Name: c.Cluster}
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
		if cur.GetEndpoint() == "" {
			fmt.Fprintf(pr.w, "    GKE reports no endpoint for cluster %s: skipped\n", cfg.Cluster)
			return nil
		}
		cs, err := clientset(ctx, cfg, cur)
		if err != nil {
			return err
		}
		return ensureKSA(ctx, cs, cfg)
	}
	if cl == nil {
		return Step{What: what, Action: ActCreate, apply: apply}, nil
	}
	cs, err := clientset(ctx, cfg, cl)
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

func clientset(ctx context.Context, cfg *Config, cl *containerpb.Cluster) (kubernetes.Interface, error) {
	rc, err := cfg.Kube(ctx, cfg.connCluster(), cl)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}

// lwsStep plans LeaderWorkerSet (multi-host jobs run on it): installed when missing,
// upgraded when kinetic installed an older release or another controller image is
// wanted, left alone when someone else installed it. cl is nil when the cluster is not
// running yet.
func (c *Clients) lwsStep(ctx context.Context, cfg *Config, cl *containerpb.Cluster) (Step, error) {
	what := "LeaderWorkerSet " + lws.Version + " in cluster " + cfg.Cluster
	apply := func(ctx context.Context, pr *progress) error {
		cur, err := c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: cfg.clusterName()})
		if err != nil {
			return err
		}
		if cur.GetEndpoint() == "" {
			fmt.Fprintf(pr.w, "    GKE reports no endpoint for cluster %s: skipped\n", cfg.Cluster)
			return nil
		}
		rc, err := cfg.Kube(ctx, cfg.connCluster(), cur)
		if err != nil {
			return err
		}
		st, err := lws.Read(ctx, rc)
		if err != nil {
			return err
		}
		if a, _ := st.Plan(cfg.LWSImage); a == ActOK {
			return nil
		}
		return lws.Install(ctx, rc, cfg.LWSImage, 5*time.Minute, pr.w)
	}
	if cl == nil {
		img := cfg.LWSImage
		if img == "" {
			img = lws.DefaultImage
		}
		return Step{What: what, Action: ActCreate, Detail: "controller " + img, apply: apply}, nil
	}
	rc, err := cfg.Kube(ctx, cfg.connCluster(), cl)
	if err != nil {
		return Step{}, err
	}
	st, err := lws.Read(ctx, rc)
	if err != nil {
		return Step{}, fmt.Errorf("cluster %s: %w", cfg.Cluster, err)
	}
	a, detail := st.Plan(cfg.LWSImage)
	s := Step{What: what, Action: a, Detail: detail}
	if a != ActOK {
		s.apply = apply
	}
	return s, nil
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
