package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"github.com/kinetic-run/kinetic/internal/parallel"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/seconds"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/protocol"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/version"
)

// handler serves one method: it decodes the params and returns the result to send.
type handler func(s *Server, c *call, params json.RawMessage) (any, error)

// handle adapts a typed handler: params decode into a Req (absent params are the zero
// Req), and a nil *Resp is sent as {}.
func handle[Req, Resp any](f func(*Server, *call, *Req) (Resp, error)) handler {
	return func(s *Server, c *call, raw json.RawMessage) (any, error) {
		req := new(Req)
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, req); err != nil {
				return nil, invalidf("bad params: %s", jsonProblem(raw, err))
			}
		}
		res, err := f(s, c, req)
		if err != nil {
			return nil, err
		}
		if v := reflect.ValueOf(res); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
			return protocol.Empty{}, nil
		}
		return res, nil
	}
}

// handlers is the method table: every method of the protocol and its handler.
var handlers = map[string]handler{
	protocol.MethodHello:         handle((*Server).hello),
	protocol.MethodCancelRequest: handle((*Server).cancelRequestMethod),
	protocol.MethodRoot:          handle((*Server).root),
	protocol.MethodConfig:        handle((*Server).config),
	protocol.MethodSubmit:        handle((*Server).submit),
	protocol.MethodCall:          handle((*Server).callJob),
	protocol.MethodAttach:        handle((*Server).attach),
	protocol.MethodStatus:        handle((*Server).status),
	protocol.MethodWait:          handle((*Server).wait),
	protocol.MethodResult:        handle((*Server).result),
	protocol.MethodResultsMany:   handle((*Server).resultsMany),
	protocol.MethodCollected:     handle((*Server).collected),
	protocol.MethodLogs:          handle((*Server).logs),
	protocol.MethodTail:          handle((*Server).tail),
	protocol.MethodCancel:        handle((*Server).cancel),
	protocol.MethodDebugAttach:   handle((*Server).debugAttach),
	protocol.MethodDebugDetach:   handle((*Server).debugDetach),
	protocol.MethodCleanup:       handle((*Server).cleanup),
	protocol.MethodMap:           handle((*Server).mapBatch),
	protocol.MethodBatch:         handle((*Server).batch),
	protocol.MethodBatchWatch:    handle((*Server).batchWatch),
	protocol.MethodBatchCancel:   handle((*Server).batchCancel),
	protocol.MethodBatchCleanup:  handle((*Server).batchCleanup),
	protocol.MethodDataHash:      handle((*Server).dataHash),
	protocol.MethodList:          handle((*Server).list),
}

// job attaches the job r names.
func (s *Server) job(c *call, r *protocol.JobRequest) (*engine.Job, error) {
	st, err := s.storeIn(r.Store, r.Config)
	if err != nil {
		return nil, err
	}
	if dir, missing := store.MissingDir(st); missing && job.ValidName(r.JobID) {
		// Looking for a job must not make a store's directory (a typo would leave one
		// behind): this engine opens stores to submit to, which makes them.
		return nil, fmt.Errorf("no job %s in the store %s (its directory %s does not exist, so it holds no jobs: "+
			"check the store, or use the profile the job was submitted with): %w", r.JobID, st, dir, engine.ErrNotFound)
	}
	return s.eng.Attach(c, r.JobID, st)
}

// storeIn is the store a request means: its own, else the one its configuration values
// resolve to (argument > KINETIC_* > profile, the profile of a cluster they name
// included), else "" (the engine's).
func (s *Server) storeIn(storeURL string, cfg map[string]string) (string, error) {
	if storeURL != "" || len(cfg) == 0 {
		return storeURL, nil
	}
	args := map[config.Key]string{}
	for k, v := range cfg {
		args[config.Key(k)] = v
	}
	return s.eng.StoreIn(args)
}

