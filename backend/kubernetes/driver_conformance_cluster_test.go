package kubernetes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch/driver/drivertest"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestDriverConformance: the Kubernetes backend passes the batch driver's suite on the
// real test cluster (a batch is one Indexed Job, Modes.Unit; a retry a Job of its own).
func TestDriverConformance(t *testing.T) {
	shared(t)
	needCluster(t)
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) (backend.Backend, *store.Store) {
			b, st := newBackend(t, nil)
			return b, st
		},
		Observe: func(h *job.Handle, st *store.Store, b backend.Backend) drivertest.Job {
			return &engine.Job{Handle: h, Store: st, Backend: b}
		},
		KillMember: func(t *testing.T, b backend.Backend, st *store.Store, h *job.Handle) {
			cs, err := cluster.Client()
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			sel := fmt.Sprintf("batch.kubernetes.io/job-name=%s,%s=%s", h.K8sName, batchv1.JobCompletionIndexAnnotation, h.GroupIndex)
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: sel})
				if err == nil && len(pods.Items) > 0 {
					zero := int64(0)
					if err := cs.CoreV1().Pods("default").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
						t.Fatal(err)
					}
					return
				}
			}
			t.Fatalf("no pod for member %s of %s", h.GroupIndex, h.K8sName)
		},
		Deadline: 180 * time.Second,
	})
}
