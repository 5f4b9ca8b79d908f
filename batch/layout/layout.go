// Package layout is the store layout of a batch (groups/ID/ in the store): the
// manifest, the children's entries, and the resolution of a member of a backend's group
// unit (a pod of an Indexed Job) to the job it runs. It sits under store, beside the job
// layout, and imports only job and store: the runner in a pod and the backends that run
// a batch's members link it without package batch or the engine, which build on it.
package layout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/backoff"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Manifest is groups/{id}/manifest.json.
type Manifest struct {
	GroupID       string            `json:"group_id"`
	Name          string            `json:"name,omitempty"`
	Tags          map[string]string `json:"tags"`
	FuncName      string            `json:"func_name"`
	Accelerator   string            `json:"accelerator"`
	Backend       string            `json:"backend"`
	Store         string            `json:"store"`
	CreatedAt     string            `json:"created_at"`
	TotalExpected int               `json:"total_expected"`
	MaxConcurrent int               `json:"max_concurrent"`
	Retries       int               `json:"retries"`
	FailFast      bool              `json:"fail_fast"`
	// Derived: the first attempts of the children are derived from the batch's template
	// (derived.go), not written one by one; Children holds only what differs from that
	// (retries, submission failures).
	Derived bool `json:"derived,omitempty"`
	// SubmissionComplete is set once every input was submitted (or failed to be).
	SubmissionComplete bool `json:"submission_complete"`
	// Stopped says why submission stopped early ("fail_fast", "cancelled"), if it did.
	Stopped string `json:"stopped,omitempty"`
	// Settled is set once the submitter has no more retries to make.
	Settled bool `json:"settled,omitempty"`
	// Heartbeat is when the submitter last saved the manifest; while submitting it
	// saves at least every HeartbeatEvery, so a reader can tell a submitter that died
	// (kill -9, a closed laptop) from one still at work (SubmitterLost).
	Heartbeat time.Time `json:"heartbeat,omitzero"`
	Children  []Child   `json:"children"`
}

// HeartbeatEvery is how often a submitting process saves the manifest at least.
const HeartbeatEvery = 3 * time.Second

// SubmitterLostAfter is how long a manifest of an unfinished submission may go unsaved
// before its submitter counts as gone: ten heartbeats, for a machine under load.
const SubmitterLostAfter = 10 * HeartbeatEvery

// SubmitterLost reports whether submission stopped without finishing: the submitter
// has not saved the manifest for SubmitterLostAfter. A manifest without a heartbeat
// (written by an older kinetic) is never judged lost.
func (m *Manifest) SubmitterLost(now time.Time) bool {
	return !m.SubmissionComplete && !m.Heartbeat.IsZero() && now.Sub(m.Heartbeat) > SubmitterLostAfter
}

// MarkLost completes, in memory, the manifest of a lost submitter (call after merging
// the children it wrote): every input it never submitted becomes a submission failure,
// so every reader sees the batch end at once instead of waiting for ever.
func (m *Manifest) MarkLost() {
	have := make(map[int]bool, len(m.Children))
	for _, c := range m.Children {
		have[c.Index] = true
	}
	reason := fmt.Sprintf("never submitted: the process submitting the batch stopped (last seen %s) before reaching this input; submit it again", m.Heartbeat.Format(time.RFC3339))
	for i := 0; i < m.TotalExpected; i++ {
		if !have[i] {
			m.Children = append(m.Children, Child{Index: i, SubmissionError: reason})
		}
	}
	sort.Slice(m.Children, func(a, b int) bool { return m.Children[a].Index < m.Children[b].Index })
	m.SubmissionComplete, m.Settled = true, true
	if m.Stopped == "" {
		m.Stopped = "submitter lost"
	}
}

// Child is one input of a batch. Its job is the last of its attempts.
type Child struct {
	Index           int      `json:"index"`
	JobID           string   `json:"job_id,omitempty"`
	Attempts        []string `json:"attempts,omitempty"`
	SubmissionError string   `json:"submission_error,omitempty"`
}

