// Command dashbench measures `kinetic dashboard` on a file:// store of many jobs: the
// time to the first byte and to the whole jobs page (server-rendered HTML, 50 rows of
// -n jobs), the JSON endpoint the page polls (and its 304 answer), and, with chromium
// installed, the time until a headless browser shows the rendered table. The physical
// floor, measured in the same run, is reading every job's handle.json and status.json
// straight from the disk, which one listing of the store must do at least.
//
//	go run ./bench/dashbench [-n 10000] [-runs 5]
//
// The jobs are written the way the engine and the local backend write them (handle,
// status, envelope), final, so the listing does not depend on live processes.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/chromedp/chromedp"

	_ "github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/dashboard"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/storefill"
)

func main() {
	n := flag.Int("n", 10000, "jobs in the store")
	runs := flag.Int("runs", 5, "measurements of each kind")
	flag.Parse()
	if err := run(*n, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "dashbench:", err)
		os.Exit(1)
	}
}

func run(n, runs int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dashbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	os.Setenv("KINETIC_HOME", filepath.Join(dir, "data"))
	url := "file://" + filepath.Join(dir, "store")
	t0 := time.Now()
	if err := fill(ctx, url, n); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %d jobs in %s\n", n, time.Since(t0).Round(time.Millisecond))

	env := map[string]string{"KINETIC_STORE": url, "KINETIC_BACKEND": "local", "KINETIC_HOME": filepath.Join(dir, "data")}
	e, err := engine.New(config.Options{Getenv: func(k string) string { return env[k] }, ProfilesFile: filepath.Join(dir, "profiles.json")}, engine.WithUnwritten(batch.Unwritten{}))
	if err != nil {
		return err
	}
	defer e.Close()

	var floor, ttfbCold, totalCold, ttfbWarm, totalWarm, apiFresh, api304, browser []time.Duration
	for i := 0; i < runs; i++ {
		floor = append(floor, readAll(filepath.Join(dir, "store", "jobs")))
		// A new server for each measurement of a cold page: its first request makes
		// the listing.
		base, tok, stop, err := serve(ctx, e, url)
		if err != nil {
			return err
		}
		if d, ok := rendered(base, tok); ok {
			browser = append(browser, d)
		}
		stop()
		base, tok, stop, err = serve(ctx, e, url)
		if err != nil {
			return err
		}
		a, b, size, err := timedGet(base+"/jobs", tok, "")
		if err != nil {
			return err
		}
		ttfbCold, totalCold = append(ttfbCold, a), append(totalCold, b)
		if i == 0 {
			fmt.Fprintf(os.Stderr, "jobs page: %d bytes\n", size)
		}
		a, b, _, _ = timedGet(base+"/jobs?page=37", tok, "")
		ttfbWarm, totalWarm = append(ttfbWarm, a), append(totalWarm, b)
		_, b, _, _ = timedGet(base+"/api/jobs", tok, "")
		apiFresh = append(apiFresh, b)
		etag := etagOf(base+"/api/jobs", tok)
		_, b, _, _ = timedGet(base+"/api/jobs", tok, etag)
		api304 = append(api304, b)
		stop()
	}
	fmt.Printf("| measurement (%d jobs in a file:// store) | median | min | max |\n|---|---|---|---|\n", n)
	row := func(what string, ds []time.Duration) {
		if len(ds) == 0 {
			return
		}
		sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
		fmt.Printf("| %s | %s | %s | %s |\n", what, ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)-1]))
	}
	row("floor: read every handle.json and status.json from the disk", floor)
	row("jobs page, first request (one store listing): time to first byte", ttfbCold)
	row("jobs page, first request: whole page", totalCold)
	row("jobs page 37, listing reused: whole page", totalWarm)
	row("/api/jobs (rows and rendered rows), listing reused", apiFresh)
	row("/api/jobs with a matching ETag (304)", api304)
	row("headless Chromium: navigate to the table drawn (new server: cold listing)", browser)
	return nil
}

// serve starts a dashboard over e on a free port of 127.0.0.1.
func serve(ctx context.Context, e *engine.Engine, url string) (base, tok string, stop func(), err error) {
	tok, _ = dashboard.NewToken()
	srv, err := dashboard.New(e, dashboard.Options{Token: tok, Store: url, Backend: "local", Fresh: time.Minute})
	if err != nil {
		return "", "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	go srv.Serve(sctx, ln)
	return "http://" + ln.Addr().String(), tok, cancel, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// fill writes n final jobs as the engine and the local backend do.
func fill(ctx context.Context, url string, n int) error {
	st, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = storefill.Jobs(ctx, st, n)
	return err
}

// readAll reads every job's handle.json and status.json: the floor of one listing.
func readAll(dir string) time.Duration {
	t := time.Now()
	ents, _ := os.ReadDir(dir)
	for _, d := range ents {
		os.ReadFile(filepath.Join(dir, d.Name(), "handle.json"))
		os.ReadFile(filepath.Join(dir, d.Name(), "status.json"))
	}
	return time.Since(t)
}

func timedGet(url, tok, etag string) (ttfb, total time.Duration, size int64, err error) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	start := time.Now()
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotFirstResponseByte: func() { ttfb = time.Since(start) }}))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	size, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 && resp.StatusCode != 304 {
		return 0, 0, 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return ttfb, time.Since(start), size, nil
}

func etagOf(url, tok string) string {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	resp.Body.Close()
	return resp.Header.Get("ETag")
}

// rendered opens the dashboard on a fresh server in headless Chromium and returns the
// time from navigation to the table's rows in the DOM; false without chromium.
func rendered(base, tok string) (time.Duration, bool) {
	exe, err := exec.LookPath("chromium")
	if err != nil {
		return 0, false
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox)...)
	defer cancel()
	ctx, cancel2 := chromedp.NewContext(actx)
	defer cancel2()
	ctx, cancel3 := context.WithTimeout(ctx, time.Minute)
	defer cancel3()
	if err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil { // the browser's own start is not the page's
		return 0, false
	}
	t := time.Now()
	if err := chromedp.Run(ctx, chromedp.Navigate(base+"/jobs?token="+tok), chromedp.WaitVisible(`#rows tr[data-id]`)); err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 0, false
	}
	return time.Since(t), true
}
