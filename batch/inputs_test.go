package batch

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// sdkInputs writes inputs as the SDK does now (the store's encoding), or as SDKs before
// issue 48 did (legacy: length-prefixed), and returns the file's path.
func sdkInputs(t *testing.T, inputs [][]byte, legacy bool) string {
	t.Helper()
	var buf bytes.Buffer
	if legacy {
		for _, in := range inputs {
			binary.Write(&buf, binary.BigEndian, uint64(len(in)))
			buf.Write(in)
		}
	} else if _, err := io.Copy(&buf, layout.EncodeInputs(inputs)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "inputs.bin")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMapInputsEncodings: whichever way the inputs come (the SDK's file in the store's
// encoding, the length-prefixed file of an earlier SDK, a Go caller's memory), a batch
// run as one unit stores the same inputs.bin, with its empty input a submission failure,
// and a batch submitted child by child gives each child its own input (read from the
// SDK's file one at a time, after the SDK removed it).
func TestMapInputsEncodings(t *testing.T) {
	inputs := [][]byte{[]byte("zero"), {}, []byte("two"), bytes.Repeat([]byte("3"), 1000)}
	want, err := io.ReadAll(layout.EncodeInputs(inputs))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		path   bool
		legacy bool
	}{{"sdk file", true, false}, {"earlier sdk file", true, true}, {"memory", false, false}} {
		t.Run(c.name+"/unit", func(t *testing.T) {
			ctx := context.Background()
			e := newTestEngine(t, fakeGrouper{newFakeBackend(func(int, int) outcome { return outcome{reads: -1} })})
			req := mapRequest(0)
			if c.path {
				req.InputsPath = sdkInputs(t, inputs, c.legacy)
			} else {
				req.Inputs = inputs
			}
			b, err := Map(ctx, e, req)
			if err != nil {
				t.Fatal(err)
			}
			<-b.Done()
			st, _ := e.Store(ctx, "mem://")
			got, err := st.Get(ctx, store.GroupInputsKey(b.GroupID()))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("inputs.bin: %q, %v; want %q", got, err, want)
			}
			m := b.manifest
			if m.TotalExpected != len(inputs) || len(m.Children) < 2 || m.Children[1].SubmissionError == "" {
				t.Errorf("manifest: %d expected, children %+v; want input 1 failed to submit", m.TotalExpected, m.Children)
			}
		})
		t.Run(c.name+"/one by one", func(t *testing.T) {
			ctx := context.Background()
			e := newTestEngine(t, newFakeBackend(func(int, int) outcome { return outcome{} }))
			req := mapRequest(0)
			if c.path {
				req.InputsPath = sdkInputs(t, inputs, c.legacy)
			} else {
				req.Inputs = inputs
			}
			b, err := Map(ctx, e, req)
			if err != nil {
				t.Fatal(err)
			}
			if c.path {
				os.Remove(req.InputsPath) // as the SDK does once Map replied
			}
			<-b.Done()
			st, _ := e.Store(ctx, "mem://")
			for i, c := range b.manifest.Children {
				if len(inputs[i]) == 0 {
					if c.SubmissionError == "" {
						t.Errorf("child %d, an empty input, was submitted", i)
					}
					continue
				}
				raw, err := st.Get(ctx, store.SpecKey(c.JobID))
				if err != nil {
					t.Fatalf("child %d: %v", i, err)
				}
				spec, err := job.DecodeSpec(raw)
				if err != nil || !bytes.Equal(spec.ArgsInline, inputs[i]) {
					t.Errorf("child %d: args %q, %v; want %q", i, spec.ArgsInline, err, inputs[i])
				}
			}
		})
	}
}

// TestMapInputsDamaged: an inputs file whose table lies is refused before anything of the
// batch is written, naming the file.
func TestMapInputsDamaged(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, fakeGrouper{newFakeBackend(func(int, int) outcome { return outcome{} })})
	req := mapRequest(0)
	req.InputsPath = sdkInputs(t, [][]byte{[]byte("a"), []byte("b")}, false)
	raw, _ := os.ReadFile(req.InputsPath)
	os.WriteFile(req.InputsPath, raw[:len(raw)-1], 0o600)
	if _, err := Map(ctx, e, req); err == nil || !bytes.Contains([]byte(err.Error()), []byte(req.InputsPath)) {
		t.Fatalf("Map of a truncated inputs file: %v, want an error naming it", err)
	}
	st, _ := e.Store(ctx, "mem://")
	if objs, _ := st.List(ctx, "groups/"); len(objs) != 0 {
		t.Errorf("a refused batch left %d objects under groups/", len(objs))
	}
}

// TestBatchWrittenByV1: a batch written by the version before issue 48 (the SDK's
// length-prefixed inputs, decoded and encoded again by the engine; testdata/v1-batch,
// dumped from that version's Map) is still read, attached and run: its children, its
// failed input, each input as a pod reads it.
func TestBatchWrittenByV1(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, fakeGrouper{newFakeBackend(func(int, int) outcome { return outcome{reads: -1} })})
	st, err := e.Store(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("testdata/v1-batch/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixture: %v", err)
	}
	var gid string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		key := strings.ReplaceAll(filepath.Base(f), "__", "/")
		if strings.HasSuffix(key, "/manifest.json") {
			gid = strings.Split(key, "/")[1]
		}
		if err := st.Put(ctx, key, raw); err != nil {
			t.Fatal(err)
		}
	}
	v, err := Read(ctx, e, gid, "mem://", true)
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "written-by-v1" || len(v.Children) != 3 || v.Children[1].SubmissionError == "" {
		t.Fatalf("read the v1 batch: name %q, children %+v", v.Name, v.Children)
	}
	for _, i := range []int{0, 2} {
		id := job.ChildID(gid, i)
		j, err := e.Attach(ctx, id, "mem://")
		if err != nil || j.Handle.GroupIndex != strconv.Itoa(i) {
			t.Fatalf("attach child %d: %+v, %v", i, j, err)
		}
		in, err := layout.ReadInput(ctx, st, gid, i)
		if err != nil || !bytes.Equal(in, []byte{byte(i + 1)}) {
			t.Errorf("input %d: %q, %v", i, in, err)
		}
	}
}

// TestMapInputsRetryInUnit: a child of a unit that failed is retried alone, with its
// input read again from the SDK's file (removed by the SDK, kept open by the engine).
func TestMapInputsRetryInUnit(t *testing.T) {
	ctx := context.Background()
	inputs := [][]byte{[]byte("zero"), []byte("one"), []byte("two")}
	e := newTestEngine(t, fakeGrouper{newFakeBackend(func(i, n int) outcome {
		if i == 2 && n == 0 {
			return outcome{reason: "first attempt fails"}
		}
		return outcome{}
	})})
	req := mapRequest(0)
	req.Retries = 1
	req.InputsPath = sdkInputs(t, inputs, false)
	b, err := Map(ctx, e, req)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(req.InputsPath)
	<-b.Done()
	c := b.manifest.Children[2]
	if len(c.Attempts) != 2 {
		t.Fatalf("child 2: %+v, want a second attempt", c)
	}
	st, _ := e.Store(ctx, "mem://")
	raw, err := st.Get(ctx, store.SpecKey(c.Attempts[1]))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := job.DecodeSpec(raw)
	if err != nil || !bytes.Equal(spec.ArgsInline, inputs[2]) {
		t.Errorf("the retry's args: %q, %v; want %q", spec.ArgsInline, err, inputs[2])
	}
}
