package deps

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// parseText parses a requirements file held in memory; includes resolve against files.
func parseText(text string, files map[string]string) (*Requirements, error) {
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
	return parseRequirementsWith(read, "/proj/requirements.txt", []byte(text))
}

func TestParseLines(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"plain", "numpy\n", []string{"numpy"}},
		{"pep503 names", "Foo_Bar.baz\nSCIKIT-learn\nzope..interface\n", []string{"foo-bar-baz", "scikit-learn", "zope-interface"}},
		{"extras sorted and normalised", "jax[TPU, Cuda_12,tpu]\n", []string{"jax[cuda-12,tpu]"}},
		{"empty extras", "numpy[]\n", []string{"numpy"}},
		{"specifiers", "numpy >= 1.2 , < 2.0\n", []string{"numpy<2.0,>=1.2"}},
		{"parenthesised specifier", "numpy (>=1.2)\n", []string{"numpy>=1.2"}},
		{"all operators", "a===1.0\nb~=1.2\nc!=1.3\nd==1.*\ne>1\nf<=2\n", []string{"a===1.0", "b~=1.2", "c!=1.3", "d==1.*", "e>1", "f<=2"}},
		{"local version", "torch==2.1.0+CPU\n", []string{"torch==2.1.0+cpu"}},
		{"marker", `jax[tpu]>=0.4; python_version > "3.9"` + "\n", []string{`jax[tpu]>=0.4 ; python_version > "3.9"`}},
		{"marker quotes and spacing", `a ; python_version>'3.9' and(os_name=="posix"or sys_platform  ==  "linux")`, []string{`a ; python_version > "3.9" and (os_name == "posix" or sys_platform == "linux")`}},
		{"marker in / not in", `a; "linux" in sys_platform and 'x' not   in platform_machine`, []string{`a ; "linux" in sys_platform and "x" not in platform_machine`}},
		{"marker with double quote inside", `a; os_name == 'po"six'`, []string{`a ; os_name == 'po"six'`}},
		{"url", "pkg @ https://example.com/pkg-1.0.tar.gz\n", []string{"pkg @ https://example.com/pkg-1.0.tar.gz"}},
		{"url with extras and marker", "Pkg[X] @ https://e.com/p.whl ; os_name == 'nt'\n", []string{`pkg[x] @ https://e.com/p.whl ; os_name == "nt"`}},
		{"url semicolon without space is part of the url", "pkg @ https://e.com/p;v=1\n", []string{"pkg @ https://e.com/p;v=1"}},
		{"ssh user is not a credential", "pkg @ git+ssh://git@github.com/org/pkg.git\n", []string{"pkg @ git+ssh://git@github.com/org/pkg.git"}},
		{"bare wheel url", "https://e.com/dl/My_Pkg-1.0-py3-none-any.whl\n", []string{"my-pkg @ https://e.com/dl/My_Pkg-1.0-py3-none-any.whl"}},
		{"bare sdist url", "https://e.com/dl/my-pkg-1.0.tar.gz\n", []string{"my-pkg @ https://e.com/dl/my-pkg-1.0.tar.gz"}},
		{"bare vcs url with egg", "git+https://github.com/o/r.git@v1#egg=R_Pkg\n", []string{"r-pkg @ git+https://github.com/o/r.git@v1#egg=R_Pkg"}},
		{"comments", "# header\n  # indented\nnumpy # trailing\npkg @ https://e.com/p.whl#sha256=abc\n", []string{"numpy", "pkg @ https://e.com/p.whl#sha256=abc"}},
		{"hash is not a comment without whitespace", "a==1#notacomment\n", nil}, // invalid version: error below
		{"continuation", "numpy \\\n  >=1.2 \\\n  ; os_name == 'posix'\nscipy\n", []string{`numpy>=1.2 ; os_name == "posix"`, "scipy"}},
		{"continuation ended by comment line", "numpy \\\n# comment\nscipy\n", []string{"numpy", "scipy"}},
		{"continuation at eof", "numpy \\", []string{"numpy"}},
		{"crlf and bom", "\ufeffnumpy\r\nscipy\r\n", []string{"numpy", "scipy"}},
		{"hashes sorted lowercase", "a==1 --hash=sha256:BB --hash sha256:aa \\\n  --hash=sha256:aa\n", []string{"a==1 --hash=sha256:aa --hash=sha256:bb"}},
		{"directives", "-i https://pypi.org/simple\n--extra-index-url=https://e.com/simple\n--no-index\n--pre\n--trusted-host e.com:8080\n--prefer-binary\n--only-binary=:all:\n--no-binary Foo_Bar,baz\n",
			[]string{"--index-url https://pypi.org/simple", "--extra-index-url https://e.com/simple", "--no-index", "--pre", "--trusted-host e.com:8080", "--prefer-binary", "--only-binary :all:", "--no-binary foo-bar,baz"}},
		{"short option attached", "-ihttps://pypi.org/simple\n", []string{"--index-url https://pypi.org/simple"}},
		{"several options on a line", "--pre --no-index\n", []string{"--pre", "--no-index"}},
		{"find-links url", "-f https://e.com/wheels/\n", []string{"--find-links https://e.com/wheels/"}},
		{"find-links relative path is made absolute", "--find-links ./wheels\n", []string{"--find-links /proj/wheels"}},
		{"find-links path with space", "--find-links '/opt/my wheels'\n", []string{"--find-links '/opt/my wheels'"}},
		{"order kept", "a\n--pre\nb\n", []string{"a", "--pre", "b"}},
		{"env var left for pip", "--index-url https://${INDEX_HOST}/simple\n", []string{"--index-url https://${INDEX_HOST}/simple"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseText(tt.in, nil)
			if tt.want == nil {
				if err == nil {
					t.Fatalf("parsed %q as %q, want an error", tt.in, r.Lines())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, r.Lines()); diff != "" {
				t.Errorf("Lines() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRequirementFields(t *testing.T) {
	r, err := parseText("x\n\nJax[TPU] >= 0.4 ; python_version > '3.9'  # kn:keep pinned\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Requirement{
		{Name: "x", File: "/proj/requirements.txt", Line: 1, Text: "x"},
		{Name: "jax", Extras: []string{"tpu"}, Specifier: ">=0.4", Marker: `python_version > "3.9"`, Keep: true,
			File: "/proj/requirements.txt", Line: 3, Text: "Jax[TPU] >= 0.4 ; python_version > '3.9'"},
	}
	if diff := cmp.Diff(want, r.Requirements(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		files    map[string]string
		kind     error
		line     int
		contains []string
	}{
		{"editable", "a\n-e ./lib\n", nil, ErrLocalPath, 2, []string{"editable", "working directory", "publish the package"}},
		{"editable long", "--editable=git+https://g.com/o/r#egg=r\n", nil, ErrLocalPath, 1, nil},
		{"relative path", "./pkg\n", nil, ErrLocalPath, 1, []string{`"./pkg" is a local path`, "packaged automatically", "pin a version"}},
		{"parent path", "../pkg\n", nil, ErrLocalPath, 1, nil},
		{"absolute path", "/abs/path\n", nil, ErrLocalPath, 1, nil},
		{"dir path", "libs/mine\n", nil, ErrLocalPath, 1, nil},
		{"file url", "file:///abs/pkg.whl\n", nil, ErrLocalPath, 1, nil},
		{"name at file url", "pkg @ file:///abs/pkg\n", nil, ErrLocalPath, 1, nil},
		{"name at relative path", "pkg @ ./pkg\n", nil, ErrLocalPath, 1, nil},
		{"local wheel", "pkg-1.0-py3-none-any.whl\n", nil, ErrLocalPath, 1, nil},
		{"home path", "~/src/pkg\n", nil, ErrLocalPath, 1, nil},
		{"credentials in requirement", "a @ https://user:tok@e.com/a.whl\n", nil, ErrCredentials, 1, []string{"build logs", "custom image", "without credentials", "https://***@e.com/a.whl"}},
		{"token as user", "a @ git+https://ghp_abc@github.com/o/a.git\n", nil, ErrCredentials, 1, nil},
		{"credentials in index", "--index-url https://u:p@e.com/simple\n", nil, ErrCredentials, 1, nil},
		{"credentials in extra index", "\n--extra-index-url=https://__token__:x@e.com/simple\n", nil, ErrCredentials, 2, nil},
		{"credentials in find-links", "-f https://u:p@e.com/w/\n", nil, ErrCredentials, 1, nil},
		{"credentials in bare url", "https://u:p@e.com/a-1.0-py3-none-any.whl\n", nil, ErrCredentials, 1, nil},
		{"credentials via env var", "--index-url https://${USER}:${TOKEN}@e.com/simple\n", nil, ErrCredentials, 1, nil},
		{"bad name", "-bad\n", nil, ErrUnsupported, 1, nil},
		{"bad version", "a==1#x\n", nil, ErrSyntax, 1, nil},
		{"bad operator", "a=>1\n", nil, ErrSyntax, 1, nil},
		{"unclosed extras", "a[b\n", nil, ErrSyntax, 1, nil},
		{"bad marker var", "a; python_versoin > '3'\n", nil, ErrSyntax, 1, []string{"python_versoin"}},
		{"unterminated marker string", "a; os_name == 'x\n", nil, ErrSyntax, 1, nil},
		{"marker missing op", "a; os_name\n", nil, ErrSyntax, 1, nil},
		{"marker unbalanced", "a; (os_name == 'x'\n", nil, ErrSyntax, 1, nil},
		{"trailing garbage", "a b\n", nil, ErrSyntax, 1, nil},
		{"unknown option", "--use-pep517\n", nil, ErrUnsupported, 1, []string{"--use-pep517"}},
		{"option after requirement", "a --pre\n", nil, ErrSyntax, 1, []string{"own"}},
		{"hash alone", "--hash=sha256:aa\n", nil, ErrSyntax, 1, nil},
		{"bad hash", "a==1 --hash=md5:aa\n", nil, ErrSyntax, 1, nil},
		{"missing value", "--index-url\n", nil, ErrSyntax, 1, nil},
		{"index not a url", "--index-url pypi.org\n", nil, ErrSyntax, 1, nil},
		{"url include", "-r https://e.com/r.txt\n", nil, ErrInclude, 1, []string{"local files"}},
		{"missing include", "a\n-r other.txt\n", nil, ErrInclude, 2, []string{"/proj/other.txt"}},
		{"self include", "-r requirements.txt\n", map[string]string{"/proj/requirements.txt": "-r requirements.txt\n"}, ErrInclude, 1, []string{"cycle"}},
		{"error inside include names the included file", "-r sub/b.txt\n", map[string]string{"/proj/sub/b.txt": "ok\n-e .\n"}, ErrLocalPath, 2, []string{"/proj/sub/b.txt:2"}},
		{"constraint with extras", "-c c.txt\n", map[string]string{"/proj/c.txt": "a[x]==1\n"}, ErrSyntax, 1, []string{"constraint"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseText(tt.in, tt.files)
			if err == nil {
				t.Fatalf("parsed as %q, want error", r.Lines())
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %v is not %v", err, tt.kind)
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FileError", err)
			}
			if tt.line != 0 && fe.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", fe.Line, tt.line, err)
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error lacks %q: %v", s, err)
				}
			}
			for _, secret := range []string{"tok@", ":p@", "ghp_abc", ":x@"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error leaks the credential: %v", err)
				}
			}
		})
	}
}

func TestIncludesAndConstraints(t *testing.T) {
	files := map[string]string{
		"/proj/reqs/base.txt":    "numpy\n-r ../common.txt\n",
		"/proj/common.txt":       "requests\n",
		"/proj/reqs/cons.txt":    "numpy<2\n-r also.txt\n--pre\n",
		"/proj/reqs/also.txt":    "tqdm\n", // -r inside -c names requirements, as in pip
		"/proj/reqs/diamond.txt": "-r ../common.txt\n",
	}
	r, err := parseText("-r reqs/base.txt\n-c reqs/cons.txt\n--requirement reqs/diamond.txt\nscipy\n", files)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"numpy", "requests", "tqdm", "--pre", "requests", "scipy"}, r.Lines()); diff != "" {
		t.Errorf("Lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"numpy<2"}, r.ConstraintLines()); diff != "" {
		t.Errorf("ConstraintLines (-want +got):\n%s", diff)
	}
	wantFiles := []string{"/proj/requirements.txt", "/proj/reqs/base.txt", "/proj/common.txt", "/proj/reqs/cons.txt", "/proj/reqs/also.txt", "/proj/reqs/diamond.txt"}
	if diff := cmp.Diff(wantFiles, r.Files); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
}

func TestFiltered(t *testing.T) {
	r, err := parseText(`jax
JAX[tpu]>=0.4 ; python_version > "3.9"
Jax_Lib
jaxlib==0.4.25 # kn:keep
libtpu-nightly @ https://e.com/libtpu_nightly-0.1-py3-none-any.whl
libtpu_nightly  #kn:keep
LibTPU
jax-metal
flax
-c c.txt
`, map[string]string{"/proj/c.txt": "jaxlib<0.5\nnumpy<2\n"})
	if err != nil {
		t.Fatal(err)
	}
	kept, dropped := r.Filtered()
	if diff := cmp.Diff([]string{"jax-lib", "jaxlib==0.4.25", "libtpu-nightly", "jax-metal", "flax"}, kept.Lines()); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"numpy<2"}, kept.ConstraintLines()); diff != "" {
		t.Errorf("kept constraints (-want +got):\n%s", diff)
	}
	var got []string
	for _, d := range dropped {
		got = append(got, d.String())
	}
	want := []string{"jax", `jax[tpu]>=0.4 ; python_version > "3.9"`, "libtpu-nightly @ https://e.com/libtpu_nightly-0.1-py3-none-any.whl", "libtpu", "jaxlib<0.5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	// The original is untouched.
	if len(r.Entries) != 9 {
		t.Errorf("Filtered modified its receiver: %d entries", len(r.Entries))
	}
	msg := DroppedMessage(dropped, true)
	for _, s := range []string{"ignoring 5 accelerator runtime requirements", "/proj/requirements.txt:2: JAX[tpu]>=0.4", "/proj/c.txt:1: jaxlib<0.5 (constraint)", "# kn:keep"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message lacks %q:\n%s", s, msg)
		}
	}
	if DroppedMessage(nil, true) != "" {
		t.Error("DroppedMessage(nil, true) not empty")
	}
	var nilReqs *Requirements
	if k, d := nilReqs.Filtered(); len(k.Entries) != 0 || d != nil {
		t.Error("nil Filtered not empty")
	}
}