// withTimeout is ctx limited to secs seconds: none for 0 or less, or above a century
// (seconds.Limit: a huge number is no limit, never an overflow into a past deadline).
func withTimeout(ctx context.Context, secs float64) (context.Context, context.CancelFunc) {
	d, ok := seconds.Limit(secs)
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// pollCtx is ctx carrying a request's poll interval (seconds; the SDK's
// cleanup_poll_interval) for the backend's checks that a stopped job has stopped.
func pollCtx(ctx context.Context, secs float64) context.Context {
	if d, ok := seconds.Limit(secs); ok {
		return backend.WithPollInterval(ctx, d)
	}
	return ctx
}

// notYet is the Timeout of a request with no_wait (Python's timeout=0) whose job is not
// in the state it waits for: what is not the case, and what is left.
func notYet(what, then string) error {
	return errs.Errorf(errs.DeadlineExceeded, "%s (timeout=0: not waited for); %s", what, then)
}

func (s *Server) hello(*call, *protocol.Empty) (*protocol.HelloResponse, error) {
	return &protocol.HelloResponse{Kinetic: version.Version, Protocol: protocol.Version}, nil
}

func (s *Server) cancelRequestMethod(_ *call, r *protocol.CancelRequest) (*protocol.CancelResponse, error) {
	return &protocol.CancelResponse{Cancelled: s.cancelRequest(r.RequestID)}, nil
}

func (s *Server) root(_ *call, r *protocol.RootRequest) (*protocol.RootResponse, error) {
	root, err := s.eng.Root(r.SourceFile, r.Cwd)
	if err != nil {
		return nil, err
	}
	return &protocol.RootResponse{Root: root}, nil
}

func (s *Server) config(*call, *protocol.ConfigRequest) ([]protocol.ConfigEntry, error) {
	return configEntries(s.eng.Config().Entries()), nil
}

func (s *Server) submit(c *call, r *protocol.SubmitRequest) (*protocol.Handle, error) {
	j, err := s.eng.Submit(c, submitRequest(r))
	if err != nil {
		return nil, err
	}
	return handleOf(j.Handle), nil
}

func (s *Server) attach(c *call, r *protocol.JobRequest) (*protocol.Handle, error) {
	j, err := s.job(c, r)
	if err != nil {
		return nil, err
	}
	return handleOf(j.Handle), nil
}

func (s *Server) status(c *call, r *protocol.JobRequest) (*protocol.StatusResponse, error) {
	j, err := s.job(c, r)
	if errors.Is(err, engine.ErrNotFound) {
		return &protocol.StatusResponse{Status: protocol.StateNotFound}, nil
	}
	if err != nil {
		return nil, err
	}
	state, reason, err := j.Status(c)
	if err != nil {
		return nil, err
	}
	if state == job.Succeeded {
		// Collected and being cleaned up: NOT_FOUND already, as after the cleanup.
		if t, err := j.Collected(c); err == nil && t != nil {
			return &protocol.StatusResponse{Status: protocol.StateNotFound}, nil
		}
	}
	return &protocol.StatusResponse{Status: string(state), Reason: reason}, nil
}

// waitFor waits for j as r asks, streaming its logs and state changes as events.
func (s *Server) waitFor(ctx context.Context, c *call, j *engine.Job, r *protocol.WaitRequest) (job.State, string, error) {
	var logsDone chan error
	ended := make(chan struct{})
	if r.StreamLogs {
		logsDone = make(chan error, 1)
		go func() { logsDone <- j.LogsUntil(ctx, logWriter{c}, ended) }()
	}
	var onChange func(job.State)
	if r.StatusEvents {
		onChange = func(st job.State) { c.event(protocol.EventStatus, string(st)) }
	}
	state, reason, err := j.Wait(ctx, onChange)
	close(ended) // the follower reads what is left and stops
	if logsDone != nil {
		<-logsDone
	}
	return state, reason, err
}

func (s *Server) wait(c *call, r *protocol.WaitRequest) (*protocol.StatusResponse, error) {
	j, err := s.job(c, &r.JobRequest)
	if err != nil {
		return nil, err
	}
	if r.NoWait {
		state, reason, err := j.Status(c)
		if err != nil {
			return nil, err
		}
		if !state.Terminal() {
			return nil, notYet("job "+j.Handle.JobID+" is "+strings.ToLower(string(state)), "it keeps running: wait again, or cancel it")
		}
		return &protocol.StatusResponse{Status: string(state), Reason: reason}, nil
	}
	wctx, cancel := withTimeout(c, r.Timeout)
	defer cancel()
	state, reason, err := s.waitFor(wctx, c, j, r)
	if err != nil {
		return nil, timedOut(err, r.Timeout, "job "+j.Handle.JobID+" did not finish", "it keeps running: wait again, or cancel it")
	}
	return &protocol.StatusResponse{Status: string(state), Reason: reason}, nil
}

// callJob submits the job and waits for its result, as submit and then result would.
func (s *Server) callJob(c *call, r *protocol.CallRequest) (*protocol.Result, error) {
	j, err := s.eng.Submit(c, submitRequest(&r.SubmitRequest))
	if err != nil {
		return nil, err
	}
	c.event(protocol.EventSubmitted, handleOf(j.Handle))
	return s.resultOf(c, j, &r.Result)
}

func (s *Server) result(c *call, r *protocol.ResultRequest) (*protocol.Result, error) {
	j, err := s.job(c, &r.JobRequest)
	if err != nil {
		return nil, err
	}
	return s.resultOf(c, j, r)
}

// resultOf waits for job j and reads its result as r asks.
func (s *Server) resultOf(c *call, j *engine.Job, r *protocol.ResultRequest) (*protocol.Result, error) {
	var state job.State
	var reason string
	var err error
	if r.NoWait {
		// Python's timeout=0: the value if the job has ended, else a Timeout at once
		// (concurrent.futures' result(timeout=0)).
		if state, reason, err = j.Status(c); err != nil {
			return nil, err
		}
		if !state.Terminal() {
			return nil, notYet("job "+j.Handle.JobID+" is "+strings.ToLower(string(state))+", not finished",
				"it keeps running: result() again waits for it, cancel() stops it")
		}
		if r.StatusEvents {
			c.event(protocol.EventStatus, string(state))
		}
		if r.StreamLogs && state != job.NotFound {
			j.Logs(c, logWriter{c}, false) // what a wait would have streamed; the result is what matters
		}
	} else {
		wctx, cancel := withTimeout(c, r.Timeout)
		defer cancel()
		s.eng.NoticeWhilePending(wctx, j)
		state, reason, err = s.waitFor(wctx, c, j, &r.WaitRequest)
		if err != nil {
			return nil, timedOut(err, r.Timeout, "job "+j.Handle.JobID+" did not finish", "it keeps running: result() again waits for it, cancel() stops it")
		}
	}
	calltrace.Mark("engine.final.seen", j.Handle.JobID)
	if state == job.Succeeded {
		// Collected by another caller already (and being cleaned up): say who and when,
		// rather than racing the cleanup for the value.
		if t, err := j.Collected(c); err == nil && t != nil {
			return nil, &engine.CleanedUpError{Tombstone: t, What: "result"}
		}
	}
	// The job has ended: its result is read whatever the wait's limit (a read cut short
	// by the wait's deadline was an error for a value that is there).
	res, err := j.ResultOf(c, state, reason, jobview.ValueTo{Dir: r.ValueDir, InlineMax: r.InlineMax})
	if err != nil {
		return nil, err
	}
	return resultOf(res), nil
}

// collected claims the results the client acknowledged it received, and cleans up the
// jobs it claimed once the response is sent (the client holds their values already).
func (s *Server) collected(c *call, r *protocol.CollectedRequest) (*protocol.CollectedResponse, error) {
	resp := &protocol.CollectedResponse{}
	var found []*engine.Job
	for _, f := range batch.Jobs(c, s.eng, r.Store, r.JobIDs) {
		var gone *engine.CleanedUpError
		switch {
		case errors.As(f.Err, &gone):
			resp.Taken = append(resp.Taken, takenBy(gone.Tombstone))
		case f.Err != nil:
			// Removed or damaged meanwhile: nothing of it to claim or clean up.
		default:
			found = append(found, f.Job)
		}
	}
	mine, taken := batch.Collect(c, found, collector(r.Collector))
	calltrace.Mark("engine.collected", "")
	for _, t := range taken {
		resp.Taken = append(resp.Taken, takenBy(t))
	}
	resp.Claimed = len(mine)
	if len(mine) > 0 {
		c.afterReply(func() { cleanupAll(context.WithoutCancel(c), mine) })
	}
	return resp, nil
}

func takenBy(t *job.Tombstone) protocol.TakenByOther {
	return protocol.TakenByOther{JobID: t.JobID, CollectedBy: t.CollectedBy, CollectedAt: t.CleanedAt.Format(time.RFC3339)}
}

// collector is the name recorded for a collection: the client's, else this process's.
func collector(client string) string {
	if client != "" {
		return client
	}
	return engine.ProcessName()
}

// cleanupAll removes the backend resources and store objects of collected jobs, keeping
// their tombstones, warning about failures (the caller has had its reply).
func cleanupAll(ctx context.Context, jobs []*engine.Job) {
	// A batch's derived children logged their envelopes (store.OpenEndsLog): removed
	// from the logs in one write per batch first, not one each below.
	type batchOf struct {
		st  *store.Store
		gid string
	}
	logged := map[batchOf][]int{}
	for _, j := range jobs {
		if gid, i, ok := job.ParseChildID(j.Handle.JobID); ok {
			logged[batchOf{j.Store, gid}] = append(logged[batchOf{j.Store, gid}], i)
		}
	}
	for b, idx := range logged {
		b.st.RemoveLogged(b.gid, idx) // what it could not do, each child's cleanup does
	}
	parallel.ForEach(ctx, len(jobs), 4, func(ctx context.Context, k int) error {
		if err := jobs[k].CleanupCollected(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "kinetic: warning: cleanup of %s failed: %v\n", jobs[k].Handle.JobID, err)
		}
		return nil
	})
}

