package kubernetes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/kubetest"
	"github.com/kinetic-run/kinetic/testkit/s3test"
)

// TestS3StoreOnTheCluster is an EKS user's path on the real node with an s3:// store (an
// S3 emulator on the bridge address the pods reach): the pods' credentials come only
// from the store secret (a `credentials` file, AWS_SHARED_CREDENTIALS_FILE); `kinetic up
// --backend k8s --store s3://…` checks the store from a pod; a Python job gets a local
// directory as Data through the store, and its value and KINETIC_OUTPUT_DIR (under the
// store) come back.
func TestS3StoreOnTheCluster(t *testing.T) {
	alone(t) // it sets this process's AWS credentials, which parallel tests must not see
	c := needCluster(t)
	ctx := context.Background()
	for _, kv := range s3test.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	srv := s3test.Start(t, kubetest.HostIP)
	bucket := srv.NewBucket(t)
	url := srv.URL(bucket, "team-s3")
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { st.Close() })

	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("kn-s3-%d", time.Now().UnixNano()%1_000_000_000)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-creds", Namespace: ns},
		StringData: map[string]string{"credentials": s3test.Credentials()}}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env := []string{"KINETIC_NAMESPACE=" + ns, "KINETIC_STORE_SECRET=s3-creds"}

	// up checks that a pod, with the secret's credentials alone, reads and writes the store.
	out, errOut, err := kinetic(t, st, env, "up", "--backend", "k8s", "--namespace", ns, "--store", url, "-y")
	if err != nil || !strings.Contains(errOut, "read and write from a pod") {
		t.Fatalf("up --store s3://: %v\n%s\n%s", err, out, errOut)
	}

	out, errOut, err = python(t, st, env, `
import os, tempfile, kinetic

d = tempfile.mkdtemp()
with open(os.path.join(d, "words.txt"), "w") as f:
    f.write("alpha beta gamma")

@kinetic.run(accelerator="cpu")
def count(data):
    with open(os.path.join(data, "words.txt")) as f:
        n = len(f.read().split())
    return n, os.environ["KINETIC_OUTPUT_DIR"]

n, out = count(kinetic.Data(d))
print("WORDS", n)
print("OUTPUT", out)
`)
	if err != nil {
		t.Fatalf("job on an s3:// store: %v\n%s\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "WORDS 3") {
		t.Errorf("Data did not reach the pod through s3://:\n%s\n%s", out, errOut)
	}
	if !strings.Contains(out, "OUTPUT s3://"+bucket+"/team-s3/outputs/job-") {
		t.Errorf("KINETIC_OUTPUT_DIR is not under the s3:// store:\n%s", out)
	}
	// The data went up into the bucket, under the store's prefix.
	keys, err := st.List(ctx, "data/")
	if err != nil || len(keys) == 0 {
		t.Errorf("no data/ objects in the s3:// store: %v %v", keys, err)
	}
}
