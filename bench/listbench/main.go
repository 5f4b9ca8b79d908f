// Command listbench measures listing a store of many finished jobs: engine.List (what
// list_jobs(), `kinetic jobs list` and the dashboard call) with and without the listing
// index (docs/store.md), and `kinetic jobs list` through the binary, on a file:// store
// and on the GCS emulator. The physical floor, measured in the same run, is listing the
// jobs/ prefix and reading every job's handle.json and status.json straight from the store,
// which a listing without an index must do at least.
//
//	go run ./bench/listbench [-n 10000] [-runs 3] [-bin bin/kinetic] [-gcs]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	_ "github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
	"github.com/kinetic-run/kinetic/testkit/storefill"
)

func main() {
	n := flag.Int("n", 10000, "jobs in the store")
	runs := flag.Int("runs", 3, "measurements of each kind")
	bin := flag.String("bin", "", "a kinetic binary to time `jobs list` with (optional)")
	gcs := flag.Bool("gcs", false, "also measure on the GCS emulator (fake-gcs-server from the tools cache)")
	flag.Parse()
	if err := run(*n, *runs, *bin, *gcs); err != nil {
		fmt.Fprintln(os.Stderr, "listbench:", err)
		os.Exit(1)
	}
}

func run(n, runs int, bin string, gcs bool) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "listbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	urls := []string{"file://" + filepath.Join(dir, "store")}
	if gcs {
		srv, err := gcstest.Launch("127.0.0.1")
		if err != nil {
			return err
		}
		defer srv.Stop()
		if err := srv.MakeBucket("listbench"); err != nil {
			return err
		}
		urls = append(urls, "gs://listbench?endpoint="+srv.URL())
	}
	fmt.Printf("| %d final jobs | store | median | min | max |\n|---|---|---|---|---|\n", n)
	for _, url := range urls {
		kind := strings.SplitN(url, ":", 2)[0]
		st, err := store.Open(ctx, url)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if _, err := storefill.Jobs(ctx, st, n); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: wrote %d jobs in %s (%.2f ms per object)\n", kind, n, time.Since(t0).Round(time.Millisecond), float64(time.Since(t0).Microseconds())/1000/float64(3*n))
		env := map[string]string{"KINETIC_STORE": url, "KINETIC_BACKEND": "local", "KINETIC_HOME": filepath.Join(dir, "home")}
		e, err := engine.New(config.Options{Getenv: func(k string) string { return env[k] }, ProfilesFile: filepath.Join(dir, "profiles.json")}, engine.WithUnwritten(batch.Unwritten{}))
		if err != nil {
			return err
		}
		var floor, cold, warm, cli []time.Duration
		for i := 0; i < runs; i++ {
			floor = append(floor, readAll(ctx, st))
			if err := st.Delete(ctx, store.ListIndexKey); err != nil && !store.IsNotFound(err) {
				return err
			}
			d, rows, err := timed(func() (int, error) { l, err := e.List(ctx, url); return len(l), err })
			if err != nil || rows != n {
				return fmt.Errorf("list: %d rows, %v", rows, err)
			}
			cold = append(cold, d)
			d, rows, err = timed(func() (int, error) { l, err := e.List(ctx, url); return len(l), err })
			if err != nil || rows != n {
				return fmt.Errorf("list: %d rows, %v", rows, err)
			}
			warm = append(warm, d)
			if bin != "" {
				t := time.Now()
				cmd := exec.Command(bin, "jobs", "list", "--all", "--json")
				cmd.Env = append(os.Environ(), "KINETIC_STORE="+url, "KINETIC_BACKEND=local", "KINETIC_HOME="+env["KINETIC_HOME"], "KINETIC_PROFILES_FILE="+filepath.Join(dir, "profiles.json"))
				out, err := cmd.Output()
				if err != nil {
					return fmt.Errorf("kinetic jobs list: %v", err)
				}
				cli = append(cli, time.Since(t))
				if c := strings.Count(string(out), `"job_id"`); c != n {
					return fmt.Errorf("kinetic jobs list --json: %d rows, want %d", c, n)
				}
			}
		}
		row := func(what string, ds []time.Duration) {
			if len(ds) == 0 {
				return
			}
			sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
			fmt.Printf("| %s | %s | %s | %s | %s |\n", what, kind, ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)-1]))
		}
		// A batch of n inputs beside the n jobs: batch status reads the manifest and its
		// children.
		gid, err := storefill.Batch(ctx, st, n)
		if err != nil {
			return err
		}
		var bstat, bcli []time.Duration
		for i := 0; i < runs; i++ {
			d, rows, err := timed(func() (int, error) {
				v, err := batch.Read(ctx, e, gid, url, true)
				if err != nil {
					return 0, err
				}
				return len(v.Statuses), nil
			})
			if err != nil || rows != n {
				return fmt.Errorf("batch read: %d children, %v", rows, err)
			}
			bstat = append(bstat, d)
			if bin != "" {
				t := time.Now()
				cmd := exec.Command(bin, "batch", "status", gid, "--json")
				cmd.Env = append(os.Environ(), "KINETIC_STORE="+url, "KINETIC_BACKEND=local", "KINETIC_HOME="+env["KINETIC_HOME"], "KINETIC_PROFILES_FILE="+filepath.Join(dir, "profiles.json"))
				if out, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("kinetic batch status: %v\n%s", err, out)
				}
				bcli = append(bcli, time.Since(t))
			}
		}
		row("floor: list jobs/ and read every handle.json and status.json (16 at a time)", floor)
		row("engine.List, no index (the first listing writes it)", cold)
		row("engine.List, index present", warm)
		row("`kinetic jobs list --all --json` (a new process), index present", cli)
		row(fmt.Sprintf("batch.Read of a %d-input batch, every child's status", n), bstat)
		row("`kinetic batch status G --json` (a new process)", bcli)
		e.Close()
		st.Close()
	}
	return nil
}

func timed(f func() (int, error)) (time.Duration, int, error) {
	t := time.Now()
	n, err := f()
	return time.Since(t), n, err
}

// readAll lists jobs/ and reads every job's handle.json and status.json, 16 at a time:
// the floor of one listing without an index.
func readAll(ctx context.Context, st *store.Store) time.Duration {
	t := time.Now()
	ids, _ := st.ListDirs(ctx, "jobs/")
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, id := range ids {
		g.Go(func() error {
			st.Get(gctx, store.HandleKey(id))
			st.Get(gctx, store.StatusKey(id))
			return nil
		})
	}
	g.Wait()
	return time.Since(t)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
