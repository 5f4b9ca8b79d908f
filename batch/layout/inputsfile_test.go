package layout

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// encoded is what EncodeInputs makes of inputs, whole.
func encoded(t testing.TB, inputs [][]byte) []byte {
	raw, err := io.ReadAll(EncodeInputs(inputs))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestInputsFile: a file in the store's encoding, read where it lies, gives back every
// input, its empty ones, and itself whole as the store's inputs.bin holds it.
func TestInputsFile(t *testing.T) {
	inputs := [][]byte{[]byte("a"), {}, []byte("a longer input"), {}, make([]byte, 70000)}
	raw := encoded(t, inputs)
	f, empty, err := OpenInputsFile(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != len(inputs) || !slices.Equal(empty, []int{1, 3}) {
		t.Errorf("Len %d, empty %v; want %d, [1 3]", f.Len(), empty, len(inputs))
	}
	for i, want := range inputs {
		if got, err := f.At(i); err != nil || !bytes.Equal(got, want) {
			t.Errorf("input %d: %d bytes, %v; want %d bytes", i, len(got), err, len(want))
		}
	}
	if _, err := f.At(len(inputs)); err == nil {
		t.Error("an input past the end was read")
	}
	// Copied to the store as it is, the pods' reader reads it.
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gid := job.NewGroupID()
	tmpl := &Template{Handle: &job.Handle{JobID: job.ChildID(gid, 0)}, Spec: &job.Spec{}}
	if err := WriteDerivedFrom(ctx, st, gid, tmpl, nil, f.Encoded()); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadInput(ctx, st, gid, 2); err != nil || string(got) != "a longer input" {
		t.Errorf("input 2 from the store: %q, %v", got, err)
	}
}

// TestInputsFileDamaged: a file that is not whole, or whose table lies, is refused when
// it is opened, naming what is wrong (before anything of it reaches the store).
func TestInputsFileDamaged(t *testing.T) {
	good := encoded(t, [][]byte{[]byte("one"), []byte("two")})
	fall := slices.Clone(good)
	fall[16+8+7] = 9 // input 1 starts after input 2 ends
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"not one", []byte("\x00\x00\x00\x00\x00\x00\x00\x03one"), "not an inputs file"},
		{"truncated table", good[:30], "does not fit"},
		{"truncated data", good[:len(good)-1], "holds 5 bytes of inputs, its table says 6"},
		{"trailing bytes", append(slices.Clone(good), 'x'), "holds 7 bytes"},
		{"falling offsets", fall, "damaged"},
		{"huge count", []byte("KNINPUT1\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00"), "does not fit"},
	} {
		_, _, err := OpenInputsFile(bytes.NewReader(c.raw), int64(len(c.raw)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// FuzzOpenInputsFile: the SDK's inputs file is untrusted input to the engine. Whatever it
// holds, opening it neither panics nor allocates without bound, and a file it opens
// reads, input by input, as the store's reader reads it once copied there.
func FuzzOpenInputsFile(f *testing.F) {
	f.Add(encoded(f, [][]byte{[]byte("hi"), {}}))
	f.Add([]byte("KNINPUT1\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Add([]byte("KNINPUT1\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\xff\x00\x00\x00\x00\x00\x00\x02hi"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, empty, err := OpenInputsFile(bytes.NewReader(raw), int64(len(raw)))
		if err != nil {
			return
		}
		ctx := context.Background()
		st, err := store.Open(ctx, "mem://")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.Put(ctx, store.GroupInputsKey("grp-x"), raw); err != nil {
			t.Fatal(err)
		}
		for i := range min(in.Len(), 50) {
			b, err := in.At(i)
			b2, err2 := ReadInput(ctx, st, "grp-x", i)
			if err != nil || err2 != nil || !bytes.Equal(b, b2) {
				t.Fatalf("input %d of %q: At %q, %v; ReadInput %q, %v", i, raw, b, err, b2, err2)
			}
			if (len(b) == 0) != slices.Contains(empty, i) {
				t.Fatalf("input %d of %q: %d bytes, empty %v", i, raw, len(b), empty)
			}
		}
	})
}