// Prefix holds everything of batch gid in the store (not its children's jobs).
func Prefix(gid string) string { return "groups/" + gid + "/" }

// ManifestKey is where the manifest of batch gid is.
func ManifestKey(gid string) string { return store.GroupManifestKey(gid) }

// ChildKey is where child i's entry is written before its job is submitted, so a
// submitter killed at any moment leaves every submitted child findable.
func ChildKey(gid string, i int) string { return fmt.Sprintf("%schildren/%08d.json", Prefix(gid), i) }

// ChildrenPrefix holds the children's entries of batch gid.
func ChildrenPrefix(gid string) string { return Prefix(gid) + "children/" }

// WriteChild records child c of batch gid (one atomic object write).
func WriteChild(ctx context.Context, st *store.Store, gid string, c Child) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return st.Put(ctx, ChildKey(gid, c.Index), b)
}

// ReadManifest reads the manifest of batch gid as last saved, with the derived first
// attempts of a Derived batch filled in (a store not-found error if there is none).
func ReadManifest(ctx context.Context, st *store.Store, gid string) (*Manifest, error) {
	raw, err := st.Get(ctx, ManifestKey(gid))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil || m.GroupID != gid {
		if err == nil {
			err = fmt.Errorf("it names batch %s", errs.Quote(m.GroupID))
		}
		return nil, Damaged(gid, "manifest.json", raw, err)
	}
	if m.Derived {
		m.deriveChildren()
	}
	return &m, nil
}

// Damaged is the error for the object file of batch gid (e.g. "manifest.json") that
// exists and could not be decoded because of cause: it names the object in the store and
// the command that removes the batch, and wraps job.ErrDamaged.
func Damaged(gid, file string, raw []byte, cause error) error {
	return job.DamagedError(fmt.Sprintf("batch %s is damaged: %s%s %s; `kinetic batch cleanup %s` removes the batch and its jobs", gid, Prefix(gid), file, job.Describe(raw, cause), gid))
}

// Missing is the error for the object file of batch gid that is gone while other
// objects of the batch are there (why says which).
func Missing(gid, file, why string) error {
	return job.DamagedError(fmt.Sprintf("batch %s is damaged: its %s%s is missing (%s); `kinetic batch cleanup %s` removes the batch and its jobs", gid, Prefix(gid), file, why, gid))
}

// MissingManifest returns a Missing error when batch gid has no manifest but other
// objects (nil when it has none, or its manifest). A derived batch writes its template
// and inputs just before its manifest, and a cleanup removes the objects in no
// particular order, so what is there is looked at again a moment later before the batch
// is called damaged.
func MissingManifest(ctx context.Context, st *store.Store, gid string) error {
	look := func() (string, error) {
		objs, err := st.List(ctx, Prefix(gid))
		if err != nil || len(objs) == 0 {
			return "", err
		}
		names := make([]string, 0, 3)
		for _, o := range objs {
			name := strings.TrimPrefix(o.Key, Prefix(gid))
			if name == "manifest.json" {
				return "", nil // written meanwhile
			}
			if len(names) < 3 {
				names = append(names, name)
			}
		}
		return strings.Join(names, ", "), nil
	}
	found, err := look()
	if err != nil || found == "" {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(300 * time.Millisecond):
	}
	if found, err = look(); err != nil || found == "" {
		return err
	}
	return Missing(gid, "manifest.json", "the batch's other objects are there: "+found)
}

// MergeChildren adds to m the children written one by one since it was saved. cache
// holds the entries already read, so each is read once across calls.
func MergeChildren(ctx context.Context, st *store.Store, m *Manifest, cache map[int]Child) error {
	prefix := ChildrenPrefix(m.GroupID)
	objs, err := st.List(ctx, prefix)
	if err != nil {
		return err
	}
	have := map[int]bool{}
	for _, c := range m.Children {
		if c.JobID != "" || c.SubmissionError != "" {
			have[c.Index] = true
		}
	}
	for _, o := range objs {
		name := o.Key[len(prefix):]
		if len(name) <= len(".json") {
			continue
		}
		i, err := strconv.Atoi(name[:len(name)-len(".json")])
		if err != nil || i < 0 || have[i] {
			continue
		}
		c, ok := cache[i]
		if !ok {
			raw, err := st.Get(ctx, o.Key)
			if err != nil {
				continue
			}
			if json.Unmarshal(raw, &c) != nil {
				continue
			}
			cache[i] = c
		}
		for len(m.Children) <= i {
			m.Children = append(m.Children, Child{Index: len(m.Children)})
		}
		m.Children[i] = c
	}
	sort.Slice(m.Children, func(a, b int) bool { return m.Children[a].Index < m.Children[b].Index })
	if m.Derived {
		m.deriveChildren()
	}
	return nil
}

