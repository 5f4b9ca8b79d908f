package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitArgs(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		pos  []string
		kw   map[string]string
		err  string
	}{
		"positional only":      {args: []string{"1", "adam"}, pos: []string{"1", "adam"}},
		"keywords":             {args: []string{"0.1", "steps=3", "opt='adam'"}, pos: []string{"0.1"}, kw: map[string]string{"steps": "3", "opt": "'adam'"}},
		"empty value":          {args: []string{"name="}, kw: map[string]string{"name": ""}},
		"value holding =":      {args: []string{"expr=a=b"}, kw: map[string]string{"expr": "a=b"}},
		"a literal holding =":  {args: []string{"'a=b'"}, pos: []string{"'a=b'"}},
		"not a name":           {args: []string{"1x=2", "--x=1"}, pos: []string{"1x=2", "--x=1"}},
		"positional after":     {args: []string{"steps=3", "0.1"}, err: `argument 2 ("0.1") comes after a keyword argument`},
		"keyword given twice":  {args: []string{"a=1", "a=2"}, err: "keyword argument a given twice"},
		"unicode name is kept": {args: []string{"é=1"}, pos: []string{"é=1"}},
	} {
		t.Run(name, func(t *testing.T) {
			pos, kw, err := splitArgs(tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !IsUsage(err) {
					t.Fatalf("error %v, want a usage error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.pos, pos); diff != "" {
				t.Errorf("positional (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.kw, kw); diff != "" {
				t.Errorf("keywords (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzSplitArgs: any arguments split without a panic, every argument lands somewhere
// exactly once, and every keyword is a Python name.
func FuzzSplitArgs(f *testing.F) {
	f.Add("1", "steps=3", "x")
	f.Add("a=1", "a=2", "")
	f.Add("'a=b'", "=", "_=_")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		args := []string{a, b, c}
		pos, kw, err := splitArgs(args)
		if err != nil {
			return
		}
		if len(pos)+len(kw) != len(args) {
			t.Fatalf("%q: %d positional + %d keywords", args, len(pos), len(kw))
		}
		for k := range kw {
			if !kwArg.MatchString(k + "=") {
				t.Fatalf("keyword %q is not a name", k)
			}
		}
	})
}

// TestCheckEntry: FUNC is looked for in FILE with Python's ast, without importing it;
// a typo is refused with the closest names, and whatever cannot be judged statically
// (star imports, globals(), inherited methods, a file that does not parse) is let through.
func TestCheckEntry(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(src), 0o644)
		return p
	}
	plain := write("plain.py", "import os\nraise SystemExit('imported!')\ndef train(lr):\n    pass\nclass Trainer:\n    def fit(self):\n        pass\n    steps = 3\nmain = train\nif True:\n    def late():\n        pass\n")
	star := write("star.py", "from os.path import *\n")
	dyn := write("dyn.py", "globals()['made'] = lambda: 1\n")
	sub := write("sub.py", "class Base:\n    def fit(self): pass\nclass Child(Base):\n    pass\n")
	bad := write("bad.py", "def f(:\n")
	for name, tc := range map[string]struct {
		file, fn, err string
	}{
		"a function":                 {plain, "train", ""},
		"an assigned name":           {plain, "main", ""},
		"nested in if":               {plain, "late", ""},
		"a method":                   {plain, "Trainer.fit", ""},
		"an imported module":         {plain, "os.getcwd", ""},
		"a typo":                     {plain, "trian", "has no function 'trian'; did you mean train?"},
		"nothing close":              {plain, "zzzzzz", "(it has Trainer, late, train)"},
		"a method typo":              {plain, "Trainer.fti", "has no function 'Trainer.fti'; did you mean Trainer.fit?"},
		"a star import":              {star, "anything", ""},
		"globals()":                  {dyn, "made", ""},
		"an inherited method":        {sub, "Child.fit", ""},
		"a file that fails to parse": {bad, "f", ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := checkEntry(context.Background(), py, tc.file, tc.fn)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !IsUsage(err) {
				t.Fatalf("%v, want a usage error with %q", err, tc.err)
			}
		})
	}
}
