package codeshape

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestShape holds the product code to limits.txt: the average complexity may not rise
// above the recorded one, and no function may be over MaxLines lines unless limits.txt
// names it (with its current length, so that a listed function may not grow either). A
// listed function that has become short must leave the list, so the list only shrinks.
// The goal (issue 48) is an average of at most 4.5 and an empty list.
func TestShape(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	shape, err := Measure(root)
	if err != nil {
		t.Fatal(err)
	}
	maxAvg, allowed := readLimits(t)
	avg := shape.Average()
	t.Logf("%d functions, average complexity %.2f (limit %.2f), %d over %d lines",
		len(shape.Funcs), avg, maxAvg, len(shape.Long()), MaxLines)
	if avg > maxAvg+0.005 {
		t.Errorf("average cyclomatic complexity %.2f is above the limit %.2f in limits.txt: split the functions you made branchier (go run github.com/fzipp/gocyclo/cmd/gocyclo -top 20 .)", avg, maxAvg)
	}
	seen := map[string]bool{}
	for _, f := range shape.Long() {
		key := f.File + " " + f.Name
		seen[key] = true
		was, ok := allowed[key]
		switch {
		case !ok:
			t.Errorf("%s: %s is %d lines, over %d: split it into steps", f.File, f.Name, f.Lines, MaxLines)
		case f.Lines > was:
			t.Errorf("%s: %s grew from %d to %d lines (limit %d): split it into steps", f.File, f.Name, was, f.Lines, MaxLines)
		}
	}
	for key := range allowed {
		if !seen[key] {
			t.Errorf("limits.txt lists %q, which is no longer over %d lines: remove its line", key, MaxLines)
		}
	}
	if os.Getenv("KINETIC_SHAPE_LIST") != "" {
		fmt.Printf("average %.2f\n", avg)
		for _, f := range shape.Long() {
			fmt.Printf("%s %s %d\n", f.File, f.Name, f.Lines)
		}
	}
}

func readLimits(t *testing.T) (float64, map[string]int) {
	f, err := os.Open("limits.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	avg := 0.0
	allowed := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if fields[0] == "average" && len(fields) == 2 {
			if avg, err = strconv.ParseFloat(fields[1], 64); err != nil {
				t.Fatalf("limits.txt: %q: %v", line, err)
			}
			continue
		}
		if len(fields) != 3 {
			t.Fatalf("limits.txt: %q: want FILE FUNC LINES", line)
		}
		n, err := strconv.Atoi(fields[2])
		if err != nil {
			t.Fatalf("limits.txt: %q: %v", line, err)
		}
		allowed[fields[0]+" "+fields[1]] = n
	}
	return avg, allowed
}

// TestMeasureCountsBranchesAndLines checks the measure itself on a file written here.
func TestMeasureCountsBranchesAndLines(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nfunc A(x int) int {\n\tif x > 0 && x < 9 {\n\t\treturn 1\n\t}\n\tfor i := 0; i < x; i++ {\n\t}\n\treturn 0\n}\n\ntype T struct{}\n\nfunc (t *T) B() {}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nfunc C() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shape, err := Measure(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Func{{File: "p.go", Name: "A", Lines: 8, Complexity: 4}, {File: "p.go", Name: "T.B", Lines: 1, Complexity: 1}}
	if fmt.Sprint(shape.Funcs) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", shape.Funcs, want)
	}
	if avg := shape.Average(); avg != 2.5 {
		t.Fatalf("average %v, want 2.5", avg)
	}
}