func TestEnvKey(t *testing.T) {
	key := func(t *testing.T, text string) string {
		t.Helper()
		r, err := parseText(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		kept, _ := r.Filtered()
		return EnvKey(kept, "img", "tpu", "v1")
	}
	base := key(t, "--extra-index-url https://e.com/simple\nnumpy>=1.2,<2\njax[tpu]>=0.4\npandas[excel,perf] ; python_version > '3.9'\n")
	same := map[string]string{
		"comments and blanks":    "# deps\n\n--extra-index-url https://e.com/simple  # our index\nnumpy>=1.2,<2 # x\n\njax[tpu]>=0.4\npandas[excel,perf] ; python_version > '3.9'\n",
		"whitespace":             "  --extra-index-url   https://e.com/simple\nnumpy >= 1.2 , < 2\njax [tpu] >= 0.4\npandas [ excel , perf ];python_version>\"3.9\"\r\n",
		"continuations":          "--extra-index-url \\\nhttps://e.com/simple\nnumpy>=1.2,\\\n<2\njax[tpu]>=0.4\npandas[excel,perf] ; \\\npython_version > '3.9'\n",
		"name spelling":          "--extra-index-url=https://e.com/simple\nNumPy>=1.2,<2\njax[tpu]>=0.4\nPandas[Excel,perf] ; python_version > '3.9'\n",
		"clause and extra order": "--extra-index-url https://e.com/simple\nnumpy<2,>=1.2\njax[tpu]>=0.4\npandas[perf,excel] ; python_version > '3.9'\n",
		"filtered jax changes":   "--extra-index-url https://e.com/simple\nnumpy>=1.2,<2\njax[tpu]==0.4.30\njaxlib\npandas[excel,perf] ; python_version > '3.9'\n",
	}
	for name, text := range same {
		t.Run("same/"+name, func(t *testing.T) {
			if got := key(t, text); got != base {
				t.Errorf("key changed: %s != %s", got, base)
			}
		})
	}
	differ := map[string]string{
		"name":      "--extra-index-url https://e.com/simple\nnumpy2>=1.2,<2\npandas[excel,perf] ; python_version > '3.9'\n",
		"version":   "--extra-index-url https://e.com/simple\nnumpy>=1.3,<2\npandas[excel,perf] ; python_version > '3.9'\n",
		"extra":     "--extra-index-url https://e.com/simple\nnumpy>=1.2,<2\npandas[excel] ; python_version > '3.9'\n",
		"marker":    "--extra-index-url https://e.com/simple\nnumpy>=1.2,<2\npandas[excel,perf] ; python_version > '3.10'\n",
		"directive": "--index-url https://e.com/simple\nnumpy>=1.2,<2\npandas[excel,perf] ; python_version > '3.9'\n",
		"kept jax":  "--extra-index-url https://e.com/simple\nnumpy>=1.2,<2\njax # kn:keep\npandas[excel,perf] ; python_version > '3.9'\n",
		"added":     "--extra-index-url https://e.com/simple\nnumpy>=1.2,<2\npandas[excel,perf] ; python_version > '3.9'\nscipy\n",
		"order":     "--extra-index-url https://e.com/simple\npandas[excel,perf] ; python_version > '3.9'\nnumpy>=1.2,<2\n",
	}
	for name, text := range differ {
		t.Run("differs/"+name, func(t *testing.T) {
			if got := key(t, text); got == base {
				t.Errorf("key did not change")
			}
		})
	}
	r, _ := parseText("numpy\n", nil)
	k := EnvKey(r, "img", "tpu", "v1")
	for name, other := range map[string]string{
		"image":    EnvKey(r, "img2", "tpu", "v1"),
		"category": EnvKey(r, "img", "gpu", "v1"),
		"runner":   EnvKey(r, "img", "tpu", "v2"),
		// Length prefixes keep field boundaries: moving bytes between fields changes the key.
		"boundary": EnvKey(r, "imgt", "pu", "v1"),
		"no reqs":  EnvKey(nil, "img", "tpu", "v1"),
	} {
		if other == k {
			t.Errorf("%s: key did not change", name)
		}
	}
	// The documented byte format, pinned.
	var sb strings.Builder
	writeKey(&sb, r, "img", "tpu", "v1")
	if want := "kinetic-env-key/v1\nbase-image 3:img\ncategory 3:tpu\nrunner 2:v1\nline 5:numpy\n"; sb.String() != want {
		t.Errorf("hashed bytes = %q, want %q", sb.String(), want)
	}
	if len(k) != 64 || strings.Trim(k, "0123456789abcdef") != "" {
		t.Errorf("key %q is not hex SHA-256", k)
	}
}

func TestDiscover(t *testing.T) {
	write := func(t *testing.T, path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("stops at .git", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, "requirements.txt"), "above-repo\n")
		repo := filepath.Join(root, "repo")
		write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(repo, "src", "main.py"), "")
		r, err := Discover(filepath.Join(repo, "src"), "")
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != "" || len(r.Entries) != 0 {
			t.Errorf("found %q above the repository root", r.Source)
		}
		write(t, filepath.Join(repo, "requirements.txt"), "in-repo\n")
		r, err = Discover(filepath.Join(repo, "src"), "")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"in-repo"}, r.Lines()); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("stops at HOME", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, "requirements.txt"), "above-home\n")
		home := filepath.Join(root, "home")
		write(t, filepath.Join(home, "work", "x.py"), "")
		t.Setenv("HOME", home)
		r, err := Discover(filepath.Join(home, "work"), "")
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != "" {
			t.Errorf("found %q above $HOME", r.Source)
		}
	})
	t.Run("stops at stopDir", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, "requirements.txt"), "above-stop\n")
		write(t, filepath.Join(root, "a", "b", "x.py"), "")
		r, err := Discover(filepath.Join(root, "a", "b"), filepath.Join(root, "a"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != "" {
			t.Errorf("found %q above stopDir", r.Source)
		}
	})
	t.Run("pyproject without dependencies stops the search", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, "requirements.txt"), "outer\n")
		write(t, filepath.Join(root, "inner", "pyproject.toml"), "[project]\nname = \"inner\"\n")
		r, err := Discover(filepath.Join(root, "inner"), root)
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != filepath.Join(root, "inner", "pyproject.toml") || len(r.Entries) != 0 {
			t.Errorf("got %q %q", r.Source, r.Lines())
		}
	})
}

