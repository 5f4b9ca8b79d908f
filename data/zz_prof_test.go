package data

import (
	"os"
	"testing"
	"time"
)

func TestZZProf(t *testing.T) {
	root := os.Getenv("ZZ_ROOT")
	if root == "" {
		t.Skip()
	}
	if _, err := ContentHash(root); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		start := time.Now()
		ContentHash(root)
		t.Logf("%.0f MB/s", 4000*128*1024/time.Since(start).Seconds()/1e6)
	}
}
