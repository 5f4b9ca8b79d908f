package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/kinetic-run/kinetic/job"
)

func openFileStore(t testing.TB, dir string) *Store {
	t.Helper()
	st, err := Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func envLine(i int) []byte {
	return (&job.Envelope{Success: true, Host: "0", ValueRepr: strconv.Itoa(i)}).Encode()
}

// An envelope appended to a worker's log reads as the child's result.json, to this Store
// and to another (another process); a line being written is not there yet; a removal in
// one is seen by the other, and listings leave the removed out.
func TestEndsLogReadsAsEnvelopes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := openFileStore(t, dir), openFileStore(t, dir)
	gid := job.NewGroupID()
	l, err := a.OpenEndsLog(gid, "0")
	if err != nil || l == nil {
		t.Fatal(l, err)
	}
	for _, i := range []int{3, 0, 7} {
		if err := l.Append(i, envLine(i)); err != nil {
			t.Fatal(err)
		}
	}
	// A line cut short (a worker killed in its write) is not an envelope.
	f, _ := os.OpenFile(filepath.Join(l.dir, l.stem+endsOpen), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`5 {"success":tr`)
	f.Close()
	for _, st := range []*Store{a, b} {
		for _, i := range []int{3, 0, 7} {
			raw, err := st.Get(ctx, EnvelopeKey(job.ChildID(gid, i)))
			if err != nil {
				t.Fatal(err)
			}
			if env, err := job.DecodeEnvelope(raw); err != nil || env.ValueRepr != strconv.Itoa(i) {
				t.Fatalf("input %d: %q, %v", i, raw, err)
			}
			if ok, err := st.Exists(ctx, EnvelopeKey(job.ChildID(gid, i))); !ok || err != nil {
				t.Fatalf("input %d: Exists %v, %v", i, ok, err)
			}
		}
		if _, err := st.Get(ctx, EnvelopeKey(job.ChildID(gid, 5))); !IsNotFound(err) {
			t.Fatalf("a torn line read as an envelope: %v", err)
		}
	}
	// The torn line is ended by the next append, which reads whole.
	l.torn = true
	if err := l.Append(5, envLine(5)); err != nil {
		t.Fatal(err)
	}
	if raw, err := b.Get(ctx, EnvelopeKey(job.ChildID(gid, 5))); err != nil || string(raw)+"\n" != string(envLine(5)) {
		t.Fatalf("after a torn line: %q, %v", raw, err)
	}
	if ok, err := a.Remove(ctx, EnvelopeKey(job.ChildID(gid, 3))); !ok || err != nil {
		t.Fatalf("Remove: %v, %v", ok, err)
	}
	if ok, _ := a.Remove(ctx, EnvelopeKey(job.ChildID(gid, 3))); ok {
		t.Fatal("removed twice")
	}
	for _, st := range []*Store{a, b} {
		if _, err := st.Get(ctx, EnvelopeKey(job.ChildID(gid, 3))); !IsNotFound(err) {
			t.Fatalf("a removed envelope still reads: %v", err)
		}
		if ok, _ := st.Exists(ctx, EnvelopeKey(job.ChildID(gid, 3))); ok {
			t.Fatal("a removed envelope still exists")
		}
	}
	ids, err := b.ResultChildren(ctx, gid)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	want := []string{job.ChildID(gid, 0), job.ChildID(gid, 5), job.ChildID(gid, 7)}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("ResultChildren = %v, want %v", ids, want)
	}
	l.Close()
}