// deriveChildren gives every input without an entry its derived first attempt.
func (m *Manifest) deriveChildren() {
	for len(m.Children) < m.TotalExpected {
		m.Children = append(m.Children, Child{Index: len(m.Children)})
	}
	for i := range m.Children {
		if c := &m.Children[i]; c.JobID == "" && c.SubmissionError == "" {
			id := job.ChildID(m.GroupID, c.Index)
			c.JobID, c.Attempts = id, []string{id}
		}
	}
}

// ErrNotSubmitted means a batch index was never submitted (the batch was stopped).
var ErrNotSubmitted = errs.New(errs.NotFound, "batch input not submitted")

// ResolveMember finds the job that index i of batch gid runs as its first attempt: what
// a member of a backend's group unit (a pod of an Indexed Job) runs. Members may start
// before the submitter has written their child, so it waits, up to wait, for the
// child's entry and then its handle. If the batch finished submitting without the index
// (fail_fast, cancel), it returns ErrNotSubmitted.
func ResolveMember(ctx context.Context, st *store.Store, gid string, i int, wait time.Duration) (string, error) {
	deadline := time.Now().Add(wait)
	pause := backoff.New(100*time.Millisecond, 2*time.Second)
	for {
		id, err := memberJob(ctx, st, gid, i)
		if id != "" || (err != nil && !store.IsNotFound(err)) {
			return id, err
		}
		m, merr := ReadManifest(ctx, st, gid)
		if merr == nil && m.Derived {
			// Nothing was written for this input: this pod writes its job.
			return Materialize(ctx, st, gid, i)
		}
		if merr == nil && (m.SubmissionComplete || m.SubmitterLost(time.Now())) {
			if !m.SubmissionComplete {
				m.Stopped = "submitter lost"
			}
			if id, _ := memberJob(ctx, st, gid, i); id != "" {
				return id, nil
			}
			return "", fmt.Errorf("batch %s input %d: %w (stopped: %s)", gid, i, ErrNotSubmitted, m.Stopped)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("batch %s input %d: not written to the store within %s: its submitter stopped before reaching it", gid, i, wait)
		}
		if err := pause.Wait(ctx); err != nil {
			return "", err
		}
	}
}

// memberJob returns the first attempt of child i once its handle exists ("" before).
func memberJob(ctx context.Context, st *store.Store, gid string, i int) (string, error) {
	raw, err := st.Get(ctx, ChildKey(gid, i))
	if err != nil {
		return "", err
	}
	var c Child
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", fmt.Errorf("batch %s child %d: %w", gid, i, err)
	}
	id := c.JobID
	if len(c.Attempts) > 0 {
		id = c.Attempts[0]
	}
	if id == "" || !job.ValidName(id) {
		return "", nil
	}
	if _, err := st.Get(ctx, store.HandleKey(id)); err != nil {
		if store.IsNotFound(err) {
			return "", nil
		}
		return "", err
	}
	return id, nil
}

// Collected is one child whose result was collected and which was then cleaned up
// (BatchHandle.results(cleanup=True)): its job is gone, this record and the job's
// tombstone say it succeeded.
type Collected struct {
	JobID       string    `json:"job_id"`
	Index       string    `json:"index,omitempty"`
	CollectedAt time.Time `json:"collected_at"`
	// CollectedBy names the process that collected it (job.Tombstone.CollectedBy).
	CollectedBy string `json:"collected_by,omitempty"`
}

