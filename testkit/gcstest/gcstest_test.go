package gcstest_test

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

func TestStartCreateBucket(t *testing.T) {
	srv := gcstest.Start(t)
	srv.CreateBucket(t, "one")
	name := srv.NewBucket(t)
	resp, err := http.Get(srv.URL() + "/storage/v1/b")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Items []struct{ Name string } }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, b := range got.Items {
		seen[b.Name] = true
	}
	if !seen["one"] || !seen[name] {
		t.Fatalf("buckets = %+v, want one and %s", got.Items, name)
	}
	if srv.Endpoint() == "" || "http://"+srv.Endpoint() != srv.URL() {
		t.Fatalf("Endpoint %q, URL %q", srv.Endpoint(), srv.URL())
	}
}

// TestVersionIsTheModules: the cache directory is named after Version, and the binary is
// built from the version go.mod requires: the two must be the same.
func TestVersionIsTheModules(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", gcstest.Module).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", gcstest.Module, err)
	}
	if got := strings.TrimSpace(string(out)); got != gcstest.Version {
		t.Errorf("go.mod requires %s %s, gcstest.Version is %s: change them together", gcstest.Module, got, gcstest.Version)
	}
}
