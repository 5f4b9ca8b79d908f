package batch

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/kinetic-run/kinetic/batch/layout"
)

// inputs are a map's inputs as the engine holds them while it submits its batch: where
// they lie (the SDK's file, in the store's encoding: read one at a time, copied to the
// store as they are) or in memory (a Go caller's, or a file of an earlier SDK).
type inputs interface {
	// Len is the number of inputs.
	Len() int
	// At is input i (empty: one the SDK could not pickle).
	At(i int) ([]byte, error)
	// Encoded is every input in the store's encoding (groups/ID/inputs.bin).
	Encoded() io.Reader
}

// memInputs are inputs held in memory.
type memInputs [][]byte

func (m memInputs) Len() int                 { return len(m) }
func (m memInputs) At(i int) ([]byte, error) { return m[i], nil }
func (m memInputs) Encoded() io.Reader       { return layout.EncodeInputs(m) }

// empty are the indexes of the empty inputs.
func (m memInputs) empty() []int {
	var out []int
	for i, in := range m {
		if len(in) == 0 {
			out = append(out, i)
		}
	}
	return out
}

// openedInputs are a request's inputs, the indexes of the empty ones, and what lets go
// of them once the batch no longer reads them.
type openedInputs struct {
	inputs
	empty []int
	close func()
}

// openInputs opens req's inputs: req.Inputs, or the file at req.InputsPath, kept open
// (the SDK removes it once Map returns) and read where it lies when it is in the store's
// encoding; a file of an earlier SDK (length-prefixed inputs) is read whole.
func openInputs(req *MapRequest) (*openedInputs, error) {
	if req.InputsPath == "" {
		m := memInputs(req.Inputs)
		return &openedInputs{inputs: m, empty: m.empty(), close: func() {}}, nil
	}
	f, err := os.Open(req.InputsPath)
	if err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	in, err := openInputsFile(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return in, nil
}

// openInputsFile reads f's head to tell the encodings apart.
func openInputsFile(f *os.File) (*openedInputs, error) {
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	if layout.IsInputsFile(head[:n]) {
		r, size, err := readerAt(f, head[:n])
		if err != nil {
			return nil, err
		}
		in, empty, err := layout.OpenInputsFile(r, size)
		if err != nil {
			return nil, fmt.Errorf("inputs %s: %w", f.Name(), err)
		}
		return &openedInputs{inputs: in, empty: empty, close: func() { f.Close() }}, nil
	}
	legacy, err := ReadInputs(io.MultiReader(bytes.NewReader(head[:n]), f))
	if err != nil {
		return nil, err
	}
	f.Close()
	m := memInputs(legacy)
	return &openedInputs{inputs: m, empty: m.empty(), close: func() {}}, nil
}

// readerAt is f to read where it lies, or, when it is no regular file (a pipe), what
// was read of it and the rest, in memory.
func readerAt(f *os.File, head []byte) (io.ReaderAt, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("inputs: %w", err)
	}
	if fi.Mode().IsRegular() {
		return f, fi.Size(), nil
	}
	rest, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, fmt.Errorf("inputs: %w", err)
	}
	raw := append(head, rest...)
	return bytes.NewReader(raw), int64(len(raw)), nil
}
