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
		objs, err := j.Store.List(ctx, store.LogsPrefix(j.ID))
		if err != nil {
			return err
		}
		progressed := false
		for _, o := range objs {
			seq, ok := chunkSeq(o.Key)
			if !ok || seq < next {
				continue
			}
			b, err := j.Store.Get(ctx, o.Key)
			if err != nil {
				return err
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
			next = seq + 1
			progressed = true
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
