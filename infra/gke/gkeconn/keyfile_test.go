package gkeconn

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnusableKeyFile: GOOGLE_APPLICATION_CREDENTIALS naming a file that is not a key is
// ErrNoCredentials, said in a person's words (gcpkey.Problem), not the JSON decoder's.
func TestUnusableKeyFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.json")
	os.WriteFile(p, []byte("{not json"), 0o600)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", p)
	t.Setenv("HOME", dir)
	_, err := (&Connector{}).credentials(t.Context())
	if !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "is not a JSON object") || strings.Contains(err.Error(), "invalid character") {
		t.Errorf("credentials with a garbage key file: %v", err)
	}
}
