// Package bar is Kinetic's one progress-bar style, for uploads, image pushes and batches
// alike (github.com/schollz/progressbar underneath): "kinetic: WHAT" (with "N ok, M
// failed" for work that can fail item by item), the percentage, a bar, the count (bytes
// for byte work), and the time so far and the time left, "[elapsed:ETA]". The Python
// SDK's results() bar draws the same line (python/kinetic/batch.py, _Bar).
package bar

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Width is the bar's width in cells.
const Width = 24

// Theme is the bar's look (the Python SDK's is the same).
var Theme = progressbar.Theme{Saucer: "█", SaucerPadding: " ", BarStart: "|", BarEnd: "|"}

// Options say what is counted and what happens at the end.
type Options struct {
	// Bytes counts bytes (shown as sizes); otherwise items.
	Bytes bool
	// Keep leaves the finished bar on its line (a newline after it); otherwise the line
	// is cleared, for the line that says what was done to take its place.
	Keep bool
}

// Bar is one progress bar on a terminal. It is redrawn at most every throttle (the
// library's own throttle would draw a new count with an old description).
type Bar struct {
	pb         *progressbar.ProgressBar
	what       string
	last       time.Time
	ok, failed int
}

const throttle = 100 * time.Millisecond

// New draws on w a bar of total units for what ("uploading the working directory").
func New(w io.Writer, total int64, what string, o Options) *Bar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(Describe(what, 0, 0)),
		progressbar.OptionSetWidth(Width),
		progressbar.OptionSetTheme(Theme), progressbar.OptionSetPredictTime(true), progressbar.OptionSetElapsedTime(true),
	}
	opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowBytes(o.Bytes))
	if o.Keep {
		opts = append(opts, progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }))
	} else {
		opts = append(opts, progressbar.OptionClearOnFinish())
	}
	return &Bar{pb: progressbar.NewOptions64(total, opts...), what: what}
}

// Describe is the bar's description: "kinetic: WHAT", and "N ok, M failed" once any
// item has ended.
func Describe(what string, ok, failed int) string {
	if ok == 0 && failed == 0 {
		return "kinetic: " + what
	}
	return fmt.Sprintf("kinetic: %s: %d ok, %d failed", what, ok, failed)
}

// Set moves the bar to done of total (total may change as work is found), with the
// counts given to Counts so far.
func (b *Bar) Set(done, total int64) {
	if time.Since(b.last) < throttle && done < total {
		return
	}
	b.last = time.Now()
	b.pb.ChangeMax64(total)
	b.pb.Describe(Describe(b.what, b.ok, b.failed))
	b.pb.Set64(done)
}

// Counts records how many items ended ok and how many failed, shown from the next Set.
func (b *Bar) Counts(ok, failed int) { b.ok, b.failed = ok, failed }

// Finish draws the bar full and clears (or keeps) its line.
func (b *Bar) Finish() {
	if !b.pb.IsFinished() {
		b.pb.Finish()
	}
}
