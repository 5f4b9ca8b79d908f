package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
)

var (
	_ backend.Debugger = (*Backend)(nil)
	_ backend.Debugger = (*Pathways)(nil)
)

// DebugEndpoint implements backend.Debugger: a client-go port-forward (no kubectl) from
// 127.0.0.1:localPort (or a free port) to debugpy's port inside the job's pod.
func (b *Backend) DebugEndpoint(ctx context.Context, h *job.Handle, m *job.DebugMarker, localPort int) (string, int, func(), error) {
	if b.cfg == nil {
		return "", 0, nil, fmt.Errorf("debug %s: %w: no cluster connection", h.JobID, backend.ErrUnavailable)
	}
	pod, err := b.podOf(ctx, h)
	if errors.Is(err, backend.ErrNoLogs) {
		// No pod (gone, or a warm pod's): the worker cannot be reached from here
		// (backend.Debugger's contract), which is not about logs.
		return "", 0, nil, fmt.Errorf("debug %s: %w: the job has no pod of its own in namespace %s (it ended, or was cleaned up; see kinetic jobs status %s)", h.JobID, backend.ErrUnavailable, b.o.Namespace, h.JobID)
	}
	if err != nil {
		return "", 0, nil, fmt.Errorf("debug %s: the job's pod: %w", h.JobID, err)
	}
	return b.portForward(ctx, h, pod, m, localPort)
}

// DebugEndpoint implements backend.Debugger for a multi-host job: the port-forward goes
// to the pod of the host that waits for the debugger (m.HostIndex, the leader).
func (p *Pathways) DebugEndpoint(ctx context.Context, h *job.Handle, m *job.DebugMarker, localPort int) (string, int, func(), error) {
	if p.b.cfg == nil {
		return "", 0, nil, fmt.Errorf("debug %s: %w: no cluster connection", h.JobID, backend.ErrUnavailable)
	}
	pods, err := p.pods(ctx, h)
	if err != nil {
		return "", 0, nil, fmt.Errorf("debug %s: the job's pods: %w", h.JobID, err)
	}
	want := m.HostIndex
	if want == "" {
		want = "0"
	}
	for i := range pods {
		if strconv.Itoa(hostOf(&pods[i])) == want && pods[i].DeletionTimestamp == nil {
			return p.b.portForward(ctx, h, pods[i].Name, m, localPort)
		}
	}
	return "", 0, nil, fmt.Errorf("debug %s: %w: no pod of host %s in LeaderWorkerSet %s (namespace %s): the job's pods are gone (see kinetic jobs status %s)", h.JobID, backend.ErrUnavailable, want, h.K8sName, p.b.o.Namespace, h.JobID)
}

// portForward forwards 127.0.0.1:localPort (or a free port) to m.Port in pod.
func (b *Backend) portForward(ctx context.Context, h *job.Handle, pod string, m *job.DebugMarker, localPort int) (string, int, func(), error) {
	rt, upgrader, err := spdy.RoundTripperFor(b.cfg)
	if err != nil {
		return "", 0, nil, err
	}
	u, err := url.Parse(b.cfg.Host)
	if err != nil {
		return "", 0, nil, err
	}
	u.Path = fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s/portforward", u.Path, b.o.Namespace, pod)
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	ports := []string{fmt.Sprintf("%d:%d", localPort, m.Port)}
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, ports, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return "", 0, nil, fmt.Errorf("debug %s: port-forward: %w", h.JobID, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		return "", 0, nil, fmt.Errorf("debug %s: port-forward to pod %s port %d (is local port %d free?): %w", h.JobID, pod, m.Port, localPort, err)
	case <-time.After(30 * time.Second):
		close(stop)
		return "", 0, nil, fmt.Errorf("debug %s: port-forward to pod %s did not start within 30s", h.JobID, pod)
	case <-ctx.Done():
		close(stop)
		return "", 0, nil, ctx.Err()
	}
	got, err := fw.GetPorts()
	if err != nil || len(got) == 0 {
		close(stop)
		return "", 0, nil, fmt.Errorf("debug %s: port-forward: %v", h.JobID, err)
	}
	var once sync.Once
	return "127.0.0.1", int(got[0].Local), func() { once.Do(func() { close(stop) }) }, nil
}