// CollectedPrefix holds batch gid's collection records: one object per collecting call
// (so concurrent callers never rewrite each other's), each a list of Collected.
func CollectedPrefix(gid string) string { return Prefix(gid) + "collected/" }

// RecordCollected writes one collection record of batch gid and returns its key. Records
// are numbered (rNNNNNNNNN.json), each created exclusively as one more than the highest
// number listed: a number exists only once every lower one does, so the records a
// collector lists after creating its own are every record before it, and the first
// record that lists a child is the collection that claimed it (ClaimedBy, ReadCollected).
// Records of older versions (job-ID.json) sort before every numbered one.
func RecordCollected(ctx context.Context, st *store.Store, gid string, cs []Collected) (string, error) {
	if len(cs) == 0 {
		return "", nil
	}
	b, err := json.Marshal(cs)
	if err != nil {
		return "", err
	}
	for {
		objs, err := st.List(ctx, CollectedPrefix(gid))
		if err != nil {
			return "", err
		}
		next := 1
		for _, o := range objs {
			if n, ok := recordNumber(strings.TrimPrefix(o.Key, CollectedPrefix(gid))); ok && n >= next {
				next = n + 1
			}
		}
		key := CollectedPrefix(gid) + fmt.Sprintf("r%09d.json", next)
		err = st.Create(ctx, key, b)
		if !errors.Is(err, store.ErrExists) {
			return key, err
		}
		// Another collector took that number first: list again.
		if err := ctx.Err(); err != nil {
			return "", err
		}
	}
}

// recordNumber is N of a record named rNNNNNNNNN.json.
func recordNumber(name string) (int, bool) {
	if len(name) != len("r000000000.json") || name[0] != 'r' || !strings.HasSuffix(name, ".json") {
		return 0, false
	}
	n, err := strconv.Atoi(name[1 : len(name)-len(".json")])
	return n, err == nil
}

// ReadCollected returns the children of batch gid recorded as collected, by job ID.
func ReadCollected(ctx context.Context, st *store.Store, gid string) (map[string]Collected, error) {
	objs, err := st.List(ctx, CollectedPrefix(gid))
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	cs, err := ReadCollectedKeys(ctx, st, gid, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Collected, len(cs))
	for _, c := range cs {
		if _, ok := out[c.JobID]; !ok { // the first record claimed it
			out[c.JobID] = c
		}
	}
	return out, nil
}

// ClaimedBy returns, of the children listed in the record at key, those whose first
// record it is: the ones that collection claimed. Two collections of one child at once
// both write a record; the lower number wins (RecordCollected), and only its collector
// cleans the child up. mine is what the record at key holds (the caller wrote it): it is
// not read back.
func ClaimedBy(ctx context.Context, st *store.Store, gid, key string, mine []Collected) (map[string]bool, error) {
	objs, err := st.List(ctx, CollectedPrefix(gid))
	if err != nil {
		return nil, err
	}
	first := map[string]bool{}
	for _, o := range objs {
		if o.Key > key {
			break // List is in key order: later records claim nothing of ours
		}
		cs := mine
		if o.Key != key {
			if cs, err = ReadCollectedKeys(ctx, st, gid, []string{o.Key}); err != nil {
				return nil, err
			}
		}
		for _, c := range cs {
			if _, seen := first[c.JobID]; !seen {
				first[c.JobID] = o.Key == key
			}
		}
	}
	return first, nil
}

// ReadCollectedKeys reads the collection records at keys (a record removed meanwhile,
// by a cleanup of the batch, is skipped).
func ReadCollectedKeys(ctx context.Context, st *store.Store, gid string, keys []string) ([]Collected, error) {
	var out []Collected
	for _, k := range keys {
		raw, err := st.Get(ctx, k)
		if store.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var cs []Collected
		if err := json.Unmarshal(raw, &cs); err != nil || len(raw) == 0 {
			return nil, Damaged(gid, strings.TrimPrefix(k, Prefix(gid)), raw, err)
		}
		out = append(out, cs...)
	}
	return out, nil
}
