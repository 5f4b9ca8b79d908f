package outdir

import (
	"os"
	"path/filepath"
	"testing"
)

// Where renameat2's RENAME_NOREPLACE is refused, os.Rename does the same: a spare goes
// into place, and never over a directory an earlier attempt left.
func TestRenameWithoutNoReplace(t *testing.T) {
	for _, refused := range []bool{false, true} {
		noReplace.Store(refused)
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.Mkdir(a, 0o700)
		os.Mkdir(b, 0o700)
		if err := rename(a, b); !os.IsExist(err) {
			t.Errorf("refused=%v: a directory renamed over another: %v", refused, err)
		}
		if err := rename(a, filepath.Join(dir, "c")); err != nil {
			t.Errorf("refused=%v: %v", refused, err)
		}
		if err := rename(a, filepath.Join(dir, "d")); !os.IsNotExist(err) {
			t.Errorf("refused=%v: a missing spare renamed: %v", refused, err)
		}
	}
	noReplace.Store(false)
}
