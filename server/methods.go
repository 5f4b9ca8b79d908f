package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	"time"

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
)

// jobParams name a job, optionally in a store other than the configured one (a handle
// always sends its own store, so it works whatever the active profile is).
type jobParams struct {
	JobID   string  `json:"job_id"`
	Store   string  `json:"store,omitempty"`
	Timeout float64 `json:"timeout,omitempty"` // seconds; 0 = none
}

type waitParams struct {
	jobParams
	StreamLogs   bool   `json:"stream_logs,omitempty"`
	StatusEvents bool   `json:"status_events,omitempty"`
	ValueDir     string `json:"value_dir,omitempty"`
	Cleanup      bool   `json:"cleanup,omitempty"`
}

type statusReply struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

func (s *Server) attach(ctx context.Context, p *jobParams) (*engine.Job, error) {
	return s.eng.Attach(ctx, p.JobID, p.Store)
}

// jobRequest decodes raw into p (a struct that embeds jobParams, reached through jp)
// and attaches the job it names.
func (s *Server) jobRequest(ctx context.Context, raw json.RawMessage, p any, jp *jobParams) (*engine.Job, error) {
	if err := decode(raw, p); err != nil {
		return nil, err
	}
	return s.attach(ctx, jp)
}

func withTimeout(ctx context.Context, seconds float64) (context.Context, context.CancelFunc) {
	if seconds <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Duration(seconds*float64(time.Second)))
}

// logWriter turns written log bytes into "log" events.
type logWriter struct {
	s  *Server
	id int64
}

func (w logWriter) Write(p []byte) (int, error) {
	w.s.event(w.id, "log", string(p))
	return len(p), nil
}

