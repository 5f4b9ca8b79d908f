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
		b := &listBench{ctx: context.Background(), n: n, runs: runs, bin: bin, dir: dir, url: url, kind: strings.SplitN(url, ":", 2)[0]}
		if err := b.measure(); err != nil {
			return err
		}
	}
	return nil
}

// listBench measures one store.
type listBench struct {
	ctx       context.Context
	n, runs   int
	bin, dir  string
	url, kind string
	st        *store.Store
	e         *engine.Engine
	home      string

	floor, cold, warm, cli, bstat, bcli []time.Duration
}

// measure fills the store, measures listing its jobs and reading a batch, and prints
// the rows.
func (b *listBench) measure() (err error) {
	if b.st, err = store.Open(b.ctx, b.url); err != nil {
		return err
	}
	t0 := time.Now()
	if _, err := storefill.Jobs(b.ctx, b.st, b.n); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s: wrote %d jobs in %s (%.2f ms per object)\n", b.kind, b.n, time.Since(t0).Round(time.Millisecond), float64(time.Since(t0).Microseconds())/1000/float64(3*b.n))
	b.home = filepath.Join(b.dir, "home")
	env := map[string]string{"KINETIC_STORE": b.url, "KINETIC_BACKEND": "local", "KINETIC_HOME": b.home}
	if b.e, err = engine.New(config.Options{Getenv: func(k string) string { return env[k] }, ProfilesFile: filepath.Join(b.dir, "profiles.json")}, engine.WithUnwritten(batch.Unwritten{})); err != nil {
		return err
	}
	for i := 0; i < b.runs; i++ {
		if err := b.listOnce(); err != nil {
			return err
		}
	}
	// A batch of n inputs beside the n jobs: batch status reads the manifest and its
	// children.
	gid, err := storefill.Batch(b.ctx, b.st, b.n)
	if err != nil {
		return err
	}
	for i := 0; i < b.runs; i++ {
		if err := b.batchOnce(gid); err != nil {
			return err
		}
	}
	b.print()
	b.e.Close()
	b.st.Close()
	return nil
}

func (b *listBench) list() (int, error) {
	l, err := b.e.List(b.ctx, b.url)
	return len(l), err
}

// listOnce measures the floor, a listing without the index and one with it, and
// `kinetic jobs list` (with -bin).
func (b *listBench) listOnce() error {
	b.floor = append(b.floor, readAll(b.ctx, b.st))
	if err := b.st.Delete(b.ctx, store.ListIndexKey); err != nil && !store.IsNotFound(err) {
		return err
	}
	d, rows, err := timed(b.list)
	if err != nil || rows != b.n {
		return fmt.Errorf("list: %d rows, %v", rows, err)
	}
	b.cold = append(b.cold, d)
	d, rows, err = timed(b.list)
	if err != nil || rows != b.n {
		return fmt.Errorf("list: %d rows, %v", rows, err)
	}
	b.warm = append(b.warm, d)
	if b.bin == "" {
		return nil
	}
	t := time.Now()
	out, err := b.command("jobs", "list", "--all", "--json").Output()
	if err != nil {
		return fmt.Errorf("kinetic jobs list: %v", err)
	}
	b.cli = append(b.cli, time.Since(t))
	if c := strings.Count(string(out), `"job_id"`); c != b.n {
		return fmt.Errorf("kinetic jobs list --json: %d rows, want %d", c, b.n)
	}
	return nil
}

// batchOnce measures batch.Read of batch gid, and `kinetic batch status` (with -bin).
func (b *listBench) batchOnce(gid string) error {
	d, rows, err := timed(func() (int, error) {
		v, err := batch.Read(b.ctx, b.e, gid, b.url, true)
		if err != nil {
			return 0, err
		}
		return len(v.Statuses), nil
	})
	if err != nil || rows != b.n {
		return fmt.Errorf("batch read: %d children, %v", rows, err)
	}
	b.bstat = append(b.bstat, d)
	if b.bin == "" {
		return nil
	}
	t := time.Now()
	if out, err := b.command("batch", "status", gid, "--json").CombinedOutput(); err != nil {
		return fmt.Errorf("kinetic batch status: %v\n%s", err, out)
	}
	b.bcli = append(b.bcli, time.Since(t))
	return nil
}

// command is the kinetic binary -bin on this store.
func (b *listBench) command(args ...string) *exec.Cmd {
	cmd := exec.Command(b.bin, args...)
	cmd.Env = append(os.Environ(), "KINETIC_STORE="+b.url, "KINETIC_BACKEND=local", "KINETIC_HOME="+b.home, "KINETIC_PROFILES_FILE="+filepath.Join(b.dir, "profiles.json"))
	return cmd
}

// print prints a row of each measure taken: median, min, max.
func (b *listBench) print() {
	row := func(what string, ds []time.Duration) {
		if len(ds) == 0 {
			return
		}
		sort.Slice(ds, func(a, c int) bool { return ds[a] < ds[c] })
		fmt.Printf("| %s | %s | %s | %s | %s |\n", what, b.kind, ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)-1]))
	}
	row("floor: list jobs/ and read every handle.json and status.json (16 at a time)", b.floor)
	row("engine.List, no index (the first listing writes it)", b.cold)
	row("engine.List, index present", b.warm)
	row("`kinetic jobs list --all --json` (a new process), index present", b.cli)
	row(fmt.Sprintf("batch.Read of a %d-input batch, every child's status", b.n), b.bstat)
	row("`kinetic batch status G --json` (a new process)", b.bcli)
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
