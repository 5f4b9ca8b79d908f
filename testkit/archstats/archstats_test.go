package archstats

import (
	"os"
	"strings"
	"testing"
)

// TestDocNumbers: the numbers docs/architecture.md quotes are those Measure computes
// (lines and dependency counts, within Tolerance; binary sizes are measured by the
// script only, building them here would cost minutes).
func TestDocNumbers(t *testing.T) {
	f, err := os.Open("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	measured, err := Measure("../..", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Drift(doc, measured) {
		t.Error(d)
	}
	if t.Failed() {
		t.Log("re-measure: go run ./testkit/archstats/cmd/archstats -w docs/architecture.md")
	}
}

// TestDrift: a number further off than its tolerance, or missing, is reported; one
// within it, or a doc row not measured, is not.
func TestDrift(t *testing.T) {
	doc := []Stat{{"lines engine", 2000}, {"deps job", 114}, {"size kinetic (MB)", 80}, {"lines server", 1000}}
	measured := []Stat{{"lines engine", 2090}, {"deps job", 120}, {"lines server", 1200}, {"lines batch", 10}}
	got := strings.Join(Drift(doc, measured), "\n")
	for _, want := range []string{"deps job: the doc says 114, measured 120", "lines server: the doc says 1000", "lines batch: measured 10, missing"} {
		if !strings.Contains(got, want) {
			t.Errorf("Drift does not report %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "lines engine") || strings.Contains(got, "size") {
		t.Errorf("Drift reports what is within tolerance or not measured:\n%s", got)
	}
	// The table reads back as written.
	back, err := Parse(strings.NewReader(BeginMarker + "\n" + Table(measured) + EndMarker + "\n"))
	if err != nil || len(back) != len(measured) || back[0] != measured[0] {
		t.Errorf("Parse(Table) = %v, %v", back, err)
	}
}

// MaxDocLines is the longest docs/architecture.md may be (issue 48: "how it is now in
// under 200 lines"); the long descriptions belong in docs/packages.md and the area docs.
const MaxDocLines = 199

// TestDocLength: docs/architecture.md stays under 200 lines.
func TestDocLength(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > MaxDocLines {
		t.Errorf("docs/architecture.md has %d lines, over %d: move details to docs/packages.md or the area's doc", n, MaxDocLines)
	}
}
