package runner

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/store"
)

// LogSink mirrors a job's output into the store as numbered chunks, so logs can be
// followed while the job runs and outlive the machine or pod that ran it. Object stores
// cannot append, so each flush is a new object; flushes are frequent at first (so a
// follower sees lines promptly) and rarer as the chunk count grows (so a chatty job does
// not make millions of objects).
type LogSink struct {
	st    *store.Store
	keyOf func(seq int) string

	// onError, if set, hears of every failed flush and, after an ENOSPC, of every
	// write dropped, with how many bytes were lost (the disk guard stops a job whose
	// logs no longer fit). After an ENOSPC the sink drops output instead of buffering
	// it: the space left belongs to the job's final records.
	onError func(err error, lost int)

	mu       sync.Mutex
	dropping bool
	buf      bytes.Buffer
	seq      int
	err      error
	kick     chan struct{}
	done     chan struct{}
	stopped  chan struct{}
}

// maxChunk is the size at which a chunk is flushed at once.
const maxChunk = 1 << 20

// NewLogSink starts a sink that flushes to the store until Close.
func NewLogSink(ctx context.Context, st *store.Store, jobID string, firstSeq int) *LogSink {
	return newLogSink(ctx, st, func(seq int) string { return store.LogChunkKey(jobID, seq) }, firstSeq)
}

// newLogSink flushes chunk seq to keyOf(seq).
func newLogSink(ctx context.Context, st *store.Store, keyOf func(int) string, firstSeq int) *LogSink {
	s := &LogSink{st: st, keyOf: keyOf, seq: firstSeq, kick: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go s.loop(ctx)
	return s
}

// Write buffers p; it never blocks on the store.
func (s *LogSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.dropping {
		err := s.err
		s.mu.Unlock()
		if s.onError != nil {
			s.onError(err, len(p))
		}
		return len(p), nil
	}
	s.buf.Write(p)
	full := s.buf.Len() >= maxChunk
	s.mu.Unlock()
	if full {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (s *LogSink) interval() time.Duration {
	switch {
	case s.seq < 200:
		return 150 * time.Millisecond
	case s.seq < 2000:
		return time.Second
	default:
		return 5 * time.Second
	}
}

func (s *LogSink) loop(ctx context.Context) {
	defer close(s.stopped)
	for {
		t := time.NewTimer(s.interval())
		select {
		case <-t.C:
		case <-s.kick:
		case <-s.done:
			t.Stop()
			s.flush(context.WithoutCancel(ctx))
			return
		}
		t.Stop()
		s.flush(ctx)
	}
}

func (s *LogSink) flush(ctx context.Context) {
	s.mu.Lock()
	if s.buf.Len() == 0 {
		s.mu.Unlock()
		return
	}
	data := bytes.Clone(s.buf.Bytes())
	s.buf.Reset()
	seq := s.seq
	s.seq++
	s.mu.Unlock()
	if err := s.st.Put(ctx, s.keyOf(seq), data); err != nil {
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		if errors.Is(err, syscall.ENOSPC) {
			s.dropping = true
			s.buf.Reset()
		}
		s.mu.Unlock()
		if s.onError != nil {
			s.onError(err, len(data))
		}
	}
}

// Close flushes what is left and stops the sink. It returns the first store error.
func (s *LogSink) Close() error {
	close(s.done)
	<-s.stopped
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
