package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kinetic-run/kinetic/data"
)

// TestFuseDriverCheck: a cluster without the Cloud Storage FUSE CSI driver refuses fused
// Data, naming the Data of the job at hand each time; once the driver is turned on, a
// long-lived engine lets jobs through after fuseRecheck without a restart, and a driver
// found is not looked up again.
func TestFuseDriverCheck(t *testing.T) {
	ctx := context.Background()
	b := testBackend(t, Options{})
	cs := b.cs.(*fake.Clientset)
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	b.now = func() time.Time { return clock }
	gets := func() int {
		n := 0
		for _, a := range cs.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "csidrivers" {
				n++
			}
		}
		return n
	}
	err := b.checkFuseDriver(ctx, "gs://b/first/")
	if err == nil || !strings.Contains(err.Error(), `Data("gs://b/first/", fuse=True)`) || !strings.Contains(err.Error(), "GcsFuseCsiDriver=ENABLED") {
		t.Fatalf("without the driver: %v", err)
	}
	err = b.checkFuseDriver(ctx, "gs://b/second/")
	if err == nil || !strings.Contains(err.Error(), `Data("gs://b/second/", fuse=True)`) {
		t.Fatalf("the second job's refusal names %v", err)
	}
	if gets() != 1 {
		t.Errorf("%d lookups within a minute, want 1", gets())
	}
	driver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: data.FuseDriver}}
	if _, err := cs.StorageV1().CSIDrivers().Create(ctx, driver, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.checkFuseDriver(ctx, "gs://b/third/"); err == nil {
		t.Errorf("the refusal was not remembered for a while")
	}
	clock = clock.Add(fuseRecheck)
	if err := b.checkFuseDriver(ctx, "gs://b/third/"); err != nil {
		t.Fatalf("the driver turned on: %v", err)
	}
	clock = clock.Add(time.Hour)
	if err := b.checkFuseDriver(ctx, "gs://b/fourth/"); err != nil || gets() != 2 {
		t.Errorf("a driver found: %v after %d lookups, want 2", err, gets())
	}
}
