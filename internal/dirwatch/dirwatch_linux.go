//go:build linux

package dirwatch

import (
	"bytes"
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// watch calls wake after each batch of inotify events on dir that names one of names
// (any name when names is empty) until stop is called; with writes, every write to a
// file in dir is an event too.
// With writes the watch fires once (IN_ONESHOT) until rearm is called.
func watch(dir string, names map[string]bool, writes bool, wake func()) (stop, rearm func(), ok bool) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, nil, false
	}
	mask := uint32(unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE)
	if writes {
		mask |= unix.IN_MODIFY | unix.IN_ONESHOT
		rearm = func() { unix.InotifyAddWatch(fd, dir, mask) }
	}
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, nil, false
	}
	// A non-blocking descriptor: reads wait in the runtime's poller, and Close ends them.
	f := os.NewFile(uintptr(fd), "inotify:"+dir)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			if len(names) == 0 && !onlyIgnored(buf[:n]) || len(names) > 0 && named(buf[:n], names) {
				wake()
			}
		}
	}()
	return func() { f.Close() }, rearm, true
}

// onlyIgnored reports whether every event in buf is IN_IGNORED: a one-shot watch's own
// removal after it fired, not a change.
func onlyIgnored(buf []byte) bool {
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		if binary.NativeEndian.Uint32(buf[off+4:])&unix.IN_IGNORED == 0 {
			return false
		}
		off += unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+12:]))
	}
	return len(buf) > 0
}

// named reports whether the inotify events in buf name one of names, or were lost (a
// queue overflow: anything may have happened).
func named(buf []byte, names map[string]bool) bool {
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		// struct inotify_event: wd, mask, cookie, len, then len bytes of name.
		mask := binary.NativeEndian.Uint32(buf[off+4:])
		if mask&unix.IN_Q_OVERFLOW != 0 {
			return true
		}
		start := off + unix.SizeofInotifyEvent
		end := start + int(binary.NativeEndian.Uint32(buf[off+12:]))
		if end > len(buf) {
			return true // cut short: a hint either way
		}
		name := buf[start:end]
		if k := bytes.IndexByte(name, 0); k >= 0 {
			name = name[:k]
		}
		if names[string(name)] {
			return true
		}
		off = end
	}
	return false
}
