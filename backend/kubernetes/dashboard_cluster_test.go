package kubernetes_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/testkit/kubetest"
)

// The dashboard's cluster page on a Kubernetes backend, against the real control plane:
// node pools with their catalog accelerators and free devices, as `kinetic dashboard`
// serves them (kwok nodes with GKE's labels and capacity stand in for a GPU pool).
func TestDashboardClusterPage(t *testing.T) {
	alone(t)
	c := needCluster(t)
	ctx := context.Background()
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []kubetest.FakeNode{
		{Name: "dash-l4-a", Labels: map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-nodepool": "dash-l4-pool"},
			Capacity: map[string]string{"nvidia.com/gpu": "4"}, Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
		{Name: "dash-l4-b", Labels: map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-nodepool": "dash-l4-pool"},
			Capacity: map[string]string{"nvidia.com/gpu": "4"}, Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
	} {
		if err := c.AddFakeNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	}
	_, st := newBackend(t, nil)
	cmd := exec.Command(kineticBin, "dashboard", "--port", "0")
	cmd.Env = append(clusterEnv(t, st), "KINETIC_CLUSTER_TYPE=gke", "KINETIC_KUBE_CONTEXT=kinetic-test")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dashboard: %v\n%s", err, errb.String())
	}
	base, token, ok := strings.Cut(strings.TrimSpace(line), "/?token=")
	if !ok {
		t.Fatalf("dashboard printed %q", line)
	}
	get := func() string {
		req, _ := http.NewRequest("GET", base+"/cluster", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("/cluster: %d\n%s", resp.StatusCode, b)
		}
		return string(b)
	}
	deadline := time.Now().Add(60 * time.Second)
	page := get()
	for !strings.Contains(page, "dash-l4-pool") && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		page = get()
	}
	for _, want := range []string{"dash-l4-pool", "gpu-l4", "8 of 8", "dash-l4-a", "nvidia.com/gpu: 0 used of 4"} {
		if !strings.Contains(page, want) {
			t.Errorf("the cluster page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}

	// kinetic accelerators --live: the same facts on the command line.
	live, errOut, err := kinetic(t, st, []string{"KINETIC_CLUSTER_TYPE=gke", "KINETIC_KUBE_CONTEXT=kinetic-test"}, "accelerators", "--live", "--json")
	if err != nil {
		t.Fatalf("accelerators --live: %v\n%s", err, errOut)
	}
	var rows []struct {
		Name        string
		Nodes, Free int
	}
	if err := json.Unmarshal([]byte(live), &rows); err != nil {
		t.Fatalf("accelerators --live --json: %v\n%s", err, live)
	}
	found := false
	for _, r := range rows {
		if r.Name == "gpu-l4" {
			found = r.Nodes == 2 && r.Free == 8
		}
	}
	if !found {
		t.Errorf("accelerators --live: want gpu-l4 on 2 nodes with 8 free devices:\n%s", live)
	}
	table, _, _ := kinetic(t, st, []string{"KINETIC_CLUSTER_TYPE=gke", "KINETIC_KUBE_CONTEXT=kinetic-test"}, "accelerators", "--live")
	t.Logf("kinetic accelerators --live:\n%s", table)
}
