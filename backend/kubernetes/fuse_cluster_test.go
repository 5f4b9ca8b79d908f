package kubernetes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/data"
)

// TestFuseOnTheCluster: Data("gs://…", fuse=True) on a cluster without the Cloud Storage
// FUSE CSI driver is refused at submission with the fix, and nothing of the job is left;
// on a cluster that has the driver (here: its CSIDriver object alone, registered by the
// test — the node has no driver, so the pod is not run) the Job the apiserver accepted
// mounts the data with it. The real driver is not exercised (docs/status.md).
func TestFuseOnTheCluster(t *testing.T) {
	shared(t)
	_, st := newBackend(t, nil)
	cs, err := cluster.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	script := `
import kinetic
@kinetic.run(accelerator="cpu")
def f(d):
    return sorted(__import__("os").listdir(d))
try:
    h = f.run_async(kinetic.Data("gs://kinetic-fuse-test/datasets/imagenet/", fuse=True))
    print("SUBMITTED", h.job_id)
except kinetic.KineticError as e:
    print("REFUSED", e)
`
	out, errOut, err := python(t, st, nil, script)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "REFUSED") || !strings.Contains(out, "no Cloud Storage FUSE CSI driver") || !strings.Contains(out, "GcsFuseCsiDriver=ENABLED") {
		t.Fatalf("without the driver: %s\n%s", out, errOut)
	}
	if dirs, _ := st.ListDirs(ctx, "jobs/"); len(dirs) != 0 {
		t.Errorf("a refused job left %v in the store", dirs)
	}

	driver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: data.FuseDriver}, Spec: storagev1.CSIDriverSpec{
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}}}
	if _, err := cs.StorageV1().CSIDrivers().Create(ctx, driver, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	defer cs.StorageV1().CSIDrivers().Delete(ctx, data.FuseDriver, metav1.DeleteOptions{})
	out, errOut, err = python(t, st, nil, script)
	if err != nil || !strings.Contains(out, "SUBMITTED ") {
		t.Fatalf("with the driver: %v\n%s\n%s", err, out, errOut)
	}
	var id string
	fmt.Sscanf(out[strings.Index(out, "SUBMITTED "):], "SUBMITTED %s", &id)
	j, err := cs.BatchV1().Jobs("default").Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bg := metav1.DeletePropagationBackground // its pod too (it waits for a driver the node lacks)
	defer cs.BatchV1().Jobs("default").Delete(ctx, id, metav1.DeleteOptions{PropagationPolicy: &bg})
	pod := j.Spec.Template
	if pod.Annotations[data.FusePodAnnotation] != "true" {
		t.Errorf("pod annotations %v, want %s", pod.Annotations, data.FusePodAnnotation)
	}
	var found bool
	for _, v := range pod.Spec.Volumes {
		if v.CSI != nil && v.CSI.Driver == data.FuseDriver && v.CSI.VolumeAttributes["bucketName"] == "kinetic-fuse-test" &&
			strings.Contains(v.CSI.VolumeAttributes["mountOptions"], "only-dir=datasets/imagenet") && v.CSI.ReadOnly != nil && *v.CSI.ReadOnly {
			found = true
		}
	}
	if !found {
		t.Errorf("no read-only FUSE volume of the bucket's prefix in %+v", pod.Spec.Volumes)
	}
	if cmd := strings.Join(pod.Spec.Containers[0].Command, " "); !strings.Contains(cmd, `--fuse-paths {"0":"/kinetic/fuse/0"}`) {
		t.Errorf("runner command %s", cmd)
	}
}
