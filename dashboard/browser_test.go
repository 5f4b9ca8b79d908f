package dashboard

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/tier"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write the browser test's screenshots to docs/img (for the README)")

// chromium finds Debian's headless Chromium. Without it the browser test is skipped,
// except in CI (CI=true), where .ci/run installs it and its absence is a failure.
func chromium(t *testing.T) string {
	tier.Heavy(t, "drives chromium")
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed, and CI must run the browser test: .ci/run installs Debian's chromium package")
	}
	t.Skip("chromium is not installed: `apt-get install chromium` to run the dashboard's browser test")
	return ""
}

// TestBrowser opens the dashboard in headless Chromium, as a person would: the jobs
// table (and a job that appears in it without a reload), a running job whose log grows,
// its Cancel button (dismissed, then confirmed), a failed job's traceback, and a batch's
// chart. It saves screenshots (-update-screenshots: into docs/img for the README).
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	setup(t)
	shots := t.TempDir()
	if *updateScreenshots {
		shots = filepath.Join("..", "docs", "img")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860), chromedp.Flag("hide-scrollbars", true), chromedp.Flag("force-device-scale-factor", "1"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()

	// confirm(): accepted or dismissed as the test says; every dialog is counted.
	var accept atomic.Bool
	var dialogs atomic.Int32
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(accept.Load()))
		}
	})
	shot := func(name string, full bool) {
		t.Helper()
		var b []byte
		var act chromedp.Action = chromedp.CaptureScreenshot(&b)
		if full {
			act = chromedp.FullScreenshot(&b, 100)
		}
		if err := chromedp.Run(ctx, act); err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if len(b) > 300<<10 {
			t.Errorf("screenshot %s is %d KB, over 300 KB", name, len(b)>>10)
		}
	}
	run := func(what string, acts ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, acts...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// The jobs table, reached through the printed URL (the token then lives in a cookie).
	var rows int
	var url, text string
	run("open the jobs page",
		chromedp.Navigate(fx.url("/jobs", true)),
		chromedp.WaitVisible(`#rows tr[data-id]`),
		chromedp.Evaluate(`document.querySelectorAll("#rows tr[data-id]").length`, &rows),
		chromedp.Location(&url),
		chromedp.Text(`#jobs`, &text))
	if rows != PageSize || strings.Contains(url, "token=") {
		t.Errorf("%d rows (want %d), address %s (want the token gone from it)", rows, PageSize, url)
	}
	for _, w := range []string{"explode", "FAILED", "SUCCEEDED", "RUNNING", "train", "squares"[:6]} {
		if !strings.Contains(text, w) {
			t.Errorf("the jobs table does not show %q", w)
		}
	}
	shot("jobs.png", false)

	// A job submitted now appears without a reload.
	j, err := fx.e.Submit(ctx, &engine.SubmitRequest{Kind: job.KindCommand, Command: []string{"true"}, NoWorkdir: true, DisplayName: "appears-live"})
	if err != nil {
		t.Fatal(err)
	}
	run("see a new job appear", chromedp.WaitVisible(`#rows tr[data-id="`+j.Handle.JobID+`"]`))

	// The filter form.
	// Read once the filtered page is the one shown: in a cold CI run at load it once read
	// 50 rows right after the navigation (the page before it, by the count).
	filtered := `location.search.includes("status=FAILED") && document.querySelectorAll("#rows tr[data-id]").length === 3`
	tctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
	chromedp.Run(tctx, chromedp.Navigate(fx.ts.URL+"/jobs?status=FAILED"), chromedp.Poll(filtered, nil))
	tcancel()
	run("filter by status", chromedp.WaitVisible(`#rows tr[data-id]`),
		chromedp.Evaluate(`document.querySelectorAll("#rows tr[data-id]").length`, &rows))
	if rows != 3 {
		t.Errorf("status=FAILED shows %d rows, want 3 (explode, and input 7 twice)", rows)
	}

	// A running job: its log grows on the page.
	var before, after int
	run("open the running job", chromedp.Navigate(fx.ts.URL+"/jobs/"+fx.running),
		chromedp.Poll(`document.getElementById("log").textContent.includes("step ")`, nil, chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.Evaluate(`document.getElementById("log").textContent.length`, &before),
		chromedp.Sleep(1500*time.Millisecond),
		chromedp.Evaluate(`document.getElementById("log").textContent.length`, &after))
	if after <= before {
		t.Errorf("the log did not grow on the page: %d then %d characters", before, after)
	}
	shot("job-running.png", false)

	// Cancel: dismissed first (nothing happens), then confirmed.
	accept.Store(false)
	run("dismiss the cancel", chromedp.Click(`form[action$="/cancel"] button`), chromedp.Sleep(800*time.Millisecond))
	if s, _, _ := mustAttach(t, fx.running).Status(ctx); s != job.Running || dialogs.Load() != 1 {
		t.Fatalf("after a dismissed confirm: %s, %d dialogs; want RUNNING and 1", s, dialogs.Load())
	}
	accept.Store(true)
	var state string
	run("confirm the cancel", chromedp.Click(`form[action$="/cancel"] button`),
		chromedp.WaitVisible(`.notice`),
		chromedp.Poll(`document.querySelector("#state .badge").textContent === "FAILED"`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Text(`#state`, &state))
	if dialogs.Load() != 2 || strings.TrimSpace(state) != "FAILED" {
		t.Errorf("after the confirmed cancel: %d dialogs, state %q", dialogs.Load(), state)
	}
	if s, reason, _ := mustAttach(t, fx.running).Status(ctx); s != job.Failed || !strings.Contains(reason, "cancel") {
		t.Errorf("the store says %s (%s) after the cancel", s, reason)
	}

	// A failed job: its traceback and timeline.
	var tb string
	var segs int
	run("open the failed job", chromedp.Navigate(fx.ts.URL+"/jobs/"+fx.failed), chromedp.WaitVisible(`pre.traceback`),
		chromedp.Text(`pre.traceback`, &tb), chromedp.Evaluate(`document.querySelectorAll("svg.timeline .seg").length`, &segs),
		chromedp.Poll(`document.getElementById("log").textContent.includes("about to fail")`, nil, chromedp.WithPollingTimeout(10*time.Second)))
	if !strings.Contains(tb, "KeyError") || segs < 3 {
		t.Errorf("traceback %q, %d timeline segments (want upload, pending, environment, running)", tb, segs)
	}
	shot("job-failed.png", false)

	// The batch: counts and the Gantt chart.
	var ok, retry, rowsDrawn int
	run("open the batch", chromedp.EmulateViewport(1280, 1060), chromedp.Navigate(fx.ts.URL+"/batches/"+fx.batch), chromedp.WaitVisible(`svg.gantt`),
		chromedp.Evaluate(`document.querySelectorAll("svg.gantt rect.att.ok").length`, &ok),
		chromedp.Evaluate(`document.querySelectorAll("svg.gantt rect.retry").length`, &retry),
		chromedp.Evaluate(`document.querySelectorAll("svg.gantt text.lbl").length`, &rowsDrawn))
	if ok != 49 || retry != 1 || rowsDrawn != 50 {
		t.Errorf("the chart has %d succeeded bars (want 49), %d retried attempts (want 1), %d rows (want 50)", ok, retry, rowsDrawn)
	}
	shot("batch.png", false)
}

func mustAttach(t *testing.T, id string) *engine.Job {
	t.Helper()
	j, err := fx.e.Attach(context.Background(), id, fx.store)
	if err != nil {
		t.Fatal(err)
	}
	return j
}
