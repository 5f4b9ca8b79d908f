package layout

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Derived children. A batch that a backend runs as one unit (batch/driver, Modes.Unit: an Indexed
// Job) does not write its children at submission: that would be three objects per input
// before the last one could start. It writes three objects in all: the manifest (with
// Derived set), the template every child is made from, and every input in one object.
// The first attempt of input i is job job.ChildID(gid, i); its handle and spec are
// written by its own pod when it starts (Materialize), and until then every reader makes
// them from the template (Template.ChildHandle). Retries are ordinary jobs with child entries.

// Template is groups/ID/template.json: a child's handle and spec with JobID
// job.ChildID(gid, 0) and no arguments. The environment every child captures is not in
// it but in groups/ID/env.json (ReadEnv): the template is read by every listing and
// status, and captured values are secrets.
type Template struct {
	Handle *job.Handle `json:"handle"`
	Spec   *job.Spec   `json:"spec"`
	// DefaultOutputs: the output directory is the store's outputs/ID of each child (no
	// output_dir was set), not the one directory in Handle.
	DefaultOutputs bool `json:"default_outputs,omitempty"`

	// legacyEnv is the "env" field of a template written by a version that kept the
	// captured values in it: read, so that its batch still runs, and never written.
	legacyEnv map[string]string
}

// inputsMagic starts groups/ID/inputs.bin: then the number of inputs n, n+1 offsets
// (8-byte big-endian, from the end of the table) and the inputs, so that a pod reads its
// own input with two ranged reads whatever the batch's size.
const inputsMagic = "KNINPUT1"

// WriteDerived writes the inputs of batch gid, the environment its children capture
// (env, if any) and its template, in that order: the template's presence is what makes
// its children exist.
func WriteDerived(ctx context.Context, st *store.Store, gid string, t *Template, env map[string]string, inputs [][]byte) error {
	return WriteDerivedFrom(ctx, st, gid, t, env, EncodeInputs(inputs))
}

// writeTemplate writes the environment batch gid's children capture and its template,
// once its inputs are in the store.
func writeTemplate(ctx context.Context, st *store.Store, gid string, t *Template, env map[string]string) error {
	if err := writeEnv(ctx, st, gid, env); err != nil {
		return err
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := st.Put(ctx, store.GroupTemplateKey(gid), b); err != nil {
		return fmt.Errorf("batch %s: write its template: %w", gid, err)
	}
	return nil
}

// writeEnv writes the captured values of batch gid's children to groups/gid/env.json
// (nothing when there are none).
func writeEnv(ctx context.Context, st *store.Store, gid string, env map[string]string) error {
	if len(env) == 0 {
		return nil
	}
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	if err := st.Put(ctx, store.GroupEnvKey(gid), b); err != nil {
		return fmt.Errorf("batch %s: write its captured environment: %w", gid, err)
	}
	return nil
}

// ReadTemplate reads the template of batch gid (a store not-found error if its children
// are not derived).
func ReadTemplate(ctx context.Context, st *store.Store, gid string) (*Template, error) {
	raw, err := st.Get(ctx, store.GroupTemplateKey(gid))
	if err != nil {
		return nil, err
	}
	var t struct {
		Template
		Env map[string]string `json:"env"` // read-compat: see Template.legacyEnv
	}
	if err := json.Unmarshal(raw, &t); err != nil || t.Handle == nil || t.Spec == nil {
		if err == nil {
			err = errors.New("no handle or spec")
		}
		return nil, Damaged(gid, "template.json", raw, err)
	}
	t.legacyEnv = t.Env
	return &t.Template, nil
}

// ReadEnv returns the environment the children of batch gid capture (nil when they
// capture nothing): groups/gid/env.json, or the template's own for a batch written
// before that object existed.
func ReadEnv(ctx context.Context, st *store.Store, gid string, t *Template) (map[string]string, error) {
	if t.legacyEnv != nil {
		return t.legacyEnv, nil
	}
	if len(t.Spec.EnvNames) == 0 {
		return nil, nil // nothing captured: no object to read
	}
	raw, err := st.Get(ctx, store.GroupEnvKey(gid))
	if store.IsNotFound(err) {
		return nil, Missing(gid, "env.json", "its template says its inputs capture "+strings.Join(t.Spec.EnvNames, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("batch %s: read its captured environment: %w", gid, err)
	}
	var env map[string]string
	if err := json.Unmarshal(raw, &env); err != nil || env == nil {
		if err == nil {
			err = errors.New("not a map of variables to values")
		}
		return nil, Damaged(gid, "env.json", raw, err)
	}
	return env, nil
}

// ChildHandle is the handle of input i's first attempt.
func (t *Template) ChildHandle(gid string, i int) *job.Handle {
	h := *t.Handle
	h.JobID = job.ChildID(gid, i)
	h.GroupID, h.GroupKind, h.GroupIndex = gid, "map", strconv.Itoa(i)
	if t.DefaultOutputs {
		h.OutputDir = store.DefaultOutputDir(h.Store, h.JobID)
	}
	if h.SubmittedAt == "" {
		h.SubmittedAt = h.CreatedAt
	}
	return &h
}

// Gone reports whether input i's derived job was removed (cleaned up): it is not made
// again.
func Gone(ctx context.Context, st *store.Store, gid string, i int) (bool, error) {
	return st.Exists(ctx, store.GroupGoneKey(gid, i))
}

// GoneSet returns the inputs of batch gid whose derived jobs were removed (one listing).
func GoneSet(ctx context.Context, st *store.Store, gid string) (map[int]bool, error) {
	prefix := store.GroupGoneKey(gid, 0)
	prefix = prefix[:len(prefix)-1]
	objs, err := st.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make(map[int]bool, len(objs))
	for _, o := range objs {
		if i, err := strconv.Atoi(o.Key[len(prefix):]); err == nil {
			out[i] = true
		}
	}
	return out, nil
}

// MarkGone records that input i's derived job is being removed, before its objects go.
func MarkGone(ctx context.Context, st *store.Store, gid string, i int) error {
	return st.Put(ctx, store.GroupGoneKey(gid, i), []byte(time.Now().UTC().Format(time.RFC3339Nano)))
}

// Materialize writes the job of input i of batch gid (its pod does, when it starts) and
// returns its ID: the arguments (inline when small), the environment, the spec and, last,
// the handle. It does nothing to a job already written, so a restarted pod repeats it
// safely; a job that was removed is ErrNotSubmitted.
func Materialize(ctx context.Context, st *store.Store, gid string, i int) (string, error) {
	id := job.ChildID(gid, i)
	if ok, err := st.Exists(ctx, store.HandleKey(id)); err != nil || ok {
		return id, err
	}
	if gone, err := Gone(ctx, st, gid, i); err != nil {
		return "", err
	} else if gone {
		return "", fmt.Errorf("batch %s input %d: %w (its job %s was cleaned up before it started)", gid, i, ErrNotSubmitted, id)
	}
	t, err := ReadTemplate(ctx, st, gid)
	if err != nil {
		return "", err
	}
	args, err := ReadInput(ctx, st, gid, i)
	if err != nil {
		return "", err
	}
	spec := *t.Spec
	spec.JobID = id
	spec.Data = job.DataFor(t.Spec.Data, args) // its own input's Data, and the volumes
	h := t.ChildHandle(gid, i)
	spec.OutputDir = h.OutputDir
	if len(args) <= job.InlineArgs {
		spec.ArgsInline = args
	} else {
		sum := sha256.Sum256(args)
		spec.Args = &job.BlobRef{Key: store.ArgsKey(id), SHA256: hex.EncodeToString(sum[:]), Size: int64(len(args))}
		if err := st.Put(ctx, store.ArgsKey(id), args); err != nil {
			return "", err
		}
	}
	env, err := ReadEnv(ctx, st, gid, t)
	if err != nil {
		return "", err
	}
	if len(env) > 0 {
		b, _ := json.Marshal(env)
		if err := st.Put(ctx, store.EnvKey(id), b); err != nil {
			return "", err
		}
	}
	if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
		return "", err
	}
	return id, st.Put(ctx, store.HandleKey(id), h.Encode())
}

// ReadInput reads input i of a batch with derived children: two ranged reads.
func ReadInput(ctx context.Context, st *store.Store, gid string, i int) ([]byte, error) {
	key := store.GroupInputsKey(gid)
	head, err := st.GetRange(ctx, key, 0, 16)
	if err != nil {
		return nil, err
	}
	if len(head) != 16 || string(head[:8]) != inputsMagic {
		return nil, fmt.Errorf("batch %s: inputs.bin is not an inputs file", gid)
	}
	n := binary.BigEndian.Uint64(head[8:])
	if i < 0 || uint64(i) >= n {
		return nil, fmt.Errorf("batch %s has %d inputs, not %d", gid, n, i+1)
	}
	offs, err := st.GetRange(ctx, key, 16+8*int64(i), 16)
	if err != nil {
		return nil, err
	}
	if len(offs) != 16 {
		return nil, fmt.Errorf("batch %s: inputs.bin is truncated", gid)
	}
	from, to := binary.BigEndian.Uint64(offs), binary.BigEndian.Uint64(offs[8:])
	if to < from || to-from > 1<<34 {
		return nil, fmt.Errorf("batch %s: inputs.bin is damaged at input %d", gid, i)
	}
	start := 16 + 8*(int64(n)+1) + int64(from)
	b, err := st.GetRange(ctx, key, start, int64(to-from))
	if err != nil {
		return nil, err
	}
	if uint64(len(b)) != to-from {
		return nil, fmt.Errorf("batch %s: inputs.bin is truncated at input %d", gid, i)
	}
	return b, nil
}

// Inputs is a whole inputs.bin in memory (a worker that runs many of a batch's inputs
// reads it once).
type Inputs struct {
	raw []byte
	n   uint64
}

// ParseInputs checks raw's header: an inputs file of n inputs.
func ParseInputs(raw []byte) (*Inputs, error) {
	if len(raw) < 16 || string(raw[:8]) != inputsMagic {
		return nil, errors.New("inputs.bin is not an inputs file")
	}
	n := binary.BigEndian.Uint64(raw[8:16])
	if n > uint64(len(raw)-16)/8 {
		return nil, fmt.Errorf("inputs.bin is truncated: its table of %d inputs does not fit", n)
	}
	return &Inputs{raw: raw, n: n}, nil
}

// Len is the number of inputs.
func (in *Inputs) Len() int { return int(in.n) }

// At returns input i, the same bytes ReadInput reads from the store.
func (in *Inputs) At(i int) ([]byte, error) {
	if i < 0 || uint64(i) >= in.n {
		return nil, fmt.Errorf("there are %d inputs, not %d", in.n, i+1)
	}
	table := 16 + 8*(in.n+1)
	if table > uint64(len(in.raw)) {
		return nil, errors.New("inputs.bin is truncated")
	}
	from := binary.BigEndian.Uint64(in.raw[16+8*i:])
	to := binary.BigEndian.Uint64(in.raw[16+8*(i+1):])
	if to < from || to-from > 1<<34 {
		return nil, fmt.Errorf("inputs.bin is damaged at input %d", i)
	}
	if to == from {
		return []byte{}, nil // an empty input (one the SDK could not pickle)
	}
	if from > uint64(len(in.raw))-table || to > uint64(len(in.raw))-table {
		return nil, fmt.Errorf("inputs.bin is truncated at input %d", i)
	}
	return in.raw[table+from : table+to], nil
}
