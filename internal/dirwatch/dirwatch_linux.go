//go:build linux

package dirwatch

import (
	"os"

	"golang.org/x/sys/unix"
)

// watch calls wake after each batch of inotify events on dir until stop is called.
func watch(dir string, wake func()) (stop func(), ok bool) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, false
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		return nil, false
	}
	// A non-blocking descriptor: reads wait in the runtime's poller, and Close ends them.
	f := os.NewFile(uintptr(fd), "inotify:"+dir)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
			wake()
		}
	}()
	return func() { f.Close() }, true
}
