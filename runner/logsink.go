package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/pack"
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
	// writeFinal, if set, runs the last write of the output kept from a full disk (the
	// disk guard's: once more after its reserve is given back, if that write finds no
	// space).
	writeFinal func(write func() error) error

	mu       sync.Mutex
	dropping bool
	kept     []byte // the head of the first chunk a full disk refused
	keptSeq  int    // that chunk's number
	lost     int64  // bytes of output dropped after the kept head
	buf      bytes.Buffer
	seq      int
	err      error
	kick     chan struct{}
	done     chan struct{}
	stopped  chan struct{}
}

// maxChunk is the size at which a chunk is flushed at once.
const maxChunk = 1 << 20

// keepOnFull is how much of the chunk a full disk refused is kept, to be written once
// the job has stopped (its first lines: what it did before its output filled the disk);
// small beside the disk guard's reserve, which the final records need.
const keepOnFull = 16 << 10

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
		s.lost += int64(len(p))
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
			s.flushKept(context.WithoutCancel(ctx))
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
		if errors.Is(err, syscall.ENOSPC) && !s.dropping {
			s.dropping = true
			s.buf.Reset()
			s.kept, s.keptSeq = data[:min(len(data), keepOnFull)], seq
			s.lost += int64(len(data) - len(s.kept))
		}
		s.mu.Unlock()
		if s.onError != nil {
			s.onError(err, len(data))
		}
	}
}

// flushKept writes the head kept from the chunk a full disk refused, in that chunk's
// place (no chunk came after it), with a line that says how much output was lost: the
// log then starts as the job's output did and says where it stops being whole.
func (s *LogSink) flushKept(ctx context.Context) {
	s.mu.Lock()
	kept, seq, lost := s.kept, s.keptSeq, s.lost
	s.mu.Unlock()
	if kept == nil {
		return
	}
	data := append(bytes.Clone(kept), fmt.Sprintf("\n[kinetic: the job's output after this point (%s) was lost: no space left on device in the store]\n", pack.HumanBytes(lost))...)
	write := func() error { return s.st.Put(ctx, s.keyOf(seq), data) }
	var err error
	if s.writeFinal != nil {
		err = s.writeFinal(write)
	} else {
		err = write()
	}
	if err == nil {
		s.mu.Lock()
		s.kept = nil
		s.mu.Unlock()
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
