package image

import (
	"fmt"
	"io"

	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kinetic-run/kinetic/internal/bar"
)

// trackPush returns a channel for remote.WithProgress that draws a byte progress bar
// (Kinetic's one style, internal/bar) on w (nothing when w is nil), and a function that
// waits for the channel to close. desc is what is pushed ("image: pushing ...").
func trackPush(w io.Writer, desc string) (chan v1.Update, func()) {
	ch := make(chan v1.Update, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b *bar.Bar
		for u := range ch {
			if w == nil || u.Error != nil {
				continue
			}
			if b == nil && u.Total > 0 {
				b = bar.New(w, u.Total, strings.TrimPrefix(desc, "kinetic: "), bar.Options{Bytes: true, Keep: true})
			}
			if b != nil {
				b.Set(u.Complete, u.Total)
			}
		}
		if b != nil {
			b.Finish()
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
