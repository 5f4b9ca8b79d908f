package server

import (
	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/internal/seconds"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/protocol"
)

// Mappings between protocol types and engine types. Where the two have the same fields
// the mapping is a struct conversion, so a field added on one side and not the other
// stops the build instead of silently changing the wire.

func submitRequest(p *protocol.SubmitRequest) *engine.SubmitRequest {
	r := &engine.SubmitRequest{
		Kind: p.Kind, Payload: p.Payload, PayloadPath: p.PayloadPath, Command: p.Command,
		FuncName: p.FuncName, DisplayName: p.DisplayName, SourceFile: p.SourceFile, Cwd: p.Cwd, Python: p.Python, PythonVersion: p.PythonVersion,
		Accelerator: p.Accelerator, AcceleratorDefault: p.AcceleratorDefault, ContainerImage: p.ContainerImage, CaptureEnv: p.CaptureEnv, Environ: p.Environ,
		OutputDir: p.OutputDir, Spot: p.Spot, Debug: p.Debug, DebugWait: p.DebugWait, NoWorkdir: p.NoWorkdir,
	}
	if d, ok := seconds.Limit(p.Timeout); ok {
		r.Timeout = d // above a century: no limit (0), never a wrapped-around negative
	}
	if p.Entry != nil {
		r.Entry = &job.Entry{File: p.Entry.File, Func: p.Entry.Func, Args: p.Entry.Args}
	}
	for _, d := range p.Data {
		r.Data = append(r.Data, engine.DataArg(d))
	}
	if p.Config != nil {
		r.Config = make(map[config.Key]string, len(p.Config))
		for k, v := range p.Config {
			r.Config[config.Key(k)] = v
		}
	}
	return r
}

func mapRequest(p *protocol.MapRequest) *batch.MapRequest {
	return &batch.MapRequest{Template: *submitRequest(&p.Template), InputsPath: p.InputsPath,
		MaxConcurrent: p.MaxConcurrent, Retries: p.Retries, FailFast: p.FailFast, CancelRunningOnFail: p.CancelRunningOnFail, Name: p.Name, Tags: p.Tags}
}

func handleOf(h *job.Handle) *protocol.Handle {
	if h == nil {
		return nil
	}
	// Field by field: the store's handle has fields the protocol does not carry
	// (submitted_at, read by the dashboard).
	return &protocol.Handle{JobID: h.JobID, Backend: h.Backend, Project: h.Project, ClusterName: h.ClusterName,
		Zone: h.Zone, Namespace: h.Namespace, BucketName: h.BucketName, K8sName: h.K8sName, ImageURI: h.ImageURI,
		Accelerator: h.Accelerator, FuncName: h.FuncName, DisplayName: h.DisplayName, CreatedAt: h.CreatedAt,
		GroupID: h.GroupID, GroupKind: h.GroupKind, GroupIndex: h.GroupIndex, Debug: h.Debug, Spot: h.Spot,
		KubeContext: h.KubeContext, ShippedRoot: h.ShippedRoot, Store: h.Store, OutputDir: h.OutputDir}
}

func resultOf(r *engine.Result) *protocol.Result {
	if r == nil {
		return nil
	}
	p := &protocol.Result{State: string(r.State), Reason: r.Reason, ValuePath: r.ValuePath, Value: r.Value}
	if r.Envelope != nil {
		e := r.Envelope // its timestamps are not part of the protocol
		p.Envelope = &protocol.Envelope{Success: e.Success, Phase: e.Phase, Host: e.Host, HasValue: e.HasValue,
			ValueRepr: e.ValueRepr, ExcType: e.ExcType, ExcMessage: e.ExcMessage, Traceback: e.Traceback, ExitCode: e.ExitCode}
	}
	return p
}

func debugSessionOf(s *engine.DebugSession) *protocol.DebugSession {
	p := &protocol.DebugSession{JobID: s.JobID, Host: s.Host, Port: s.Port, LocalRoot: s.LocalRoot,
		RemoteRoot: s.RemoteRoot, Launch: s.Launch, Forwarded: s.Forwarded}
	if s.Marker != nil {
		m := protocol.DebugMarker(*s.Marker)
		p.Marker = &m
	}
	return p
}

func childStatusOf(c batch.ChildStatus) protocol.ChildStatus {
	return protocol.ChildStatus{Index: c.Index, JobID: c.JobID, Handle: handleOf(c.Handle), Status: string(c.Status), Reason: c.Reason, Error: c.Error}
}

func batchOf(v *batch.View) *protocol.Batch {
	m := &v.Manifest
	b := &protocol.Batch{GroupID: m.GroupID, Name: m.Name, Tags: m.Tags, FuncName: m.FuncName, Accelerator: m.Accelerator,
		Backend: m.Backend, Store: m.Store, CreatedAt: m.CreatedAt, TotalExpected: m.TotalExpected,
		MaxConcurrent: m.MaxConcurrent, Retries: m.Retries, FailFast: m.FailFast,
		SubmissionComplete: m.SubmissionComplete, Stopped: m.Stopped, Settled: m.Settled}
	if m.Children != nil {
		b.Children = make([]protocol.BatchChild, len(m.Children))
		for i, c := range m.Children {
			b.Children[i] = protocol.BatchChild(c)
		}
	}
	if v.Statuses != nil {
		b.Statuses = make([]protocol.ChildStatus, len(v.Statuses))
		for i, c := range v.Statuses {
			b.Statuses[i] = childStatusOf(c)
		}
	}
	return b
}

func listedOf(rows []engine.Listed) []protocol.ListedJob {
	out := make([]protocol.ListedJob, len(rows))
	for i, r := range rows {
		out[i] = protocol.ListedJob{Handle: handleOf(r.Handle), Status: string(r.State), Reason: r.Reason}
	}
	return out
}

func configEntries(es []config.Entry) []protocol.ConfigEntry {
	out := make([]protocol.ConfigEntry, len(es))
	for i, e := range es {
		out[i] = protocol.ConfigEntry{Key: string(e.Key), Value: e.Value, Source: e.Source}
	}
	return out
}