// resultsMany reads the results of many finished jobs (a batch's results()) in
// parallel, the jobs found as a batch finds them (batch.Jobs: a derived child costs no
// read of its own); it removes nothing (the client acknowledges what it received:
// collected).
func (s *Server) resultsMany(c *call, r *protocol.ResultsManyRequest) ([]protocol.JobResult, error) {
	wctx, cancel := withTimeout(c, r.Timeout)
	defer cancel()
	out := make([]protocol.JobResult, len(r.JobIDs))
	var collected batch.Collections
	found := batch.Jobs(wctx, s.eng, r.Store, r.JobIDs)
	parallel.ForEach(wctx, len(r.JobIDs), 8, func(gctx context.Context, i int) error {
		out[i].JobID = r.JobIDs[i]
		j, err := found[i].Job, found[i].Err
		if err == nil {
			if t := collected.Of(gctx, j); t != nil {
				err = &engine.CleanedUpError{Tombstone: t, What: "result"}
			}
		}
		if err == nil {
			var res *engine.Result
			res, err = j.Result(gctx, jobview.ValueTo{Dir: r.ValueDir, InlineMax: r.InlineMax})
			out[i].Result = resultOf(res)
		}
		if err != nil {
			out[i].Error = toError(err)
		}
		return nil
	})
	for i := range out {
		if out[i].Result == nil && out[i].Error == nil {
			// Not read: the wait's limit passed (or the request was cancelled) before its
			// turn. Said as such, never an empty result the client would take for a failure.
			out[i].JobID = r.JobIDs[i]
			err := wctx.Err()
			if err == nil {
				err = errs.New(errs.Internal, "not read")
			}
			out[i].Error = toError(timedOut(err, r.Timeout, "the result of job "+r.JobIDs[i]+" was not read", "ask again"))
		}
	}
	return out, nil
}