func (s *Server) dispatch(ctx context.Context, req *Request) (any, error) {
	switch req.Method {
	case "hello":
		return map[string]any{"kinetic": Version, "protocol": Protocol}, nil

	case "cancel_request":
		var p struct {
			RequestID int64 `json:"request_id"`
		}
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return map[string]bool{"cancelled": s.cancelRequest(p.RequestID)}, nil

	case "root":
		var p struct {
			SourceFile string `json:"source_file"`
			Cwd        string `json:"cwd"`
		}
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		root, err := engine.Root(p.SourceFile, p.Cwd)
		if err != nil {
			return nil, err
		}
		return map[string]string{"root": root}, nil

	case "config":
		var p struct {
			Config map[config.Key]string `json:"config"`
		}
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return s.eng.Config().Entries(), nil

	case "submit":
		var p engine.SubmitRequest
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		j, err := s.eng.Submit(ctx, &p)
		if err != nil {
			return nil, &typedError{ErrInvalid, err}
		}
		return j.Handle, nil

	case "attach":
		var p jobParams
		j, err := s.jobRequest(ctx, req.Params, &p, &p)
		if err != nil {
			return nil, err
		}
		return j.Handle, nil

	case "status":
		var p jobParams
		j, err := s.jobRequest(ctx, req.Params, &p, &p)
		if err != nil {
			if isNotFound(err) {
				return statusReply{Status: string(job.NotFound)}, nil
			}
			return nil, err
		}
		state, reason, err := j.Status(ctx)
		if err != nil {
			return nil, err
		}
		return statusReply{string(state), reason}, nil

	case "wait", "result":
		var p waitParams
		j, err := s.jobRequest(ctx, req.Params, &p, &p.jobParams)
		if err != nil {
			return nil, err
		}
		wctx, cancel := withTimeout(ctx, p.Timeout)
		defer cancel()
		var logsDone chan error
		if p.StreamLogs {
			logsDone = make(chan error, 1)
			go func() { logsDone <- j.Logs(wctx, logWriter{s, req.ID}, true) }()
		}
		var onChange func(job.State)
		if p.StatusEvents {
			onChange = func(st job.State) { s.event(req.ID, "status", string(st)) }
		}
		state, reason, err := j.Wait(wctx, onChange)
		if logsDone != nil {
			<-logsDone // the follower stops by itself once the job is terminal
		}
		if err != nil {
			return nil, err
		}
		if req.Method == "wait" {
			return statusReply{string(state), reason}, nil
		}
		res, err := j.ResultOf(wctx, state, reason, p.ValueDir)
		if err != nil {
			return nil, err
		}
		if p.Cleanup && res.Envelope != nil && res.Envelope.Success {
			return afterReply{res, func() {
				if err := j.Cleanup(context.WithoutCancel(ctx), true, true); err != nil {
					fmt.Fprintf(os.Stderr, "kinetic: warning: cleanup of %s failed: %v\n", p.JobID, err)
				}
			}}, nil
		}
		return res, nil

	case "results_many":
		// The results of many finished jobs in one request (a batch's results()):
		// read in parallel, cleaned up after the reply.
		var p struct {
			JobIDs   []string `json:"job_ids"`
			Store    string   `json:"store,omitempty"`
			ValueDir string   `json:"value_dir,omitempty"`
			Cleanup  bool     `json:"cleanup,omitempty"`
			Timeout  float64  `json:"timeout,omitempty"`
		}
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		wctx, cancel := withTimeout(ctx, p.Timeout)
		defer cancel()
		type one struct {
			*engine.Result
			JobID string `json:"job_id"`
			Error *Error `json:"error,omitempty"`
		}
		out := make([]one, len(p.JobIDs))
		var done []*engine.Job
		var mu sync.Mutex
		g, gctx := errgroup.WithContext(wctx)
		g.SetLimit(8)
		for i, id := range p.JobIDs {
			g.Go(func() error {
				out[i].JobID = id
				j, err := s.eng.Attach(gctx, id, p.Store)
				if err == nil {
					var res *engine.Result
					res, err = j.Result(gctx, p.ValueDir)
					out[i].Result = res
					if err == nil && res.Envelope != nil && res.Envelope.Success {
						mu.Lock()
						done = append(done, j)
						mu.Unlock()
					}
				}
				if err != nil {
					out[i].Error = toError(err)
				}
				return nil
			})
		}
		g.Wait()
		if !p.Cleanup || len(done) == 0 {
			return out, nil
		}
		return afterReply{out, func() {
			c, cctx := errgroup.WithContext(context.WithoutCancel(ctx))
			c.SetLimit(4)
			for _, j := range done {
				c.Go(func() error {
					if err := j.Cleanup(cctx, true, true); err != nil {
						fmt.Fprintf(os.Stderr, "kinetic: warning: cleanup of %s failed: %v\n", j.Handle.JobID, err)
					}
					return nil
				})
			}
			c.Wait()
		}}, nil

	case "logs":
		var p struct {
			jobParams
			Follow bool `json:"follow"`
		}
		j, err := s.jobRequest(ctx, req.Params, &p, &p.jobParams)
		if err != nil {
			return nil, err
		}
		if p.Follow {
			return nil, j.Logs(ctx, logWriter{s, req.ID}, true)
		}
		var b strings.Builder
		if err := j.Logs(ctx, &b, false); err != nil {
			return nil, err
		}
		return map[string]string{"logs": b.String()}, nil

	case "tail":
		var p struct {
			jobParams
			N int `json:"n"`
		}
		j, err := s.jobRequest(ctx, req.Params, &p, &p.jobParams)
		if err != nil {
			return nil, err
		}
		t, err := j.Tail(ctx, p.N)
		if err != nil {
			return nil, err
		}
		return map[string]string{"logs": t}, nil

	case "cancel":
		var p jobParams
		j, err := s.jobRequest(ctx, req.Params, &p, &p)
		if err != nil {
			return nil, err
		}
		cctx, cancel := withTimeout(ctx, p.Timeout)
		defer cancel()
		if err := j.Cancel(cctx); err != nil {
			return nil, err
		}
		state, reason, err := j.Status(ctx)
		if err != nil {
			return nil, err
		}
		return statusReply{string(state), reason}, nil

	case "debug_attach":
		var p struct {
			jobParams
			LocalPort int `json:"local_port"`
		}
		j, err := s.jobRequest(ctx, req.Params, &p, &p.jobParams)
		if err != nil {
			return nil, err
		}
		return s.debugAttach(ctx, j, p.LocalPort, p.Timeout)

	case "debug_detach":
		var p struct {
			SessionID string `json:"session_id"`
		}
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return map[string]bool{"closed": s.debugDetach(p.SessionID)}, nil

	case "cleanup":
		var p struct {
			jobParams
			K8s bool `json:"k8s"`
			GCS bool `json:"gcs"`
		}
		j, err := s.jobRequest(ctx, req.Params, &p, &p.jobParams)
		if err != nil {
			if isNotFound(err) {
				return nil, nil // already gone: cleanup is idempotent
			}
			return nil, err
		}
		cctx, cancel := withTimeout(ctx, p.Timeout)
		defer cancel()
		return nil, j.Cleanup(cctx, p.K8s, p.GCS)

	case "map":
		var p batch.MapRequest
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		b, err := batch.Map(s.base, s.eng, &p)
		if err != nil {
			return nil, &typedError{ErrInvalid, err}
		}
		s.mu.Lock()
		s.batches[b.GroupID()] = b
		s.mu.Unlock()
		return map[string]any{"group_id": b.GroupID()}, nil

	case "batch":
		var p struct {
			GroupID string `json:"group_id"`
			Store   string `json:"store,omitempty"`
			Status  bool   `json:"status"`
		}
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return batch.Read(ctx, s.eng, p.GroupID, p.Store, p.Status)

	case "batch_watch":
		var p struct {
			GroupID string `json:"group_id"`
			Store   string `json:"store,omitempty"`
		}
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return nil, batch.Watch(ctx, s.eng, p.GroupID, p.Store, func(c batch.ChildStatus) { s.event(req.ID, "child", c) })

	case "batch_cancel":
		var p struct {
			GroupID string `json:"group_id"`
			Store   string `json:"store,omitempty"`
		}
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		s.mu.Lock()
		b := s.batches[p.GroupID]
		s.mu.Unlock()
		if b != nil {
			b.Stop()
			<-b.Done()
		}
		return nil, batch.Cancel(ctx, s.eng, p.GroupID, p.Store)

	case "batch_cleanup":
		var p struct {
			GroupID string `json:"group_id"`
			Store   string `json:"store,omitempty"`
			K8s     bool   `json:"k8s"`
			GCS     bool   `json:"gcs"`
		}
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return nil, batch.Cleanup(ctx, s.eng, p.GroupID, p.Store, p.K8s, p.GCS)

	case "data_hash":
		var p struct {
			Path string `json:"path"`
		}
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		if strings.Contains(p.Path, "://") {
			return nil, &typedError{ErrInvalid, fmt.Errorf("content_hash() needs local data; %s is hashed by its store", p.Path)}
		}
		sum, err := data.ContentHash(p.Path)
		if err != nil {
			return nil, err
		}
		return map[string]string{"hash": sum}, nil

	case "list":
		var p struct {
			Store string `json:"store,omitempty"`
		}
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		rows, err := s.eng.List(ctx, p.Store)
		if err != nil {
			return nil, err
		}
		if rows == nil {
			rows = []engine.Listed{}
		}
		return rows, nil
	}
	return nil, &typedError{ErrInvalid, fmt.Errorf("unknown method %q (this engine speaks protocol %d)", req.Method, Protocol)}
}
