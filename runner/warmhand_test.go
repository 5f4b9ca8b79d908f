package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/store"
)

// A warm spare's call hands its envelope and a small value back with its exit status:
// nothing is written in its output directory, and the store has both; a larger value
// is a file, as before. A value that a process the job forked returned is not the job's.
func TestWarmResultHandedBack(t *testing.T) {
	h := newHarness(t)
	h.lease = true // each call in a spare that has warmed up (the leased one)
	t.Cleanup(releaseLease)
	src := `
import os
def small():
    return "s" * 100
def large():
    return "L" * 20000
def raises():
    raise ValueError("no " * 10)
`
	h.value(h.entry(pidsSrc, "pids", nil)) // a server, and a spare for the calls below
	ctx := context.Background()
	for _, c := range []struct {
		fn          string
		ok          bool
		filesInOut  []string
		reprContain string
	}{
		{"small", true, nil, "'sss"},
		// Its result.pkl was written, then moved into the store.
		{"large", true, nil, "'LLL"},
		{"raises", false, nil, ""},
	} {
		t.Run(c.fn, func(t *testing.T) {
			id := h.entry(src, c.fn, nil)
			leased(t)
			out := &syncBuffer{}
			got := h.run(ctx, id, out)
			if got.Success != c.ok {
				t.Fatalf("%s: success %v, want %v: %s %s", c.fn, got.Success, c.ok, got.ExcType, got.ExcMessage)
			}
			if c.ok && !strings.Contains(got.ValueRepr, c.reprContain) {
				t.Errorf("%s: value %.40s", c.fn, got.ValueRepr)
			}
			if !c.ok && (!strings.HasSuffix(got.ExcType, "ValueError") || !strings.Contains(got.ExcMessage, "no no")) {
				t.Errorf("%s: %s: %s", c.fn, got.ExcType, got.ExcMessage)
			}
			var left []string
			ents, _ := os.ReadDir(filepath.Join(h.ws, id, "out"))
			for _, e := range ents {
				left = append(left, e.Name())
			}
			if strings.Join(left, ",") != strings.Join(c.filesInOut, ",") {
				t.Errorf("%s: the output directory holds %v, want %v", c.fn, left, c.filesInOut)
			}
			for _, key := range []string{store.EnvelopeKey(id), store.ResultKey(id)} {
				if b, err := h.st.Get(ctx, key); err != nil || len(b) == 0 {
					t.Errorf("%s: %s: %d bytes, %v", c.fn, key, len(b), err)
				}
			}
		})
	}
}
