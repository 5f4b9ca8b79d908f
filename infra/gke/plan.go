package gke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Actions of a step.
const (
	ActOK       = "ok"       // already as wanted: nothing to do
	ActCreate   = "create"   // missing: create it
	ActUpdate   = "update"   // there, but different: change it
	ActWait     = "wait"     // an operation started earlier is still running: wait for it
	ActPublish  = "publish"  // push the runner image
	ActDelete   = "delete"   // down, pool remove
	ActKeep     = "keep"     // down leaves it (the bucket without --force-destroy)
	ActEnable   = "enable"   // turn on Google APIs (Service Usage)
	ActRecreate = "recreate" // in ERROR at Google: delete it and create it again
)

// Step is one thing a plan makes sure of.
type Step struct {
	What   string `json:"what"`
	Action string `json:"action"`
	Detail string `json:"detail,omitempty"`
	apply  func(ctx context.Context, pr *progress) error
}

// Plan is what an operation would change, read from the current state.
type Plan struct {
	Title string `json:"title"`
	Steps []Step `json:"steps"`
	// Notes are facts the plan chose (the system pool's machine type and why).
	Notes []string `json:"notes,omitempty"`
	// RunnerImage is the runner image by digest, once known.
	RunnerImage string `json:"runner_image,omitempty"`
	// SystemMachineType is the system pool's machine type (up).
	SystemMachineType string `json:"system_machine_type,omitempty"`
	// Replan says the plan stops early (APIs to enable first): once it is applied, plan
	// again for the rest.
	Replan bool `json:"replan,omitempty"`
	poll   time.Duration
}

// Changes is the number of steps with something to do.
func (p *Plan) Changes() int {
	n := 0
	for _, s := range p.Steps {
		if s.Action != ActOK && s.Action != ActKeep {
			n++
		}
	}
	return n
}

// Kept reports whether a step keeps something (down without --force-destroy).
func (p *Plan) Kept() bool {
	for _, s := range p.Steps {
		if s.Action == ActKeep {
			return true
		}
	}
	return false
}

// Print writes the plan, one line per step: "=" nothing to do, "+" create, "~" update
// or wait, "-" delete.
func (p *Plan) Print(w io.Writer) {
	fmt.Fprintln(w, p.Title)
	for _, s := range p.Steps {
		mark := map[string]string{ActOK: "=", ActCreate: "+", ActPublish: "+", ActUpdate: "~", ActWait: "~", ActDelete: "-", ActKeep: "=", ActEnable: "+", ActRecreate: "~"}[s.Action]
		line := fmt.Sprintf("  %s %-8s %s", mark, s.Action, s.What)
		if s.Detail != "" {
			line += " (" + s.Detail + ")"
		}
		fmt.Fprintln(w, line)
	}
	for _, n := range p.Notes {
		fmt.Fprintln(w, "  note: "+n)
	}
}

// InterruptedError is returned by Apply when ctx ends while a long-running operation
// is under way: the operation goes on at Google, and the next plan picks it up.
type InterruptedError struct {
	What      string // the step
	Operation string // the operation's name, "" if none was started
}

func (e *InterruptedError) Error() string {
	op := ""
	if e.Operation != "" {
		op = " (operation " + e.Operation + ")"
	}
	return fmt.Sprintf("interrupted while waiting for %s%s: it is still running at Google; run the same command again to resume (it reads what exists and waits for what is under way)", e.What, op)
}

// Apply runs the steps with something to do, in order, with a line per step on progress.
// It stops at the first failure: what was done stays done, and the next plan starts
// from there.
func (p *Plan) Apply(ctx context.Context, out io.Writer) error {
	if out == nil {
		out = io.Discard
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Action == ActOK || s.Action == ActKeep {
			continue
		}
		start := time.Now()
		fmt.Fprintf(out, "  %s %s …\n", s.Action, s.What)
		pr := &progress{w: out, what: s.What, poll: p.poll, start: start}
		if err := s.apply(ctx, pr); err != nil {
			var ie *InterruptedError
			if errors.As(err, &ie) {
				return err
			}
			if ctx.Err() != nil {
				return &InterruptedError{What: s.What, Operation: pr.op}
			}
			// Google's refusal as it came (gRPC's or HTTP's text): worded, its fix named.
			var ae *apiError
			var oe *OpError
			if !errors.As(err, &ae) && !errors.As(err, &oe) {
				if _, ok := status.FromError(err); ok || httpCode(err) != 0 {
					return apiErr(s.Action+" "+s.What, err)
				}
			}
			return fmt.Errorf("%s %s: %w", s.Action, s.What, err)
		}
		fmt.Fprintf(out, "  ✓ %s %s (%.1fs)\n", s.Action, s.What, time.Since(start).Seconds())
	}
	return nil
}

