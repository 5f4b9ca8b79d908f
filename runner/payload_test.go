package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestFetchPayloadInPlace: on a file:// store a local job reads its verified payload
// where the store keeps it (no copy per call); elsewhere it gets a copy in its
// workspace; a payload changed after upload is refused either way.
func TestFetchPayloadInPlace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	payload := []byte("pickled call")
	sum := sha256.Sum256(payload)
	ref := &job.BlobRef{Key: "jobs/job-x/payload.pkl", SHA256: hex.EncodeToString(sum[:]), Size: int64(len(payload))}
	if err := st.Put(ctx, ref.Key, payload); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	p, err := fetchPayload(ctx, st, ref, Options{Workspace: ws, InPlaceData: true})
	if err != nil || !strings.HasPrefix(p, dir) {
		t.Fatalf("in place: %q %v, want a path in the store %s", p, err, dir)
	}
	if b, _ := os.ReadFile(p); string(b) != string(payload) {
		t.Fatalf("in place: %q", b)
	}
	p, err = fetchPayload(ctx, st, ref, Options{Workspace: ws})
	if err != nil || p != filepath.Join(ws, "payload.pkl") {
		t.Fatalf("copied: %q %v", p, err)
	}
	if err := st.Put(ctx, ref.Key, []byte("changed")); err != nil {
		t.Fatal(err)
	}
	for _, inPlace := range []bool{true, false} {
		if _, err := fetchPayload(ctx, st, ref, Options{Workspace: ws, InPlaceData: inPlace}); err == nil || !strings.Contains(err.Error(), "SHA-256") {
			t.Errorf("a changed payload (in place %v): %v", inPlace, err)
		}
	}
}
