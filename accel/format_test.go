package accel

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteJSONRoundTrips(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, Catalog()); err != nil {
		t.Fatal(err)
	}
	var got []Spec
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Catalog(), got); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}

	buf.Reset()
	if err := WriteJSON(&buf, nil); err != nil || strings.TrimSpace(buf.String()) != "[]" {
		t.Errorf("WriteJSON(nil) = %q, %v; want []", buf.String(), err)
	}
}

func TestWriteSpecJSON(t *testing.T) {
	want := mustParse(t, "tpu-v6e-16:spot")
	var buf bytes.Buffer
	if err := WriteSpecJSON(&buf, want); err != nil {
		t.Fatal(err)
	}
	var got Spec
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestWriteSpec(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSpec(&buf, mustParse(t, "v6e:spot")); err != nil {
		t.Fatal(err)
	}
	want := `name:           tpu-v6e-8:spot
kind:           tpu
family:         v6e
chips:          8
hosts:          2 (multi-host: one pod per host)
topology:       2x4
machine type:   ct6e-standard-4t
spot:           true
resource:       google.com/tpu: 4 per host
node selector:  cloud.google.com/gke-spot=true
node selector:  cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice
node selector:  cloud.google.com/gke-tpu-topology=2x4
toleration:     google.com/tpu Exists NoSchedule
toleration:     cloud.google.com/gke-spot Equal true NoSchedule
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

var update = flag.Bool("update", false, "rewrite the catalog block in docs/accelerators.md")

const docsPath = "../docs/accelerators.md"
const beginMark, endMark = "<!-- catalog:begin -->\n", "<!-- catalog:end -->"

// The catalog in the docs is generated; this keeps it from drifting from the code.
// Regenerate with: go test ./accel -run TestDocsCatalog -update
func TestDocsCatalog(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), beginMark)
	_, after, ok2 := strings.Cut(rest, endMark)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the %q ... %q markers", docsPath, beginMark, endMark)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, Catalog()); err != nil {
		t.Fatal(err)
	}
	want := before + beginMark + "```text\n" + table.String() + "```\n" + endMark + after
	if *update {
		if err := os.WriteFile(docsPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, string(doc)); diff != "" {
		t.Errorf("%s is stale; run go test ./accel -run TestDocsCatalog -update (-want +got):\n%s", docsPath, diff)
	}
}