// progress reports a long operation's waiting, every 30 s.
type progress struct {
	w     io.Writer
	what  string
	op    string
	poll  time.Duration
	first time.Duration
	start time.Time
	last  time.Time
}

func (pr *progress) tick(state string) {
	if time.Since(pr.last) < 30*time.Second {
		return
	}
	pr.last = time.Now()
	if !pr.start.IsZero() && time.Since(pr.start) > time.Second {
		fmt.Fprintf(pr.w, "    … %s: %s (%s)\n", pr.what, state, time.Since(pr.start).Round(time.Second))
	}
}

// sleep waits before the next poll: the interval grows by half each time, up to ten
// times the first and at most 5 s (operations take seconds to many minutes).
func (pr *progress) sleep(ctx context.Context) error {
	if pr.first == 0 {
		pr.first = pr.poll
	}
	select {
	case <-ctx.Done():
		return &InterruptedError{What: pr.what, Operation: pr.op}
	case <-time.After(pr.poll):
	}
	if next := pr.poll * 3 / 2; next <= 10*pr.first && next <= 5*time.Second {
		pr.poll = next
	}
	return nil
}

// waitOp polls a GKE operation until it is DONE.
func (c *Clients) waitOp(ctx context.Context, cfg *Config, op *containerpb.Operation, pr *progress) error {
	name := cfg.location() + "/operations/" + op.GetName()
	pr.op = op.GetName()
	for op.GetStatus() != containerpb.Operation_DONE {
		pr.tick(op.GetStatus().String())
		if err := pr.sleep(ctx); err != nil {
			return err
		}
		var err error
		op, err = c.Cluster.GetOperation(ctx, &containerpb.GetOperationRequest{Name: name})
		if err != nil {
			if ctx.Err() != nil {
				return &InterruptedError{What: pr.what, Operation: pr.op}
			}
			return fmt.Errorf("operation %s: %w", pr.op, err)
		}
	}
	if e := op.GetError(); e != nil && e.GetCode() != 0 {
		return opError(cfg, pr.op, pr.what, e.GetMessage())
	}
	if m := op.GetStatusMessage(); m != "" && op.GetError() == nil {
		// A DONE operation with a status message and no error carries a failure in
		// older API versions.
		return opError(cfg, pr.op, pr.what, m)
	}
	return nil
}

// waitCluster polls the cluster until it is RUNNING (an operation started before, e.g.
// by an interrupted up).
func (c *Clients) waitCluster(ctx context.Context, cfg *Config, pr *progress) error {
	for {
		cl, err := c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: cfg.clusterName()})
		if err != nil {
			return err
		}
		switch cl.GetStatus() {
		case containerpb.Cluster_RUNNING:
			return nil
		case containerpb.Cluster_ERROR:
			return opError(cfg, "", pr.what, cl.GetStatusMessage())
		case containerpb.Cluster_DEGRADED:
			return fmt.Errorf("cluster %s is %s: %s", cfg.Cluster, cl.GetStatus(), cl.GetStatusMessage())
		case containerpb.Cluster_STOPPING:
			return fmt.Errorf("cluster %s is being deleted", cfg.Cluster)
		}
		pr.tick(cl.GetStatus().String())
		if err := pr.sleep(ctx); err != nil {
			return err
		}
	}
}

func notFound(err error) bool { return status.Code(err) == codes.NotFound }
func exists(err error) bool   { return status.Code(err) == codes.AlreadyExists }

// NewStep is a step whose apply is fn: a step of another system in a plan of this kind
// (the warm pods `down` deletes through the cluster's API before the cluster goes).
func NewStep(what, action, detail string, fn func(ctx context.Context) error) Step {
	return Step{What: what, Action: action, Detail: detail, apply: func(ctx context.Context, _ *progress) error { return fn(ctx) }}
}

// Deletes reports whether p deletes what (a step's What).
func (p *Plan) Deletes(what string) bool {
	for _, s := range p.Steps {
		if s.What == what && s.Action == ActDelete {
			return true
		}
	}
	return false
}
