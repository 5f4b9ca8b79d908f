package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestHostsOfAMultiHostJob: the leader (host 0) writes the job's envelope; another host
// writes its own envelope (success or failure; the exception only on failure) and its
// output under jobs/ID/hosts/N/.
func TestHostsOfAMultiHostJob(t *testing.T) {
	ctx := context.Background()
	url := "file://" + t.TempDir()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cases := []struct {
		name, host, script string
		wantMain, wantHost bool
	}{
		{"leader succeeds", "0", "echo from-the-leader", true, false},
		{"worker succeeds", "1", "echo from-worker-1", false, true},
		{"worker fails", "2", "echo from-worker-2; exit 3", false, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "job-hosts000000000000000" + string(rune('a'+i))
			spec := &job.Spec{Version: job.SpecVersion, Kind: job.KindCommand, Command: []string{"sh", "-c", c.script}}
			if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
				t.Fatal(err)
			}
			env, err := Run(ctx, Options{StoreURL: url, JobID: id, Workspace: t.TempDir(), Host: c.host})
			if err != nil {
				t.Fatal(err)
			}
			if env.Host != c.host {
				t.Errorf("envelope host %q, want %q", env.Host, c.host)
			}
			if ok, _ := st.Exists(ctx, store.EnvelopeKey(id)); ok != c.wantMain {
				t.Errorf("result.json written: %v, want %v", ok, c.wantMain)
			}
			if ok, _ := st.Exists(ctx, store.HostEnvelopeKey(id, c.host)); ok != c.wantHost {
				t.Errorf("hosts/%s/result.json written: %v, want %v", c.host, ok, c.wantHost)
			}
			prefix := store.LogsPrefix(id)
			if c.host != "0" {
				prefix = store.HostLogsPrefix(id, c.host)
			}
			objs, _ := st.List(ctx, prefix)
			var logs strings.Builder
			for _, o := range objs {
				b, _ := st.Get(ctx, o.Key)
				logs.Write(b)
			}
			if !strings.Contains(logs.String(), "from-") {
				t.Errorf("output under %s: %q", prefix, logs.String())
			}
		})
	}
	if _, err := Run(ctx, Options{StoreURL: url, JobID: "job-x", Workspace: t.TempDir(), Host: "../1"}); err == nil {
		t.Error("a host index that is not a number was accepted")
	}
}
