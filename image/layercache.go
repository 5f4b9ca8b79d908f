package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// runnerLayer returns the layer holding the runner binary at RunnerPath, reused from
// cacheDir when the same binary (path, size, modification time) was layered before:
// the runner is the same in every bundled image of a version, so it is compressed once.
func runnerLayer(cacheDir, work, runner string, mt types.MediaType) (*fileLayer, error) {
	fi, err := os.Stat(runner)
	if err != nil {
		return nil, fmt.Errorf("runner binary: %w", err)
	}
	if cacheDir == "" {
		return writeLayer(filepath.Join(work, "runner.tar.gz"), []layerFile{{Target: RunnerPath, Source: runner, Mode: 0o755}}, mt)
	}
	abs, _ := filepath.Abs(runner)
	sum := sha256.Sum256([]byte(fmt.Sprintf("runner-layer/v1\n%s\n%d\n%d\n%s\n", abs, fi.Size(), fi.ModTime().UnixNano(), mt)))
	key := hex.EncodeToString(sum[:16])
	path := filepath.Join(cacheDir, "runner-"+key+".tar.gz")
	meta := path + ".json"
	type record struct {
		Digest, DiffID string
		Size           int64
	}
	if b, err := os.ReadFile(meta); err == nil {
		var r record
		if json.Unmarshal(b, &r) == nil {
			d, err1 := v1.NewHash(r.Digest)
			u, err2 := v1.NewHash(r.DiffID)
			if st, err3 := os.Stat(path); err1 == nil && err2 == nil && err3 == nil && st.Size() == r.Size {
				return &fileLayer{path: path, digest: d, diffID: u, size: r.Size, mediaType: mt}, nil
			}
		}
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(cacheDir, "runner-*.tmp")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	l, err := writeLayer(tmp.Name(), []layerFile{{Target: RunnerPath, Source: runner, Mode: 0o755}}, mt)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	l.path = path
	b, _ := json.Marshal(record{Digest: l.digest.String(), DiffID: l.diffID.String(), Size: l.size})
	if err := os.WriteFile(meta+".tmp", b, 0o644); err == nil {
		os.Rename(meta+".tmp", meta)
	}
	return l, nil
}