func (s *Server) logs(c *call, r *protocol.LogsRequest) (*protocol.LogsResponse, error) {
	j, err := s.job(c, &r.JobRequest)
	if err != nil {
		return nil, err
	}
	if r.Follow {
		return nil, j.Logs(c, logWriter{c}, true)
	}
	var b strings.Builder
	if err := j.Logs(c, &b, false); err != nil {
		return nil, err
	}
	return &protocol.LogsResponse{Logs: b.String()}, nil
}

func (s *Server) tail(c *call, r *protocol.TailRequest) (*protocol.LogsResponse, error) {
	j, err := s.job(c, &r.JobRequest)
	if err != nil {
		return nil, err
	}
	t, err := j.Tail(c, r.N)
	if err != nil {
		return nil, err
	}
	return &protocol.LogsResponse{Logs: t}, nil
}

func (s *Server) cancel(c *call, r *protocol.JobRequest) (*protocol.StatusResponse, error) {
	j, err := s.job(c, r)
	if err != nil {
		return nil, err
	}
	ctx := pollCtx(c, r.PollInterval)
	if r.NoWait {
		// Python's cleanup_timeout=0: the job is told to stop and the reply does not wait
		// for it to stop (the stop goes on here; the server waits for it before it exits).
		state, reason, err := j.Status(c)
		if err != nil {
			return nil, err
		}
		if !state.Terminal() {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				if err := j.Cancel(context.WithoutCancel(ctx)); err != nil {
					fmt.Fprintf(os.Stderr, "kinetic: warning: cancel of %s: %v\n", j.Handle.JobID, errs.Message(err))
				}
			}()
		}
		return &protocol.StatusResponse{Status: string(state), Reason: reason}, nil
	}
	cctx, cancel := withTimeout(ctx, r.Timeout)
	defer cancel()
	if err := j.Cancel(cctx); err != nil {
		return nil, timedOut(err, r.Timeout, "job "+j.Handle.JobID+" did not stop", "it was told to: check its status, or cancel it again")
	}
	state, reason, err := j.Status(c)
	if err != nil {
		return nil, err
	}
	return &protocol.StatusResponse{Status: string(state), Reason: reason}, nil
}

