package image

import (
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/schollz/progressbar/v3"
)

// trackPush returns a channel for remote.WithProgress that draws a byte progress bar
// on w (nothing when w is nil), and a function that waits for the channel to close.
func trackPush(w io.Writer, desc string) (chan v1.Update, func()) {
	ch := make(chan v1.Update, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var bar *progressbar.ProgressBar
		for u := range ch {
			if w == nil || u.Error != nil {
				continue
			}
			if bar == nil && u.Total > 0 {
				bar = progressbar.NewOptions64(u.Total,
					progressbar.OptionSetWriter(w),
					progressbar.OptionSetDescription(desc),
					progressbar.OptionShowBytes(true),
					progressbar.OptionSetWidth(24),
					progressbar.OptionThrottle(100_000_000),
					progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
				)
			}
			if bar != nil {
				bar.ChangeMax64(u.Total)
				bar.Set64(u.Complete)
			}
		}
		if bar != nil && !bar.IsFinished() {
			bar.Finish()
		}
	}()
	return ch, func() { <-done }
}

// say writes one progress line to w ("kinetic: image: ...").
func say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "kinetic: image: "+format+"\n", args...)
	}
}
