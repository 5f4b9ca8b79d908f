package data

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// laneFile is one file being hashed on a lane: where its bytes come from (a read into
// the lane's buffer, then a mapping of the rest, then reads of what was appended) and
// its digest so far.
type laneFile struct {
	laneStream // the digest and the current piece, not yet hashed
	e          *fileEntry
	fd         int
	buf        []byte
	stage      int
	off        int64  // bytes of the file taken so far
	mapped     []byte // the current mapping, unmapped when the next piece is taken
}

const (
	stageFirst = iota // nothing read yet
	stageMore         // the first read filled the buffer: map the rest if it is large
	stageRead         // read on until a short read
	stageLast         // the last piece has been taken
)

// next makes data the file's next piece; eof when there is none.
func (f *laneFile) next() (eof bool, err error) {
	f.unmap()
	switch f.stage {
	case stageLast:
		return true, nil
	case stageMore:
		f.stage = stageRead
		if mapped, err := f.mapRest(); mapped || err != nil {
			return false, err
		}
	}
	return false, f.read()
}

// unmap unmaps the current mapping, if any.
func (f *laneFile) unmap() {
	if f.mapped != nil {
		unix.Munmap(f.mapped)
		f.mapped = nil
	}
}

// mapRest makes the rest of the file, if it is large, the next piece, mapped; mapped is
// false when it is read instead.
func (f *laneFile) mapRest() (mapped bool, err error) {
	var st unix.Stat_t
	if unix.Fstat(f.fd, &st) != nil || st.Size-f.off < mmapMin || st.Size > maxMapped {
		return false, nil
	}
	m, err := unix.Mmap(f.fd, f.off, int(st.Size-f.off), unix.PROT_READ, unix.MAP_SHARED|mapPopulate)
	if err != nil {
		return false, nil
	}
	if _, err := unix.Seek(f.fd, st.Size, 0); err != nil {
		unix.Munmap(m)
		return false, err
	}
	f.mapped, f.data, f.off = m, m, st.Size
	return true, nil
}

// read reads the next piece into buf.
func (f *laneFile) read() error {
	for {
		k, err := unix.Read(f.fd, f.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		f.data = f.buf[:k]
		f.off += int64(k)
		if k < len(f.buf) { // short: the end of the file (a regular file reads short only there)
			f.stage = stageLast
		} else if f.stage == stageFirst {
			f.stage = stageMore
		}
		return nil
	}
}

// openLaneFile opens e's file to be taken in pieces through buf.
func openLaneFile(e *fileEntry, buf []byte) (laneFile, error) {
	// Plain system calls: os.File would first try to register the file with the network
	// poller (a failing epoll_ctl per file).
	fd, err := unix.Open(e.abs, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return laneFile{}, fmt.Errorf("hash %s: %w", e.abs, &os.PathError{Op: "open", Path: e.abs, Err: err})
	}
	return laneFile{e: e, fd: fd, buf: buf}, nil
}

// release unmaps and closes the file, which leaves the lane.
func (f *laneFile) release() {
	f.unmap()
	unix.Close(f.fd)
	f.e, f.data = nil, nil
}

// close ends the file's hash on the lane; with a nil error the entry's size and digest
// are set from the lane's digest.
func (f *laneFile) close(err error) error {
	e := f.e
	f.release()
	if err != nil {
		return fmt.Errorf("hash %s: %w", e.abs, err)
	}
	e.size = f.off
	f.d.sum(&e.sum)
	return nil
}

// laneKernelInUse is how files are hashed several at a time on this CPU (hashLanes), or
// nil: one at a time (hashFile). Tests set it to compare the two.
var laneKernelInUse = bestKernel()

// readBufs are the lanes' read buffers, kept between hashes: a fresh buffer's pages
// cost a fault each on first use.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readBuf); return &b }}

// hashLanes hashes the files of work several at a time on this goroutine with kernel
// k, each file taken as hashFile takes it.
func hashLanes(ctx context.Context, work <-chan *fileEntry, k *laneKernel) (err error) {
	lanes := make([]laneFile, k.lanes)
	for i := range lanes {
		b := readBufs.Get().(*[]byte)
		defer readBufs.Put(b)
		lanes[i].buf = *b
	}
	defer func() {
		for i := range lanes {
			if lanes[i].e != nil {
				lanes[i].close(err)
			}
		}
	}()
	// A file truncated while it is mapped makes the access fault: caught and reported.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))

	open, ready := make([]*laneStream, 0, k.lanes), make([]*laneStream, 0, k.lanes)
	for {
		open = open[:0]
		for i := range lanes {
			if err := lanes[i].fill(ctx, work); err != nil {
				return err
			}
			if lanes[i].e != nil {
				open = append(open, &lanes[i].laneStream)
			}
		}
		if len(open) == 0 {
			return nil
		}
		if err := guardFaults(lanes, func() { k.step(open, ready) }); err != nil {
			return err
		}
	}
}

// fill gives lane l a piece to hash, finishing its file and opening the next as needed;
// l.e is nil when no file is left.
func (l *laneFile) fill(ctx context.Context, work <-chan *fileEntry) error {
	for len(l.data) == 0 {
		if l.e != nil {
			eof, err := l.next()
			if err != nil {
				return l.close(err)
			}
			if !eof {
				continue
			}
			if err := l.close(nil); err != nil {
				return err
			}
		}
		if done, err := l.take(ctx, work); done || err != nil {
			return err
		}
	}
	return nil
}

// take opens the next file of work on lane l; done when there is none.
func (l *laneFile) take(ctx context.Context, work <-chan *fileEntry) (done bool, err error) {
	e, ok := <-work
	if !ok {
		return true, nil
	}
	if err := ctx.Err(); err != nil {
		return true, err
	}
	f, err := openLaneFile(e, l.buf)
	if err != nil {
		return true, err
	}
	*l = f
	l.d.reset()
	l.d.write([]byte(e.rel))
	l.d.write([]byte{0})
	return false, nil
}

// guardFaults runs hash, turning a fault on a lane's mapping (its file shrank) into that
// file's error.
func guardFaults(lanes []laneFile, hash func()) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if fe, ok := r.(interface{ Addr() uintptr }); ok {
			for i := range lanes {
				l := &lanes[i]
				if len(l.mapped) > 0 {
					start := uintptr(unsafe.Pointer(&l.mapped[0]))
					if a := fe.Addr(); a >= start && a < start+uintptr(len(l.mapped)) {
						err = l.close(fmt.Errorf("the file changed (shrank) while it was hashed; hash it again once it is written: %v", r))
						return
					}
				}
			}
		}
		panic(r)
	}()
	hash()
	return nil
}
