package config

import (
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/config/storeschemes"
	_ "github.com/kinetic-run/kinetic/store"     // file://, mem://
	_ "github.com/kinetic-run/kinetic/store/gcs" // gs://
	_ "github.com/kinetic-run/kinetic/store/s3"  // s3://
)

// TestStoreSchemesFromDrivers: the store setting accepts the schemes whose drivers are
// linked (store/driver registers them in config/storeschemes) and runs their own checks:
// none is listed in config.
func TestStoreSchemesFromDrivers(t *testing.T) {
	if got := strings.Join(storeschemes.List(), " "); got != "file gs mem s3" {
		t.Fatalf("schemes = %q, want the four drivers linked by this test", got)
	}
	for v, want := range map[string]string{
		"gs://b/p":     "",
		"s3://b":       "",
		"mem://":       "",
		"file:///x":    "",
		"s3://":        "needs a bucket",
		"gs://u:pw@b":  "credentials do not belong",
		"file://rel/x": "absolute path",
		"azblob://c":   `unsupported scheme "azblob": must be one of file://, gs://, mem://, s3://`,
	} {
		_, err := checkStore(v)
		if (err == nil) != (want == "") || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("checkStore(%q) = %v, want %q", v, err, want)
		}
	}
}