// A log goes once every envelope in it was removed and its worker closed it, whichever
// comes last; one with an envelope left stays.
func TestEndsLogDeletedWhenAllRemoved(t *testing.T) {
	ctx := context.Background()
	for _, closeFirst := range []bool{false, true} {
		dir := t.TempDir()
		st := openFileStore(t, dir)
		gid := job.NewGroupID()
		l1, _ := st.OpenEndsLog(gid, "0")
		l2, _ := st.OpenEndsLog(gid, "1")
		l1.Append(0, envLine(0))
		l1.Append(1, envLine(1))
		l2.Append(2, envLine(2))
		if closeFirst {
			l1.Close()
			l2.Close()
		}
		for _, i := range []int{0, 1} {
			if ok, err := st.Remove(ctx, EnvelopeKey(job.ChildID(gid, i))); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
		if !closeFirst {
			l1.Close()
			l2.Close()
		}
		ents, _ := os.ReadDir(st.endsDir(gid))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if want := []string{l2.stem + endsSealed, endsRemoved}; !slices.Equal(names, want) {
			t.Errorf("closeFirst=%v: ends/ holds %v, want %v", closeFirst, names, want)
		}
		if _, err := st.Get(ctx, EnvelopeKey(job.ChildID(gid, 2))); err != nil {
			t.Errorf("closeFirst=%v: the envelope left: %v", closeFirst, err)
		}
	}
}

// A batch removed under a Store that read its logs reads as removed: nothing is served
// from what was read before.
func TestEndsOfRemovedBatch(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openFileStore(t, dir)
	gid := job.NewGroupID()
	l, _ := st.OpenEndsLog(gid, "0")
	l.Append(0, envLine(0))
	if _, err := st.Get(ctx, EnvelopeKey(job.ChildID(gid, 0))); err != nil {
		t.Fatal(err)
	}
	if err := st.DeletePrefix(ctx, "groups/"+gid+"/"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, EnvelopeKey(job.ChildID(gid, 0))); !IsNotFound(err) {
		t.Fatalf("an envelope of a removed batch: %v", err)
	}
	if ok, err := st.Remove(ctx, EnvelopeKey(job.ChildID(gid, 0))); ok || err != nil {
		t.Fatalf("Remove of a removed batch's envelope: %v, %v", ok, err)
	}
	l.Close()
}

// A full disk fails the append; nothing of it reads as an envelope, and the next one,
// once there is room, reads whole.
func TestEndsLogFullDisk(t *testing.T) {
	ctx := context.Background()
	st := openFileStore(t, t.TempDir())
	gid := job.NewGroupID()
	l, _ := st.OpenEndsLog(gid, "0")
	defer l.Close()
	good := l.fd
	full, err := syscall.Open("/dev/full", syscall.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	l.fd = full
	if err := l.Append(1, envLine(1)); err == nil || !os.IsExist(err) && !errorsIsENOSPC(err) {
		t.Fatalf("append on a full disk: %v", err)
	}
	syscall.Close(full)
	l.fd = good
	if _, err := st.Get(ctx, EnvelopeKey(job.ChildID(gid, 1))); !IsNotFound(err) {
		t.Fatalf("a failed append reads: %v", err)
	}
	if err := l.Append(1, envLine(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, EnvelopeKey(job.ChildID(gid, 1))); err != nil {
		t.Fatal(err)
	}
}

func errorsIsENOSPC(err error) bool {
	pe, ok := err.(*os.PathError)
	return ok && pe.Err == syscall.ENOSPC
}

// FuzzEndsLog reads any bytes as a log: no panic, and an input reads as the text of the
// last complete line that names it, or not at all.
func FuzzEndsLog(f *testing.F) {
	f.Add([]byte("0 {\"success\":true}\n1 {}\n"), 1)
	f.Add([]byte("12 x\n12 y\n-1 z\n\n 3 q\n4\n5 "), 12)
	f.Add([]byte("007 a\n7 b"), 7)
	f.Fuzz(func(t *testing.T, log []byte, i int) {
		if i < 0 {
			i = -i
		}
		dir := t.TempDir()
		st := openFileStore(t, dir)
		gid := job.NewGroupID()
		if err := st.PrepareEnds(gid); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(st.endsDir(gid), "0-x"+endsSealed), log, 0o600); err != nil {
			t.Fatal(err)
		}
		want, found := "", false
		for rest := log; ; {
			k := slices.Index(rest, '\n')
			if k < 0 {
				break
			}
			line := string(rest[:k])
			for sp := 0; sp < len(line); sp++ {
				if line[sp] == ' ' {
					if n, err := strconv.Atoi(line[:sp]); err == nil && n == i && sp > 0 {
						want, found = line[sp+1:], true
					}
					break
				}
			}
			rest = rest[k+1:]
		}
		raw, err := st.Get(context.Background(), EnvelopeKey(job.ChildID(gid, i)))
		switch {
		case found && (err != nil || string(raw) != want):
			t.Fatalf("input %d: %q, %v; want %q", i, raw, err, want)
		case !found && !IsNotFound(err):
			t.Fatalf("input %d: %q, %v; want none", i, raw, err)
		}
	})
}
