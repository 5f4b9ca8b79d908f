package kubernetes_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/store"
)

// TestWarmPodsHeld: what a warm pod holds is shown and can be let go. An idle warm pod
// is listed by `kinetic doctor --json` (what `kinetic status` runs) and on the
// dashboard's cluster page with its kind, what it holds, since when it is idle and when
// it exits; a job that kept a large object in a module global leaves nothing (its pod is
// reused), one that left a System V shared memory segment makes its pod go (over the
// memory bound), so the next job gets a new pod; `kinetic down --backend k8s --preview`
// shows the deletion of the warm pod, `down -y` deletes it, and a second down has nothing
// to remove. Alone: down deletes every warm pod in the namespace.
func TestWarmPodsHeld(t *testing.T) {
	alone(t)
	_, st := newBackend(t, nil)
	cs, err := cluster.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := warmDir(t)
	got, _ := runWarm(t, st, dir, nil, "probe")
	pod, _, _ := strings.Cut(got, " ")
	waitIdle := func(pod string) {
		t.Helper()
		// A `kinetic run` may read the result and exit before it labels the pod idle
		// (a submission then claims it busy: warm.go, endedBusy); the job's status, asked
		// once more, labels it, so what doctor and the dashboard show is settled.
		if p, err := cs.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{}); err == nil && p.Labels[kubernetes.LabelWarmState] != "idle" {
			kinetic(t, st, warmEnv, "jobs", "status", p.Labels[kubernetes.LabelJobID])
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			p, err := cs.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
			if err == nil && p.Labels[kubernetes.LabelWarmState] == "idle" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pod %s is not idle 30 s after its job: %v %v %v; its log:\n%s", pod, p.GetLabels(), p.Status.Phase, err, podLog(t, pod))
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	waitIdle(pod)

	// doctor --json: the pod, structured.
	out, errOut, err := kinetic(t, st, warmEnv, "doctor", "--json")
	var rep infra.Report
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
		t.Fatalf("doctor --json: %v %v\n%s\n%s", err, jerr, out, errOut)
	}
	if err != nil {
		t.Logf("doctor --json exited %v (a check failed; the warm pods are what this test reads)", err)
	}
	var w *infra.WarmPod
	for i := range rep.WarmPods {
		if rep.WarmPods[i].Pod == pod {
			w = &rep.WarmPods[i]
		}
	}
	if w == nil {
		t.Fatalf("doctor --json does not list the warm pod %s:\n%s", pod, out)
	}
	if w.State != "idle" || w.Namespace != "default" || w.Image == "" || !strings.Contains(w.Holds, "cpu 10m") || w.Node == "" ||
		w.IdleSince.IsZero() || w.Until.Sub(w.IdleSince) != 60*time.Second || time.Until(w.Until) <= 0 || w.Job == "" || w.Key == "" {
		t.Errorf("doctor --json lists the warm pod as %+v", *w)
	}
	t.Logf("doctor: %s", w.Describe(time.Now()))

	// The dashboard's cluster page.
	page, shot := dashboardCluster(t, st)
	for _, want := range []string{"Warm pods", pod, ">idle<", "cpu 10m", "ago)", w.Job[len(w.Job)-8:], `title="` + w.Image + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the dashboard's cluster page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}
	if shot != "" {
		t.Logf("screenshot of the cluster page: %s", shot)
	}

	// Memory: a module global goes with the job; a System V segment stays, and the pod
	// with it goes.
	if host, _ := runWarm(t, st, dir, nil, "hog", "300"); host != pod {
		t.Errorf("the job that kept 300 MiB in a module global ran on %s, not on the idle pod %s", host, pod)
	}
	waitIdle(pod)
	if host, _ := runWarm(t, st, dir, nil, "probe"); !strings.HasPrefix(host, pod+" ") {
		t.Errorf("after a job that kept 300 MiB in a module global, the next job ran on %s, not on the warm pod %s (the memory went with the interpreter)", host, pod)
	}
	waitIdle(pod)
	if host, _ := runWarm(t, st, dir, nil, "shm_leak", "320"); host != pod {
		t.Fatalf("shm_leak ran on %s, not on the idle pod %s", host, pod)
	}
	got, _ = runWarm(t, st, dir, nil, "probe")
	next, _, _ := strings.Cut(got, " ")
	if next == pod {
		t.Errorf("the pod %s took another job after one left 320 MiB of shared memory behind; its log:\n%s", pod, podLog(t, pod))
	} else if l := podLog(t, pod); strings.Contains(l, "kinetic: ") && !strings.Contains(l, "MiB more memory than before its first job") {
		t.Errorf("the pod %s went without saying it held too much memory:\n%s", pod, l)
	} else {
		t.Logf("the pod %s after shm_leak: %s", pod, lastLines(l, 3))
	}
	waitIdle(next)

	// down --backend k8s: previewed, applied, then nothing to remove.
	_, errOut, err = kinetic(t, st, warmEnv, "down", "--backend", "k8s", "--preview")
	if err != nil || !strings.Contains(errOut, "- delete   1 warm pod(s) in namespace default (idle: "+next) || !strings.Contains(errOut, "--preview: nothing applied") {
		t.Errorf("down --preview: %v\n%s", err, errOut)
	}
	if _, err := cs.CoreV1().Pods("default").Get(ctx, next, metav1.GetOptions{}); err != nil {
		t.Errorf("the warm pod %s is gone after down --preview: %v", next, err)
	}
	_, errOut, err = kinetic(t, st, warmEnv, "down", "--backend", "k8s", "-y")
	if err != nil || !strings.Contains(errOut, "✓ delete 1 warm pod(s) in namespace default") {
		t.Errorf("down -y: %v\n%s", err, errOut)
	}
	waitPodGone(t, next, 30*time.Second)
	t.Logf("down -y:\n%s", errOut)
	_, errOut, err = kinetic(t, st, warmEnv, "down", "--backend", "k8s", "-y")
	if err != nil || !strings.Contains(errOut, "= ok       warm pods in namespace default (none)") || !strings.Contains(errOut, "no change: nothing to remove") {
		t.Errorf("second down: %v\n%s", err, errOut)
	}
}

// dashboardCluster starts `kinetic dashboard` on the cluster and returns its /cluster
// page, and a screenshot of it in headless Chromium when Chromium is installed (in
// $KINETIC_TEST_SHOTS when set, else the test's directory).
func dashboardCluster(t *testing.T, st *store.Store) (string, string) {
	t.Helper()
	cmd := exec.Command(kineticBin, "dashboard", "--port", "0")
	cmd.Env = append(clusterEnv(t, st), warmEnv...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dashboard: %v\n%s", err, errb.String())
	}
	base, token, ok := strings.Cut(strings.TrimSpace(line), "/?token=")
	if !ok {
		t.Fatalf("dashboard printed %q", line)
	}
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
	exe, err := exec.LookPath("chromium")
	if err != nil {
		return string(b), ""
	}
	dir := os.Getenv("KINETIC_TEST_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860), chromedp.Flag("hide-scrollbars", true), chromedp.Flag("force-device-scale-factor", "1"), chromedp.WSURLReadTimeout(90*time.Second))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	cctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	cctx, cancelT := context.WithTimeout(cctx, 120*time.Second)
	defer cancelT()
	var png []byte
	var text string
	if err := chromedp.Run(cctx, chromedp.Navigate(base+"/?token="+token), chromedp.Navigate(base+"/cluster"),
		chromedp.WaitVisible(`#warm`), chromedp.Text(`#warm`, &text), chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Errorf("open the cluster page in Chromium: %v", err)
		return string(b), ""
	}
	if !strings.Contains(text, "Warm pods") {
		t.Errorf("Chromium shows the warm pods section as %q", text)
	}
	path := filepath.Join(dir, "cluster-warm-pods.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return string(b), path
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
