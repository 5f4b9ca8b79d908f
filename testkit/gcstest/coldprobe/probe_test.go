// Package coldprobe is a test package whose TestMain starts the GCS emulator before
// flags are parsed, as backend/kubernetes does through kubetest. gcstest's
// TestColdCacheFromTestMain runs it with an empty tools cache: the path that panicked
// on a fresh machine ("testing: Verbose called before Parse").
package coldprobe

import (
	"fmt"
	"os"
	"testing"

	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

func TestMain(m *testing.M) {
	if os.Getenv("KINETIC_COLD_PROBE") == "1" {
		s, err := gcstest.Launch("127.0.0.1")
		if err != nil {
			fmt.Fprintln(os.Stderr, "coldprobe:", err)
			os.Exit(3)
		}
		fmt.Println("coldprobe: emulator answered at", s.URL())
		s.Stop()
	}
	os.Exit(m.Run())
}

func TestNothing(t *testing.T) {}
