package layout

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestSubmitterLost: a manifest whose submitter stopped saving it is complete for every
// reader: the missing inputs are submission failures, and a pod waiting for one of them
// learns at once that it was never submitted.
func TestSubmitterLost(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gid := "grp-0123456789abcdefghijklm"
	for name, tc := range map[string]struct {
		heartbeat time.Time
		lost      bool
	}{
		"fresh heartbeat":           {time.Now(), false},
		"stale heartbeat":           {time.Now().Add(-2 * SubmitterLostAfter), true},
		"no heartbeat (old writer)": {time.Time{}, false},
	} {
		t.Run(name, func(t *testing.T) {
			m := &Manifest{GroupID: gid, TotalExpected: 3, Heartbeat: tc.heartbeat, Children: []Child{{Index: 0, JobID: "job-a"}}}
			if got := m.SubmitterLost(time.Now()); got != tc.lost {
				t.Fatalf("SubmitterLost = %v, want %v", got, tc.lost)
			}
			if !tc.lost {
				return
			}
			m.MarkLost()
			if !m.SubmissionComplete || len(m.Children) != 3 || m.Children[1].SubmissionError == "" || m.Children[2].Index != 2 {
				t.Fatalf("after MarkLost: %+v", m)
			}
			raw := []byte(`{"group_id":"` + gid + `","total_expected":3,"heartbeat":"` + tc.heartbeat.UTC().Format(time.RFC3339Nano) + `","children":[]}`)
			if err := st.Put(ctx, ManifestKey(gid), raw); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := ResolveMember(ctx, st, gid, 2, time.Minute)
			if !errors.Is(err, ErrNotSubmitted) || time.Since(start) > 5*time.Second {
				t.Fatalf("ResolveMember of an input a lost submitter never wrote: %v after %s", err, time.Since(start))
			}
		})
	}
}

// FuzzReadInput: inputs.bin is read from a store anyone with write access may have
// damaged; whatever its bytes, ReadInput returns an input or an error, never panics or
// allocates without bound, and a file WriteDerived made gives back every input.
func FuzzReadInput(f *testing.F) {
	f.Add([]byte("KNINPUT1\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02hi"), 0)
	f.Add([]byte("KNINPUT1\xff\xff\xff\xff\xff\xff\xff\xff"), 3)
	f.Add([]byte("garbage"), 0)
	f.Fuzz(func(t *testing.T, raw []byte, i int) {
		ctx := context.Background()
		st, err := store.Open(ctx, "mem://")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.Put(ctx, store.GroupInputsKey("grp-x"), raw); err != nil {
			t.Fatal(err)
		}
		i %= 1000
		b, err := ReadInput(ctx, st, "grp-x", i)
		// The in-memory reader (which sees the whole file, so may refuse more) never
		// reads what the store's reader does not.
		var b2 []byte
		in, err2 := ParseInputs(raw)
		if err2 == nil {
			b2, err2 = in.At(i)
		}
		if err2 == nil && (err != nil || !bytes.Equal(b, b2)) {
			t.Errorf("input %d of %q: ReadInput %q, %v; Inputs.At %q, %v", i, raw, b, err, b2, err2)
		}
	})
}

func TestWriteDerivedRoundTrip(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gid := job.NewGroupID()
	inputs := [][]byte{[]byte("a"), {}, []byte("a longer input"), make([]byte, 70000)}
	tmpl := &Template{Handle: &job.Handle{JobID: job.ChildID(gid, 0), Store: "mem://"}, Spec: &job.Spec{JobID: job.ChildID(gid, 0)}, DefaultOutputs: true}
	if err := WriteDerived(ctx, st, gid, tmpl, nil, inputs); err != nil {
		t.Fatal(err)
	}
	for i, want := range inputs {
		got, err := ReadInput(ctx, st, gid, i)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("input %d: %d bytes, %v; want %d bytes", i, len(got), err, len(want))
		}
	}
	if _, err := ReadInput(ctx, st, gid, len(inputs)); err == nil {
		t.Error("an input past the end was read")
	}
	h := tmpl.ChildHandle(gid, 2)
	if h.JobID != job.ChildID(gid, 2) || h.GroupIndex != "2" || h.OutputDir != store.DefaultOutputDir("mem://", h.JobID) {
		t.Errorf("child handle: %+v", h)
	}
}
