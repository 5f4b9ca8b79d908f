package runner

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// waitHostsNotice is how long the leader waits for the other hosts before it says so in
// the job's log (most multi-host programs end together, and then it says nothing).
const waitHostsNotice = 3 * time.Second

// waitHosts holds the leader of a multi-host job, once its own call has succeeded, until
// every other host has ended (written its envelope, jobs/ID/hosts/N/result.json). The
// job's value is the leader's, but the job ends when all its hosts have: a host that
// started after the leader finished (nothing in a program without collectives makes
// them start together), or that still writes its part, is not cut off by a result() that
// cleans up, and is not skipped as if the job were over; a host that fails after the
// leader's call still fails the job. It returns errJobEnded when another host failed or
// the job was judged meanwhile (the verdict is the backend's, written elsewhere), and an
// error in phase call when ctx ends (the pod was deleted).
func waitHosts(ctx context.Context, st *store.Store, o Options, out io.Writer) error {
	start := time.Now()
	ended := map[string]bool{}
	said := false
	delay := 100 * time.Millisecond
	for {
		failed, err := hostsEnded(ctx, st, o.JobID, ended)
		if err == nil && failed != "" {
			fmt.Fprintf(out, "kinetic: host %s failed; the job fails with it (host 0's value is not the job's result)\n", failed)
			return errJobEnded
		}
		if err == nil && len(ended) >= o.Hosts-1 {
			if said {
				fmt.Fprintf(out, "kinetic: every host has ended (host 0 waited %s for the others)\n", time.Since(start).Round(100*time.Millisecond))
			}
			return nil
		}
		if s := jobview.FinalStatus(ctx, st, o.JobID); s != nil {
			fmt.Fprintf(out, "kinetic: job %s is %s while host 0 waited for the other hosts (%s)\n", o.JobID, s.State, s.Reason)
			return errJobEnded
		}
		if !said && time.Since(start) >= waitHostsNotice {
			fmt.Fprintf(out, "kinetic: host 0 has returned; the job ends when every host has: waiting for host(s) %s\n", strings.Join(waiting(o.Hosts, ended), ", "))
			said = true
		}
		select {
		case <-ctx.Done():
			return inPhase(job.PhaseCall, stopped(ctx))
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

// hostsEnded adds to ended the non-leader hosts whose successful envelope is in the store
// and returns the first host whose envelope is a failure ("" if none). A store error is
// returned for the caller to look again.
func hostsEnded(ctx context.Context, st *store.Store, id string, ended map[string]bool) (failed string, err error) {
	objs, err := st.List(ctx, store.HostsPrefix(id))
	if err != nil {
		return "", err
	}
	for _, obj := range objs {
		host, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, store.HostsPrefix(id)), "/result.json")
		if !ok || strings.Contains(host, "/") || host == "0" || ended[host] {
			continue
		}
		raw, err := st.Get(ctx, obj.Key)
		if err != nil {
			return "", err
		}
		env, err := job.DecodeEnvelope(raw)
		if err != nil || !env.Success {
			return host, nil
		}
		ended[host] = true
	}
	return "", nil
}

// waiting lists the hosts 1..hosts-1 not in ended.
func waiting(hosts int, ended map[string]bool) []string {
	var out []string
	for i := 1; i < hosts; i++ {
		if h := strconv.Itoa(i); !ended[h] {
			out = append(out, h)
		}
	}
	return out
}