func (s *Server) debugAttach(c *call, r *protocol.DebugAttachRequest) (*protocol.DebugSession, error) {
	j, err := s.job(c, &r.JobRequest)
	if err != nil {
		return nil, err
	}
	if !r.NoWait {
		return s.openDebug(c, j, r.LocalPort, r.Timeout)
	}
	// A look, not a wait: debugpy answers at once when it listens.
	sess, err := s.openDebug(c, j, r.LocalPort, noWaitDebug)
	if errs.CodeOf(err) == errs.DeadlineExceeded && c.Err() == nil {
		return nil, notYet("job "+j.Handle.JobID+"'s debugger is not listening yet", "attach again, with a timeout to wait for it")
	}
	return sess, err
}

func (s *Server) debugDetach(_ *call, r *protocol.DebugDetachRequest) (*protocol.DebugDetachResponse, error) {
	return &protocol.DebugDetachResponse{Closed: s.closeDebug(r.SessionID)}, nil
}

func (s *Server) cleanup(c *call, r *protocol.CleanupRequest) (*protocol.Empty, error) {
	j, err := s.job(c, &r.JobRequest)
	if errors.Is(err, engine.ErrNotFound) {
		var gone *engine.CleanedUpError
		if errors.As(err, &gone) && r.GCS {
			return nil, s.eng.RemoveTombstone(c, r.JobID, r.Store) // what a collection left
		}
		return nil, nil // already gone: cleanup is idempotent
	}
	if err != nil {
		return nil, err
	}
	if r.NoWait && (r.K8s || r.GCS) {
		// Python's cleanup_timeout=0: a job that has ended is removed; one still running
		// is not stopped and waited for.
		state, _, err := j.Status(c)
		if err != nil {
			return nil, err
		}
		if !state.Terminal() {
			return nil, notYet("job "+j.Handle.JobID+" is "+strings.ToLower(string(state))+", and a cleanup stops it first",
				"nothing was removed: cancel() it, or give cleanup a cleanup_timeout to wait for it to stop")
		}
		return nil, j.Cleanup(c, r.K8s, r.GCS)
	}
	cctx, cancel := withTimeout(pollCtx(c, r.PollInterval), r.Timeout)
	defer cancel()
	return nil, timedOut(j.Cleanup(cctx, r.K8s, r.GCS), r.Timeout, "the cleanup of job "+j.Handle.JobID+" did not finish", "run it again")
}

