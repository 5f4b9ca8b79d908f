package layout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/kinetic-run/kinetic/store"
)

// The inputs' one encoding. The SDK writes a map's inputs in the encoding of
// groups/ID/inputs.bin (inputsMagic, the count, the offsets, the inputs) and the engine
// copies that file to the store as it is, reading of it only what it must: the table,
// streamed, to check it, and one input at a time when it submits children one by one.
// Its memory does not grow with the number of inputs.

// InputsFile is an inputs file in the on-store encoding, read where it lies (the SDK's
// file, on this machine).
type InputsFile struct {
	r    io.ReaderAt
	size int64
	n    uint64
}

// IsInputsFile says whether head (the first bytes of a file) starts an inputs file in
// the on-store encoding (and not the length-prefixed one of earlier SDKs).
func IsInputsFile(head []byte) bool {
	return len(head) >= len(inputsMagic) && string(head[:len(inputsMagic)]) == inputsMagic
}

// OpenInputsFile checks the inputs file r of size bytes whole (its header, and a table
// of offsets that rise and end where the file does: one pass, a small buffer) and
// returns it with the indexes of its empty inputs (the ones the SDK could not pickle).
func OpenInputsFile(r io.ReaderAt, size int64) (*InputsFile, []int, error) {
	head := make([]byte, 16)
	if _, err := r.ReadAt(head, 0); err != nil || !IsInputsFile(head) {
		return nil, nil, errors.New("the inputs file is not an inputs file (it does not start with " + inputsMagic + ")")
	}
	n := binary.BigEndian.Uint64(head[8:])
	if size < 24 || n > uint64(size-24)/8 {
		return nil, nil, fmt.Errorf("the inputs file is truncated: its table of %d inputs does not fit in %d bytes", n, size)
	}
	f := &InputsFile{r: r, size: size, n: n}
	empty, err := f.check()
	if err != nil {
		return nil, nil, err
	}
	return f, empty, nil
}

// check streams the table: offsets from 0, never falling, the last one the data's size.
func (f *InputsFile) check() ([]int, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f.r, 16, 8*int64(f.n+1)), 4<<10)
	var empty []int
	var prev uint64
	var b [8]byte
	for i := uint64(0); i <= f.n; i++ {
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return nil, fmt.Errorf("the inputs file is truncated in its table, at input %d", i)
		}
		off := binary.BigEndian.Uint64(b[:])
		switch {
		case i == 0 && off != 0:
			return nil, errors.New("the inputs file is damaged: its first input does not start at 0")
		case off < prev:
			return nil, fmt.Errorf("the inputs file is damaged at input %d: its offsets fall", i-1)
		case i > 0 && off == prev:
			empty = append(empty, int(i-1))
		}
		prev = off
	}
	if data := uint64(f.size) - f.table(); prev != data {
		return nil, fmt.Errorf("the inputs file holds %d bytes of inputs, its table says %d", data, prev)
	}
	return empty, nil
}

// table is where the inputs start.
func (f *InputsFile) table() uint64 { return 16 + 8*(f.n+1) }

// Len is the number of inputs.
func (f *InputsFile) Len() int { return int(f.n) }

// At reads input i: the same bytes ReadInput reads from the store once the file is there.
func (f *InputsFile) At(i int) ([]byte, error) {
	if i < 0 || uint64(i) >= f.n {
		return nil, fmt.Errorf("there are %d inputs, not %d", f.n, i+1)
	}
	var offs [16]byte
	if _, err := f.r.ReadAt(offs[:], 16+8*int64(i)); err != nil {
		return nil, fmt.Errorf("read input %d: %w", i, err)
	}
	from, to := binary.BigEndian.Uint64(offs[:]), binary.BigEndian.Uint64(offs[8:])
	if to < from || to > uint64(f.size)-f.table() {
		return nil, fmt.Errorf("the inputs file is damaged at input %d", i)
	}
	if to == from {
		return []byte{}, nil // an empty input (one the SDK could not pickle)
	}
	b := make([]byte, to-from)
	if _, err := f.r.ReadAt(b, int64(f.table()+from)); err != nil {
		return nil, fmt.Errorf("read input %d: %w", i, err)
	}
	return b, nil
}

// Encoded is the whole file, as groups/ID/inputs.bin holds it.
func (f *InputsFile) Encoded() io.Reader { return io.NewSectionReader(f.r, 0, f.size) }

// EncodeInputs is the on-store encoding of inputs held in memory (a Go caller's, or the
// length-prefixed file of an earlier SDK): the table, then the inputs, not copied.
func EncodeInputs(inputs [][]byte) io.Reader {
	table := make([]byte, 16+8*(len(inputs)+1))
	copy(table, inputsMagic)
	binary.BigEndian.PutUint64(table[8:], uint64(len(inputs)))
	var off uint64
	parts := []io.Reader{bytes.NewReader(table)}
	for i, in := range inputs {
		binary.BigEndian.PutUint64(table[16+8*i:], off)
		off += uint64(len(in))
		parts = append(parts, bytes.NewReader(in))
	}
	binary.BigEndian.PutUint64(table[16+8*len(inputs):], off)
	return io.MultiReader(parts...)
}

// WriteDerivedFrom is WriteDerived with the inputs already encoded (an InputsFile's
// Encoded, or EncodeInputs): they are copied to the store as they are read.
func WriteDerivedFrom(ctx context.Context, st *store.Store, gid string, t *Template, env map[string]string, encoded io.Reader) error {
	if _, err := st.PutFrom(ctx, store.GroupInputsKey(gid), encoded); err != nil {
		return fmt.Errorf("batch %s: write its inputs: %w", gid, err)
	}
	return writeTemplate(ctx, st, gid, t, env)
}