func TestParsePyproject(t *testing.T) {
	r, err := ParsePyproject("/p/pyproject.toml", []byte(`
[project]
name = "p"
dependencies = [
  "Requests[socks] >= 2",   # comment
  'jax ; python_version >= "3.10"', # kn:keep
  "jaxlib",
]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Requirement{
		{Name: "requests", Extras: []string{"socks"}, Specifier: ">=2", File: "/p/pyproject.toml", Line: 5, Text: "Requests[socks] >= 2"},
		{Name: "jax", Marker: `python_version >= "3.10"`, Keep: true, File: "/p/pyproject.toml", Line: 6, Text: `jax ; python_version >= "3.10"`},
		{Name: "jaxlib", File: "/p/pyproject.toml", Line: 7, Text: "jaxlib"},
	}
	if diff := cmp.Diff(want, r.Requirements(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	for name, in := range map[string]string{
		"editable-like path": `[project]` + "\n" + `dependencies = ["./lib"]`,
		"option":             `[project]` + "\n" + `dependencies = ["--pre"]`,
		"not strings":        `[project]` + "\n" + `dependencies = [1]`,
		"comment in string":  `[project]` + "\n" + `dependencies = ["a ; os_name == 'x #y'"]`,
		"credentials":        `[project]` + "\n" + `dependencies = ["a @ https://u:p@e.com/a.whl"]`,
		"malformed":          `[project` + "\n",
		"dynamic, no file":   `[project]` + "\n" + `dynamic = ["dependencies"]`,
	} {
		_, err := ParsePyproject("/p/pyproject.toml", []byte(in))
		var fe *FileError
		if !errors.As(err, &fe) || fe.File != "/p/pyproject.toml" {
			t.Errorf("%s: err = %v, want a *FileError naming the file", name, err)
		}
	}
}

func TestRequirementString(t *testing.T) {
	for _, in := range []string{"a", "a[x,y]<2,>=1 ; os_name == \"nt\"", "a @ https://e.com/a.whl ; os_name == \"nt\"", "a==1 --hash=sha256:ab"} {
		r, err := parseText(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Lines()[0]; got != in {
			t.Errorf("String = %q, want %q", got, in)
		}
	}
	if got, err := ParseRequirement(" Foo.Bar [X] (>=1) "); err != nil || got.String() != "foo-bar[x]>=1" {
		t.Errorf("ParseRequirement = %q, %v", got.String(), err)
	}
	if got := NormalizeName("Foo__Bar-.-baz"); got != "foo-bar-baz" {
		t.Errorf("NormalizeName = %q", got)
	}
}
