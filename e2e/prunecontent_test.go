package e2e

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPruneContent: kinetic prune removes the content blobs that no job in the store
// references any more (a job cleaned up), keeps those of a running job, and keeps a
// blob younger than the grace period (a submission in flight uploads before it writes
// its spec); --dry-run removes nothing (issue 46).
func TestPruneContent(t *testing.T) {
	e := newEnv(t)
	blobOf := func(name string) string {
		b := make([]byte, 2<<20) // above pack.DefaultLargeFileSize: a blob of its own
		rand.Read(b)
		if err := os.WriteFile(filepath.Join(e.dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		return filepath.Join(e.store, "blobs", "sha256", hex.EncodeToString(sum[:]))
	}
	gone := blobOf("gone.bin")
	ended := e.submitAsync(t, "sh", "-c", "exit 0")
	e.waitStatus(t, ended, "SUCCEEDED")
	if r := e.run("jobs", "cleanup", ended); r.code != 0 {
		t.Fatalf("cleanup: %d %s", r.code, r.stderr)
	}
	os.Remove(filepath.Join(e.dir, "gone.bin"))
	kept := blobOf("kept.bin")
	running := e.submitAsync(t, "sh", "-c", "sleep 300")
	e.waitStatus(t, running, "RUNNING")
	defer e.run("jobs", "cancel", running)
	// Everything written two hours ago, but one blob nobody references, written now.
	old := time.Now().Add(-2 * time.Hour)
	filepath.WalkDir(filepath.Join(e.store, "blobs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			os.Chtimes(p, old, old)
		}
		return nil
	})
	young := filepath.Join(e.store, "blobs", "sha256", strings.Repeat("ab", 32))
	os.WriteFile(young, []byte("a submission in flight"), 0o644)
	for _, p := range []string{gone, kept} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("test setup: %v", err)
		}
	}

	dry := e.run("prune", "--older-than", "1s", "--dry-run")
	if dry.code != 0 || !strings.Contains(dry.stdout, "blob") || !strings.Contains(dry.stdout, "would free") {
		t.Fatalf("prune --dry-run: %d\n%s%s", dry.code, dry.stdout, dry.stderr)
	}
	if _, err := os.Stat(gone); err != nil {
		t.Fatal("--dry-run removed a blob")
	}

	r := e.run("prune", "--older-than", "1s", "--json")
	var got struct {
		Freed []struct {
			Kind, Path string
			Bytes      int64
		}
		Bytes int64
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); r.code != 0 || err != nil {
		t.Fatalf("prune --json: %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	var blobs int64
	for _, f := range got.Freed {
		if f.Kind == "blob" {
			blobs += f.Bytes
			if strings.HasSuffix(f.Path, filepath.Base(kept)) || strings.HasSuffix(f.Path, filepath.Base(young)) {
				t.Errorf("prune reports removing %s", f.Path)
			}
		}
	}
	if blobs < 2<<20 {
		t.Errorf("prune freed %d bytes of blobs, not the cleaned-up job's 2 MiB file: %+v", blobs, got)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the cleaned-up job's blob is still there: %v", err)
	}
	for _, p := range []string{kept, young} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("prune removed a blob it must keep: %v", err)
		}
	}
	if s := e.statusJSON(t, running)["status"]; s != "RUNNING" {
		t.Errorf("the running job is %v after prune", s)
	}
	// A second prune has nothing of that kind left.
	if r := e.run("prune", "--older-than", "1s"); r.code != 0 || strings.Contains(r.stdout, " blob") {
		t.Errorf("a second prune: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
