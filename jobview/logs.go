package jobview

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// chunkSeq reads the sequence number out of a log chunk key.
func chunkSeq(key string) (int, bool) {
	name := key[strings.LastIndexByte(key, '/')+1:]
	n, err := strconv.Atoi(strings.TrimSuffix(name, ".log"))
	return n, err == nil
}

// Logs writes the job's logs in the store (the chunks its runner mirrors) to w. With
// follow, it keeps writing new output until the job is terminal.
func (j *Job) Logs(ctx context.Context, w io.Writer, follow bool) error {
	next := 0
	p := NewPoller()
	for {
		// Look at the state before reading: output written before a terminal state is
		// then certainly in the store when we read it.
		var state job.State
		if follow {
			s, _, err := j.Status(ctx)
			if err != nil {
				return err
			}
			state = s
		}
		progressed, err := j.copyNew(ctx, w, &next)
		if err != nil {
			return err
		}
		if !follow || state.Terminal() {
			return nil
		}
		if progressed {
			p = NewPoller()
		}
		if err := p.Wait(ctx); err != nil {
			return err
		}
	}
}

// LogsUntil follows the job's logs in the store like Logs with follow, but looks at no
// status: it ends when ended is closed, after one last read. The caller closes ended once
// its own wait saw the job terminal (Wait or Result returned), so output written before
// the end is in the store by then. A caller that waits anyway then polls the job's state
// once, not twice, and its logs end with its wait instead of on the follower's next
// poll.
func (j *Job) LogsUntil(ctx context.Context, w io.Writer, ended <-chan struct{}) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ended:
			cancel()
		case <-wctx.Done():
		}
	}()
	next := 0
	p := NewPoller()
	for {
		last := false
		select {
		case <-ended:
			last = true
		default:
		}
		progressed, err := j.copyNew(ctx, w, &next)
		if err != nil || last {
			return err
		}
		if progressed {
			p = NewPoller()
		}
		if err := p.Wait(wctx); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// copyNew writes the log chunks numbered next and above to w, in order, and moves next
// past them.
func (j *Job) copyNew(ctx context.Context, w io.Writer, next *int) (bool, error) {
	objs, err := j.Store.List(ctx, store.LogsPrefix(j.ID))
	if err != nil {
		return false, err
	}
	progressed := false
	for _, o := range objs {
		seq, ok := chunkSeq(o.Key)
		if !ok || seq < *next {
			continue
		}
		b, err := j.Store.Get(ctx, o.Key)
		if err != nil {
			return progressed, err
		}
		if _, err := w.Write(b); err != nil {
			return progressed, err
		}
		*next = seq + 1
		progressed = true
	}
	return progressed, nil
}

// Tail returns the last n lines of the job's logs.
func (j *Job) Tail(ctx context.Context, n int) (string, error) {
	objs, err := j.Store.List(ctx, store.LogsPrefix(j.ID))
	if err != nil {
		return "", err
	}
	var parts [][]byte
	lines := 0
	for i := len(objs) - 1; i >= 0 && lines <= n; i-- {
		b, err := j.Store.Get(ctx, objs[i].Key)
		if err != nil {
			return "", err
		}
		parts = append(parts, b)
		lines += bytes.Count(b, []byte("\n"))
	}
	var all []byte
	for i := len(parts) - 1; i >= 0; i-- {
		all = append(all, parts[i]...)
	}
	return lastLines(string(all), n), nil
}

// lastLines returns the last n lines of s (all of s if it has fewer).
func lastLines(s string, n int) string {
	if n <= 0 {
		return ""
	}
	trimmed := strings.TrimSuffix(s, "\n")
	idx := len(trimmed)
	for i := 0; i < n; i++ {
		k := strings.LastIndexByte(trimmed[:idx], '\n')
		if k < 0 {
			return s
		}
		idx = k
	}
	return s[idx+1:]
}
