// Package gke_test is GKE from nothing, as a user meets it, through the built binary:
// Google's APIs are the testkit/gketest fakes (with Service Usage), and the cluster
// GKE reports is the real single-node test cluster (testkit/kubetest), reached the way
// a laptop without gcloud or a kubeconfig reaches GKE: endpoint and CA from GetCluster,
// a token from user ADC (an authorized_user file, its token endpoint a local fake
// handing out a token the test API server accepts), and a registry that takes only
// Artifact Registry's token exchange. Needs root; KINETIC_SKIP_CLUSTER=1 skips it.
package gke_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
	"github.com/kinetic-run/kinetic/infra/lws"
	"github.com/kinetic-run/kinetic/testkit/adctest"
	"github.com/kinetic-run/kinetic/testkit/gketest"
	"github.com/kinetic-run/kinetic/testkit/kubetest"
	"github.com/kinetic-run/kinetic/testkit/srcroot"
	"github.com/kinetic-run/kinetic/testkit/testbin"
)

// LWSImage is the LeaderWorkerSet controller, built by the harness (the tools cache)
// and pushed to its registry: the test node reaches no public registry.
const LWSImage = kubetest.RegistryURL + "/lws/lws:" + lws.Version

// TestGKEFromZero: `kinetic up --project P -y` on a new project (APIs enabled,
// LeaderWorkerSet installed into the real cluster, a profile named after the cluster)
// → `kinetic run m.py::add 1 2` prints 3 → `kinetic pool add --accelerator gpu-l4
// --min-nodes 1` (GKE's nodes: kwok nodes with GKE's labels and GPU capacity) → a GPU
// job's pod is scheduled onto that pool → a backend=pathways job returns its value
// through the LeaderWorkerSet up installed → a second up changes nothing → `kinetic
// down -y` removes it all → a second down removes nothing. No kubectl, no kubeconfig.
func TestGKEFromZero(t *testing.T) {
	if os.Getenv("KINETIC_SKIP_CLUSTER") == "1" {
		t.Skip("KINETIC_SKIP_CLUSTER=1: no real cluster here")
	}
	bin, err := testbin.WithRunners()
	if err != nil {
		t.Fatal(err)
	}
	lwsBin, err := kubetest.LWSBinary(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	// The cluster waits for the machine's cluster lock (another package's cluster may
	// hold it for long): the test's own time starts once it is up.
	c, err := kubetest.Start(context.Background(), kubetest.Options{Log: os.Stderr, Kwok: true, InClusterAPI: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := c.PushPythonImage(ctx); err != nil {
		t.Fatal(err)
	}
	// The release's image runs /manager as a non-root user.
	if err := kubetest.PushFilesAs(ctx, LWSImage, []kubetest.File{{Path: "manager", Source: lwsBin, Mode: 0o755}}, []string{"/manager"}, nil, "65532"); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(c.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}

	// GKE's nodes: a GPU pool's nodes are kwok nodes with GKE's labels, taint and GPU
	// capacity; a TPU pool's "hosts" are the real node, labelled as GKE labels TPU VMs
	// (the jobs ask for CPU: accelerator_resources=false), so its pods really run.
	var poolNodes atomic.Int32
	onPool := func(event, cluster string, np *containerpb.NodePool) {
		if err := poolEvent(ctx, c, event, np); err != nil {
			t.Errorf("node pool %s %s: %v", event, np.GetName(), err)
		}
		if event == "create-pool" {
			poolNodes.Add(1)
		}
	}
	// Google as a user with only `gcloud auth application-default login` meets it:
	// user credentials without a quota project (Service Usage refuses a call naming
	// none), APIs that answer only a while after they are enabled.
	fake := gketest.Start(t, gketest.Options{NewProject: true, APIEndpoint: kubetest.HostIP + ":" + kubetest.APIPort, APICA: ca,
		StorageUpstream: c.GCS.URL(), StorageAddr: kubetest.HostIP + ":0", OnPool: onPool,
		UserADC: true, Propagation: 2 * time.Second})
	// The ADC file: authorized_user, its token endpoint a local one whose access token
	// is one the test API server accepts (a cluster that takes Google's tokens).
	tokens := adctest.Start(t)
	tokens.Token = c.Token
	key := tokens.AuthorizedUser(t, t.TempDir(), "")
	// The registry from here on answers as Artifact Registry does: only to a token
	// exchanged for an access token from the ADC above. The node's containerd pulls
	// without one: it stands in for the nodes' own service account (reader on the
	// repository, which up grants), which the test node does not have.
	c.GuardRegistry(func(next http.Handler) http.Handler {
		return tokens.Registry(next, func(r *http.Request) bool { return strings.HasPrefix(r.UserAgent(), "containerd/") })
	})
	defer c.GuardRegistry(nil)

	home := t.TempDir()
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "m.py"), []byte("def add(a, b):\n    return int(a) + int(b)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HOME=" + home, "PATH=" + pathWithout(t, googleTools...), // no gcloud, no kubectl, no plugin
		"GOOGLE_APPLICATION_CREDENTIALS=" + key,
		"KINETIC_GCP_ENDPOINTS=" + fake.Endpoints.String(),
		// What GKE would give for free: a store and a registry the node reaches.
		"KINETIC_STORE=" + fake.StoreURL("p-kinetic"),
		"KINETIC_IMAGE_REGISTRY=" + kubetest.RegistryURL + "/p/kinetic",
		// Test only: the harness registry's credentials are taken as Artifact Registry's.
		image.TestGoogleRegistryHostsEnv + "=" + kubetest.RegistryURL,
		"KINETIC_LWS_IMAGE=" + LWSImage,
		"KINETIC_BASE_IMAGE_CPU=" + kubetest.PythonImage, "KINETIC_BASE_IMAGE_GPU=" + kubetest.PythonImage, "KINETIC_BASE_IMAGE_TPU=" + kubetest.PythonImage,
		// The test image has cloudpickle; jax and keras are not this test's subject
		// (e2e/frameworks builds the runtime layer from real wheels).
		"KINETIC_RUNTIME_LAYER=none",
		"KINETIC_POD_CPU=10m", "KINETIC_UNSCHEDULABLE_GRACE=60s",
		"KINETIC_WARM_PODS=0", // a pod per job, as this test was written for (warm pods: backend/kubernetes)
		"PYTHONPATH=" + pythonDir(),
	}
	kinetic := func(extra []string, args ...string) (string, string, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir, cmd.Env = work, append(append([]string(nil), env...), extra...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	must := func(extra []string, args ...string) (string, string) {
		t.Helper()
		start := time.Now()
		out, errOut, err := kinetic(extra, args...)
		if err != nil {
			t.Fatalf("kinetic %s: %v\n%s\n%s\nlws: %s", strings.Join(args, " "), err, out, errOut, lwsPods(ctx, c))
		}
		t.Logf("kinetic %s (%.1fs)", strings.Join(args, " "), time.Since(start).Seconds())
		return out, errOut
	}
	if _, err := os.Stat(filepath.Join(home, ".kube")); err == nil {
		t.Fatal("HOME has a kubeconfig")
	}

	// 1. up on a new project.
	_, stderr := must(nil, "up", "--project", "p", "-y")
	for _, w := range []string{"+ enable   APIs container, artifactregistry, iam, iamcredentials, compute, storage",
		"waiting for container.googleapis.com to be ready in project p",
		"✓ create cluster kinetic-cluster", "✓ create LeaderWorkerSet " + lws.Version, "✓ profile kinetic-cluster", "ready in"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("up does not say %q:\n%s", w, stderr)
		}
	}
	for _, a := range gke.RequiredAPIs {
		if !fake.APIEnabled("p", a) {
			t.Errorf("up left %s disabled", a)
		}
	}
	d, err := cs.AppsV1().Deployments(lws.Namespace).Get(ctx, lws.Deployment, metav1.GetOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Image != LWSImage || d.Status.ReadyReplicas < 1 {
		t.Errorf("LeaderWorkerSet controller after up: %v %+v", err, d.Status)
	}
	prof, err := config.LoadProfiles(config.ProfilesPath(func(k string) string { return map[string]string{"HOME": home}[k] }))
	if err != nil {
		t.Fatal(err)
	}
	if p := prof.Profiles["kinetic-cluster"]; prof.Current != "kinetic-cluster" || p["backend"] != "gke" || p["project"] != "p" {
		t.Errorf("profile after up: current %q, %v", prof.Current, prof.Profiles)
	}
	if _, err := os.Stat(filepath.Join(home, ".kube", "config")); err == nil {
		t.Error("up wrote a kubeconfig")
	}
	if tokens.Exchanged() == 0 {
		t.Error("up published the runner image without Artifact Registry's token exchange")
	}

	// up read the cluster, so it cached its endpoint and CA: the cluster's one entry.
	caches, _ := filepath.Glob(filepath.Join(home, ".local", "share", "kinetic", "cache", "gke", "*.json"))
	if len(caches) != 1 || filepath.Base(caches[0]) != "p_"+prof.Profiles["kinetic-cluster"]["zone"]+"_kinetic-cluster.json" {
		t.Fatalf("connection cache after up: %v", caches)
	}
	cache := caches[0]

	// 2. A function on the cluster, from the CLI: a warm submission (the cache up
	// wrote) makes no GKE API call.
	fake.Reset()
	out, stderr := must(nil, "run", "--accelerator", "cpu", "m.py::add", "1", "2")
	if strings.TrimSpace(out) != "3" {
		t.Errorf("kinetic run m.py::add 1 2 printed %q, want 3\n%s", out, stderr)
	}
	if n := fake.Count(getCluster); n != 0 {
		t.Errorf("the first run after up called GetCluster %d times, want 0 (up's cache)", n)
	}

	// The cluster was re-created (a new CA): the cached CA no longer verifies the API
	// server; the run reads the cluster again once, goes on, and caches what GKE says.
	writeCache(t, cache, kubetest.HostIP+":"+kubetest.APIPort, selfSignedCA(t))
	fake.Reset()
	out, stderr = must(nil, "run", "--accelerator", "cpu", "m.py::add", "2", "3")
	if strings.TrimSpace(out) != "5" || fake.Count(getCluster) != 1 || !bytes.Equal(readCache(t, cache).CA, ca) {
		t.Errorf("after a CA change: printed %q, GetCluster %d times (want 1), cache holds the new CA %v\n%s", out, fake.Count(getCluster), bytes.Equal(readCache(t, cache).CA, ca), stderr)
	}
	// A certificate that even GKE's CA does not verify (a proxy answering in the
	// cluster's place): the error names the cluster and the fix, no TLS or URL text.
	clusterPath := "projects/p/locations/" + prof.Profiles["kinetic-cluster"]["zone"] + "/clusters/kinetic-cluster"
	rec := fake.Cluster(clusterPath)
	bad := proto.Clone(rec).(*containerpb.Cluster)
	bad.MasterAuth.ClusterCaCertificate = base64.StdEncoding.EncodeToString(selfSignedCA(t))
	fake.PutCluster(clusterPath, bad)
	writeCache(t, cache, kubetest.HostIP+":"+kubetest.APIPort, selfSignedCA(t))
	_, stderr, err = kinetic(nil, "run", "--accelerator", "cpu", "m.py::add", "2", "3")
	if err == nil || !strings.Contains(stderr, "presents a certificate that the cluster's CA from GKE does not verify") || !strings.Contains(stderr, "kinetic status") {
		t.Errorf("a certificate GKE's CA does not verify: %v\n%s", err, stderr)
	}
	for _, goText := range []string{"x509:", "tls:", `"https://`, "Post ", "Get "} {
		if strings.Contains(stderr, goText) {
			t.Errorf("the certificate error shows %q:\n%s", goText, stderr)
		}
	}
	fake.PutCluster(clusterPath, rec) // GKE's record again; the next run reads it once

	// 2b. doctor on GKE, reached through the GKE API (no kubeconfig): every check
	// passes. With credentials that cannot be read it exits 1 naming them and the fix,
	// in a person's words.
	out, stderr = must(nil, "doctor")
	for _, w := range []string{"✓ cluster reachable", "✓ permissions", "✓ store from a pod", "ready: jobs can run"} {
		if !strings.Contains(out+stderr, w) {
			t.Errorf("doctor on GKE does not say %q:\n%s%s", w, out, stderr)
		}
	}
	if strings.Contains(out+stderr, "✗") {
		t.Errorf("doctor on a working GKE cluster fails a check:\n%s%s", out, stderr)
	}
	badKey := filepath.Join(t.TempDir(), "adc.json")
	os.WriteFile(badKey, []byte("{not json"), 0o600)
	os.Remove(cache) // the connection cache would spare doctor the credentials
	out, stderr, err = kinetic([]string{"GOOGLE_APPLICATION_CREDENTIALS=" + badKey}, "doctor")
	if code := exitCode(err); code != 1 || !strings.Contains(out+stderr, "✗") || !strings.Contains(out+stderr, badKey) || !strings.Contains(out+stderr, "gcloud auth application-default login") {
		t.Errorf("doctor with unreadable credentials: exit %d\n%s%s", code, out, stderr)
	}
	for _, goText := range []string{"invalid character", "context deadline", "rpc error"} {
		if strings.Contains(out+stderr, goText) {
			t.Errorf("doctor with unreadable credentials shows %q:\n%s%s", goText, out, stderr)
		}
	}

	// 3. A GPU pool; 4. a GPU job's pod is scheduled onto it.
	_, stderr = must(nil, "pool", "add", "--accelerator", "gpu-l4", "--min-nodes", "1", "-y")
	if !strings.Contains(stderr, "✓ create node pool gpu-l4") || poolNodes.Load() != 1 {
		t.Errorf("pool add (%d pools made nodes):\n%s", poolNodes.Load(), stderr)
	}
	out, stderr = must(nil, "run", "--async", "--json", "--accelerator", "gpu-l4", "--container-image", kubetest.PythonImage, "--", "true")
	var h struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil || h.JobID == "" {
		t.Fatalf("run --async --json: %q (%v)\n%s", out, err, stderr)
	}
	node := waitScheduled(t, ctx, c, h.JobID)
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || n.Labels["cloud.google.com/gke-nodepool"] != "gpu-l4" || n.Labels[accel.LabelGPUAccelerator] != "nvidia-l4" {
		t.Errorf("GPU job's pod is on node %s (%v), not the gpu-l4 pool's", node, err)
	}
	kinetic(nil, "jobs", "cancel", h.JobID) // kwok may have completed it already

	// 5. A multi-host job through the LeaderWorkerSet up installed: a TPU pool whose
	// hosts are the real node (CPU pods: accelerator_resources=false).
	must(nil, "pool", "add", "--accelerator", "tpu-v6e-8", "-y")
	out, stderr = must([]string{"KINETIC_BACKEND=pathways", "KINETIC_ACCELERATOR_RESOURCES=false"}, "run", "--accelerator", "tpu-v6e-8", "m.py::add", "3", "4")
	if strings.TrimSpace(out) != "7" {
		t.Errorf("pathways job printed %q, want 7\n%s", out, stderr)
	}

	// 6. A second up changes nothing.
	fake.Reset()
	_, stderr = must(nil, "up", "--project", "p", "-y")
	if !strings.Contains(stderr, "no change") || len(fake.Mutations()) != 0 || !strings.Contains(stderr, "= ok       LeaderWorkerSet "+lws.Version) {
		t.Errorf("second up: %d mutations\n%s", len(fake.Mutations()), stderr)
	}

	// For kubectl users: up --write-kubeconfig adds the cluster's context to a
	// kubeconfig that has another one (merged, 0600), changing nothing at Google, and
	// says what kubectl needs (no gke-gcloud-auth-plugin on this PATH).
	kubeconfig := filepath.Join(home, ".kube", "config")
	os.MkdirAll(filepath.Dir(kubeconfig), 0o700)
	if err := os.WriteFile(kubeconfig, []byte(otherKubeconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	fake.Reset()
	_, stderr = must(nil, "up", "--project", "p", "-y", "--write-kubeconfig")
	gctx := "gke_p_" + prof.Profiles["kinetic-cluster"]["zone"] + "_kinetic-cluster"
	for _, w := range []string{"no change", "✓ kubeconfig context " + gctx + " in " + kubeconfig, "kubectl needs gke-gcloud-auth-plugin on PATH"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("up --write-kubeconfig does not say %q:\n%s", w, stderr)
		}
	}
	if len(fake.Mutations()) != 0 {
		t.Errorf("up --write-kubeconfig changed things at Google: %v", fake.Mutations())
	}
	if fi, err := os.Stat(kubeconfig); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v (%v), want 0600", fi.Mode(), err)
	}
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil || kc.CurrentContext != gctx || kc.Contexts["other"] == nil || kc.AuthInfos["other"].Token != "other-token" {
		t.Fatalf("kubeconfig after up --write-kubeconfig: %v %+v", err, kc)
	}
	// kubectl's way in, with a plugin on PATH (a script standing in for Google's,
	// printing the token the test API server accepts): the real cluster's nodes.
	plugins := t.TempDir()
	script := "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"" + c.Token + "\"}}'\n"
	if err := os.WriteFile(filepath.Join(plugins, "gke-gcloud-auth-plugin"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", plugins+string(os.PathListSeparator)+os.Getenv("PATH"))
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if kcs, err := kubernetes.NewForConfig(rc); err != nil {
		t.Error(err)
	} else if nodes, err := kcs.CoreV1().Nodes().Get(ctx, kubetest.NodeName, metav1.GetOptions{}); err != nil {
		t.Errorf("through the written context: %v (%v)", err, nodes.Name)
	}
	// kinetic itself goes on connecting directly: the binary has no plugin on its PATH.
	out, stderr = must(nil, "run", "--accelerator", "cpu", "m.py::add", "5", "6")
	if strings.TrimSpace(out) != "11" {
		t.Errorf("run with kinetic's kubeconfig context and no plugin printed %q, want 11\n%s", out, stderr)
	}
	_, stderr = must(nil, "up", "--project", "p", "-y", "--write-kubeconfig")
	if !strings.Contains(stderr, "= ok       kubeconfig context "+gctx) {
		t.Errorf("second up --write-kubeconfig:\n%s", stderr)
	}

	// 7. down removes it all (the kubeconfig context too, the other one stays); 8. a
	// second down removes nothing.
	_, stderr = must(nil, "down", "-y")
	if !strings.Contains(stderr, "✓ delete cluster kinetic-cluster") || !strings.Contains(stderr, "✓ delete kubeconfig context "+gctx) {
		t.Errorf("down:\n%s", stderr)
	}
	if kc, err := clientcmd.LoadFromFile(kubeconfig); err != nil || kc.Contexts[gctx] != nil || kc.Contexts["other"] == nil {
		t.Errorf("kubeconfig after down: %v %+v", err, kc)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("the connection cache outlived down: %v", err)
	}
	if cnt := fake.Counts(); cnt["clusters"]+cnt["repositories"]+cnt["service_accounts"] != 0 {
		t.Errorf("after down: %v", cnt)
	}
	nodes, _ := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	if len(nodes.Items) != 0 {
		t.Errorf("after down, %d pool nodes are left", len(nodes.Items))
	}
	fake.Reset()
	_, stderr = must(nil, "down", "-y")
	if !strings.Contains(stderr, "nothing to remove") || len(fake.Mutations()) != 0 {
		t.Errorf("second down: %d mutations\n%s", len(fake.Mutations()), stderr)
	}
}

// poolEvent does what GKE's node pools do to the cluster's nodes.
func poolEvent(ctx context.Context, c *kubetest.Cluster, event string, np *containerpb.NodePool) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	switch event {
	case "delete-cluster":
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		if err != nil {
			return err
		}
		for _, n := range nodes.Items {
			if err := cs.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	case "delete-pool":
		return cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "cloud.google.com/gke-nodepool=" + np.GetName() + ",type=kwok"})
	}
	cfg := np.GetConfig()
	labels := map[string]string{"cloud.google.com/gke-nodepool": np.GetName(), "node.kubernetes.io/instance-type": cfg.GetMachineType()}
	for k, v := range cfg.GetLabels() {
		labels[k] = v
	}
	if tpu := np.GetPlacementPolicy().GetTpuTopology(); tpu != "" || strings.HasPrefix(cfg.GetMachineType(), "ct") {
		// GKE labels TPU VMs with their slice type and topology: here the real node.
		sp, err := accel.Parse(labels["kinetic.dev/accelerator"])
		if err != nil {
			return err
		}
		for k, v := range sp.NodeSelector {
			labels[k] = v
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
		_, err = cs.CoreV1().Nodes().Patch(ctx, kubetest.NodeName, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	var capacity map[string]string
	var taints []corev1.Taint
	for _, a := range cfg.GetAccelerators() {
		labels[accel.LabelGPUAccelerator] = a.GetAcceleratorType()
		capacity = map[string]string{"nvidia.com/gpu": fmt.Sprint(a.GetAcceleratorCount())}
		taints = append(taints, corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule})
	}
	for _, tn := range cfg.GetTaints() {
		if !slices.ContainsFunc(taints, func(x corev1.Taint) bool { return x.Key == tn.GetKey() }) {
			taints = append(taints, corev1.Taint{Key: tn.GetKey(), Value: tn.GetValue(), Effect: corev1.TaintEffectNoSchedule})
		}
	}
	count := int(np.GetInitialNodeCount())
	if m := int(np.GetAutoscaling().GetMinNodeCount()); m > count {
		count = m
	}
	for i := range count {
		if err := c.AddFakeNode(ctx, kubetest.FakeNode{Name: fmt.Sprintf("gke-%s-%d", np.GetName(), i), Labels: labels, Capacity: capacity, Taints: taints}); err != nil {
			return err
		}
	}
	return nil
}

// waitScheduled waits until a pod of job id has a node, and returns it.
func waitScheduled(t *testing.T, ctx context.Context, c *kubetest.Cluster, id string) string {
	t.Helper()
	cs, _ := c.Client()
	deadline := time.Now().Add(90 * time.Second)
	for {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "kinetic.dev/job-id=" + id})
		if err == nil {
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" {
					return p.Spec.NodeName
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pod of job %s was scheduled in 90s (%v, %d pods)", id, err, len(pods.Items))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// lwsPods says what the LeaderWorkerSet controller's pods are doing (for failures).
func lwsPods(ctx context.Context, c *kubetest.Cluster) string {
	cs, err := c.Client()
	if err != nil {
		return err.Error()
	}
	pods, err := cs.CoreV1().Pods(lws.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "%s %s node=%s", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Waiting != nil {
				fmt.Fprintf(&b, " waiting %s: %s", s.State.Waiting.Reason, s.State.Waiting.Message)
			}
			if s.LastTerminationState.Terminated != nil {
				fmt.Fprintf(&b, " last exit %d", s.LastTerminationState.Terminated.ExitCode)
			}
		}
		b.WriteString("; ")
	}
	return b.String()
}

func pythonDir() string { return srcroot.Join("python") }

const getCluster = "google.container.v1.ClusterManager/GetCluster"

// googleTools are what a laptop without Google's SDK lacks (this machine has them).
var googleTools = []string{"gcloud", "gsutil", "bq", "kubectl", "gke-gcloud-auth-plugin", "docker-credential-gcloud", "git-credential-gcloud.sh", "anthoscli"}

// pathWithout is a PATH of one directory holding links to everything on the usual
// system PATH but the tools named.
func pathWithout(t *testing.T, tools ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if slices.Contains(tools, e.Name()) {
				continue
			}
			os.Symlink(filepath.Join(d, e.Name()), filepath.Join(dir, e.Name())) // the first wins
		}
	}
	for _, tool := range tools {
		if _, err := os.Lstat(filepath.Join(dir, tool)); err == nil {
			t.Fatalf("%s is on the test's PATH", tool)
		}
	}
	return dir
}

const otherKubeconfig = `apiVersion: v1
kind: Config
current-context: other
clusters: [{name: other, cluster: {server: "https://10.9.9.9"}}]
users: [{name: other, user: {token: other-token}}]
contexts: [{name: other, context: {cluster: other, user: other}}]
`

// selfSignedCA is the PEM of a new self-signed CA certificate: a CA that verifies
// nothing the test cluster presents.
func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "re-created"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// writeCache and readCache are the connection cache's file (gkeconn.Info).
func writeCache(t *testing.T, path, endpoint string, ca []byte) {
	t.Helper()
	b, _ := json.Marshal(gkeconn.Info{Endpoint: endpoint, CA: ca, Fetched: time.Now()})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readCache(t *testing.T, path string) gkeconn.Info {
	t.Helper()
	var in gkeconn.Info
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &in) != nil {
		t.Errorf("connection cache %s: %v", path, err)
	}
	return in
}

// exitCode is the exit status of a finished command's error (0 for nil, -1 when it did
// not run).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