// mapBatch starts a batch. Its submission runs on the server's own context, not the
// request's: it goes on after the reply, and after the client leaves (Serve waits).
func (s *Server) mapBatch(c *call, r *protocol.MapRequest) (*protocol.MapResponse, error) {
	req := mapRequest(r)
	req.OnRecorded = func(gid, st string, running bool) {
		c.event(protocol.EventRecorded, &protocol.MapResponse{GroupID: gid, Store: st, Running: running})
	}
	b, err := batch.Map(s.base, s.eng, req)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.batches[b.GroupID()] = b
	s.mu.Unlock()
	return &protocol.MapResponse{GroupID: b.GroupID(), Store: b.Store()}, nil
}

func (s *Server) batch(c *call, r *protocol.BatchRequest) (*protocol.Batch, error) {
	st, err := s.storeIn(r.Store, r.Config)
	if err != nil {
		return nil, err
	}
	if dir, missing := store.MissingDir(st); missing && job.ValidName(r.GroupID) {
		return nil, fmt.Errorf("no batch %s in the store %s (its directory %s does not exist, so it holds no "+
			"batches: check the store, or use the profile the batch was submitted with): %w", r.GroupID, st, dir, engine.ErrNotFound)
	}
	v, err := batch.Read(c, s.eng, r.GroupID, st, r.Status)
	if err != nil {
		return nil, err
	}
	return batchOf(v), nil
}

func (s *Server) batchWatch(c *call, r *protocol.BatchWatchRequest) (*protocol.Empty, error) {
	o := batch.WatchOptions{InlineMax: r.InlineMax}
	var round []protocol.ChildStatus
	if r.Batched {
		// One message per round: a client reading a message per input (the SDK, a
		// thread handing each to another) held the watch up by not reading fast enough.
		o.EndRound = func() {
			if len(round) > 0 {
				c.event(protocol.EventChildren, protocol.Children{Children: round})
				round = nil
			}
		}
	}
	err := batch.WatchWith(c, s.eng, r.GroupID, r.Store, o, func(cs batch.ChildStatus) {
		p := childStatusOf(cs)
		p.Result = resultOf(cs.Result)
		if r.Batched {
			round = append(round, p)
			return
		}
		c.event(protocol.EventChild, p)
	})
	if o.EndRound != nil {
		o.EndRound() // what the last round found, before the reply
	}
	return nil, err
}

func (s *Server) batchCancel(c *call, r *protocol.GroupRequest) (*protocol.Empty, error) {
	s.mu.Lock()
	b := s.batches[r.GroupID]
	s.mu.Unlock()
	if b != nil {
		b.Stop()
		<-b.Done()
	}
	return nil, batch.Cancel(c, s.eng, r.GroupID, r.Store)
}

func (s *Server) batchCleanup(c *call, r *protocol.BatchCleanupRequest) (*protocol.BatchCleanupResponse, error) {
	if r.UnlessStarted {
		started, err := batch.Withdraw(c, s.eng, r.GroupID, r.Store)
		if err != nil {
			return nil, err
		}
		return &protocol.BatchCleanupResponse{Started: started}, nil
	}
	if err := batch.Cleanup(c, s.eng, r.GroupID, r.Store, r.K8s, r.GCS); err != nil {
		return nil, err
	}
	return &protocol.BatchCleanupResponse{}, nil
}

func (s *Server) dataHash(_ *call, r *protocol.DataHashRequest) (*protocol.DataHashResponse, error) {
	if strings.Contains(r.Path, "://") {
		return nil, invalidf("content_hash() needs local data; %s is hashed by its store", r.Path)
	}
	sum, err := data.ContentHash(r.Path)
	if err != nil {
		return nil, err
	}
	return &protocol.DataHashResponse{Hash: sum}, nil
}

func (s *Server) list(c *call, r *protocol.ListRequest) ([]protocol.ListedJob, error) {
	args := map[config.Key]string{}
	for k, v := range r.Config {
		args[config.Key(k)] = v
	}
	if r.Store != "" {
		// A file store named that does not exist holds no jobs, and looking must not make
		// its directory (a typo would leave one behind). The SDK and the CLI refuse the
		// path before asking; the protocol answers an empty list (testdata/list.jsonl).
		if _, missing := store.MissingDir(r.Store); missing {
			return []protocol.ListedJob{}, nil
		}
		args[config.Store] = r.Store
	}
	rows, err := s.eng.ListIn(c, args)
	if err != nil {
		return nil, err
	}
	return listedOf(rows), nil
}
