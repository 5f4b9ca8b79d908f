package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/daptest"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

// The examples a user starts from (README, "Examples") each run here as a user runs them:
// `python3 examples/X.py` with the SDK on PYTHONPATH and the kinetic binary in KINETIC_BIN,
// on the local backend with a store of the test's own. Each example asserts its own
// results (a wrong value exits non-zero); the test also checks what it prints.

// exampleProject copies examples/ into a fresh project, so the jobs ship only it.
func exampleProject(t *testing.T, e *env) string {
	t.Helper()
	dir := filepath.Join(e.home, "examples-proj")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(repoRoot(), "examples")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ents {
		if d.IsDir() || filepath.Ext(d.Name()) != ".py" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, d.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, d.Name()), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "requirements.txt"), nil, 0o644)
	return dir
}

// exampleCmd is `python3 FILE ARGS...` in the project, with the environment a user has.
func exampleCmd(ctx context.Context, e *env, dir string, extra []string, file string, args ...string) *exec.Cmd {
	py := os.Getenv("PYTHON")
	if py == "" {
		py = "python3"
	}
	pythonPath := filepath.Join(repoRoot(), "python")
	if p := os.Getenv("PYTHONPATH"); p != "" {
		pythonPath += string(os.PathListSeparator) + p // the caller's own packages stay found
	}
	cmd := exec.CommandContext(ctx, py, append([]string{file}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "KINETIC_BIN="+e.bin, "KINETIC_HOME="+filepath.Join(e.home, "data"),
		"KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "HOME="+e.home, "KINETIC_PROJECT=",
		"KINETIC_WARM_IDLE=5s", "PYTHONPATH="+pythonPath), extra...)
	return cmd
}

// runExample runs an example to its end and returns what it printed (stdout and stderr).
func runExample(t *testing.T, e *env, dir string, extra []string, file string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exampleCmd(ctx, e, dir, extra, file, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("python3 %s %s: %v\n%s", file, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func wantLines(t *testing.T, file, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !regexp.MustCompile(w).MatchString(out) {
			t.Errorf("%s printed no line matching %q:\n%s", file, w, out)
		}
	}
}

func TestExamples(t *testing.T) {
	e := newEnv(t)
	dir := exampleProject(t, e)
	for _, c := range []struct {
		file string
		want []string
	}{
		{"sdk_add.py", []string{`adding 1 and 2`, `(?m)^add\(1, 2\) == 3$`}},
		{"async_attach.py", []string{`(?m)^submitted (job-\S+); this process will not wait`, `(?m)^attached to job-\S+ \(slow_square\)`, `(?m)^result of job-\S+: 49$`}},
		{"checkpoints.py", []string{`(?m)^checkpoints: \['ckpt-000001.json', 'ckpt-000002.json', 'ckpt-000003.json'\]$`,
			`resumed from ckpt-000003.json at step 3`, `(?m)^resumed job: \{'step': 5, 'loss': 0.3125\}$`}},
		{"sweep.py", []string{`(?m)^batch grp-\S+: 8 inputs$`, `(?m)^  input 6 finished: FAILED$`, `(?m)^2 of 8 inputs failed:$`,
			`(?m)^  input 7 \{'lr': 0.0, 'batch_size': 64\}$`, `(?m)^best: \{'lr': 0.01, 'batch_size': 64\} loss 0.5$`}},
		{"env_vars.py", []string{`the job saw: \{'EXAMPLE_TOKEN': 'token-from-this-machine', 'EXAMPLE_WANDB_PROJECT': 'sweeps'`,
			`a captured variable changed here reaches the next job`}},
		{"multihost.py", []string{`host 0/1 \((python|jax)\): w=3.000 b=1.000`, `(?m)^fitted: \{'w': 3.0, 'b': 1.0, 'hosts': 1, 'with': '(python|jax)'\}$`}},
	} {
		t.Run(strings.TrimSuffix(c.file, ".py"), func(t *testing.T) {
			wantLines(t, c.file, runExample(t, e, dir, nil, c.file), c.want...)
		})
	}
}

// TestExampleData runs examples/data_api.py with a local dataset and a gs:// prefix on the
// GCS emulator.
func TestExampleData(t *testing.T) {
	e := newEnv(t)
	dir := exampleProject(t, e)
	srv := gcstest.Start(t)
	gcsPost(t, srv.URL()+"/storage/v1/b?project=kinetic-test", "application/json", `{"name":"kn-example"}`)
	for name, body := range map[string]string{"train/a.txt": "1\n2\n", "train/part/b.txt": "3\n", "other/c.txt": "4\n"} {
		gcsPost(t, srv.URL()+"/upload/storage/v1/b/kn-example/o?uploadType=media&name="+url.QueryEscape(name), "application/octet-stream", body)
	}
	src, _ := os.ReadFile(filepath.Join(dir, "data_api.py"))
	out := runExample(t, e, dir, []string{"STORAGE_EMULATOR_HOST=" + srv.URL()}, "data_api.py", "gs://kn-example/train/")
	wantLines(t, "data_api.py", out, `(?m)^local data: \{'dataset_is_dir': True, 'lines': 5, 'config': 'lr=0.01'\}$`,
		fmt.Sprintf(`(?m)^volume /data lines: %d$`, bytes.Count(src, []byte("\n"))),
		`(?m)^lines under gs://kn-example/train/: 3$`)
}

func gcsPost(t *testing.T, u, contentType, body string) {
	t.Helper()
	resp, err := http.Post(u, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %s %s", u, resp.Status, b)
	}
}

// TestExampleCustomImage runs examples/custom_image.py with podman (the local backend's
// container isolation) and the test Python base image from a local registry.
func TestExampleCustomImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs podman")
	}
	_, _, base, e := imageEnv(t)
	dir := exampleProject(t, e)
	out := runExample(t, e, dir, []string{"KINETIC_CONTAINER=podman"}, "custom_image.py", base.String())
	wantLines(t, "custom_image.py", out, `(?m)^ran in `+regexp.QuoteMeta(base.String())+`: \{'python': '3\.\d+\.\d+', 'in_container': True\}$`)
}

// TestExampleDebugAttach runs examples/debug_attach.py and plays VS Code: it attaches a
// DAP client to the address the example prints, with the printed configuration's path
// mappings, stops at the breakpoint line in train(), reads a variable and lets it go; the
// example then prints the result.
func TestExampleDebugAttach(t *testing.T) {
	e := newEnv(t)
	dir := exampleProject(t, e)
	py := debugPython(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exampleCmd(ctx, e, dir, []string{"KINETIC_PYTHON=" + py}, "debug_attach.py")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	// The launch.json the example prints, then the address line.
	var printed strings.Builder
	addr := regexp.MustCompile(`^debugger listening for job (job-\S+) at (\S+)$`)
	sc := bufio.NewScanner(stdout)
	var hostPort string
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if m := addr.FindStringSubmatch(sc.Text()); m != nil {
			hostPort = m[2]
			break
		}
	}
	if hostPort == "" {
		cmd.Wait()
		t.Fatalf("no address printed:\n%s\nstderr:\n%s", printed.String(), stderr.String())
	}
	var launch struct {
		Configurations []struct {
			Request      string `json:"request"`
			PathMappings any    `json:"pathMappings"`
		} `json:"configurations"`
	}
	js := printed.String()[:strings.LastIndex(printed.String(), "}")+1]
	if err := json.Unmarshal([]byte(js), &launch); err != nil || len(launch.Configurations) != 1 || launch.Configurations[0].Request != "attach" {
		t.Fatalf("launch.json printed: %v\n%s", err, js)
	}
	c, err := daptest.Dial(ctx, hostPort)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src, _ := os.ReadFile(filepath.Join(dir, "debug_attach.py"))
	line := 1 + strings.Count(string(src[:strings.Index(string(src), "loss = loss * (1 - lr)")]), "\n")
	thread, frame, err := c.StopAt(ctx, launch.Configurations[0].PathMappings, filepath.Join(dir, "debug_attach.py"), line)
	if err != nil {
		t.Fatalf("stop at debug_attach.py:%d: %v", line, err)
	}
	if v, err := c.Evaluate(ctx, frame.ID, "lr"); err != nil || v != "0.5" {
		t.Fatalf("lr at the breakpoint = %q, %v", v, err)
	}
	c.Request(ctx, "setBreakpoints", map[string]any{"source": map[string]any{"path": filepath.Join(dir, "debug_attach.py")}, "breakpoints": []any{}})
	if _, err := c.Request(ctx, "continue", map[string]any{"threadId": thread}); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("debug_attach.py: %v\n%s%s\nstderr:\n%s", err, printed.String(), rest, stderr.String())
	}
	wantLines(t, "debug_attach.py", string(rest), `(?m)^result: 0.125$`)
}

// TestExamplesAreLinkedAndSaySo: every example says what it shows and how to run it, and
// the README links it (hello.py is the README's own first command).
func TestExamplesAreLinkedAndSaySo(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot(), "examples", "*.py"))
	if len(files) < 9 {
		t.Fatalf("%d examples", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		b, _ := os.ReadFile(f)
		if !strings.HasPrefix(string(b), `"""`) || (name != "hello.py" && (!strings.Contains(string(b), "\nShows:") || !strings.Contains(string(b), "\nNeeds:") || !strings.Contains(string(b), "\nRun:"))) {
			t.Errorf("examples/%s does not open with a docstring saying what it shows (Shows:), what it needs (Needs:) and how to run it (Run:)", name)
		}
		if name != "hello.py" && !strings.Contains(string(readme), "(examples/"+name+")") {
			t.Errorf("README.md does not link examples/%s", name)
		}
		// The README's line for the example says what it needs, in brackets.
		if i := strings.Index(string(readme), "(examples/"+name+")"); name != "hello.py" && i >= 0 {
			line := string(readme)[i:]
			line = line[:strings.IndexByte(line, '\n')]
			if !strings.Contains(line, " [") {
				t.Errorf("README.md's line for examples/%s does not say what it needs ([nothing], [interactive], ...): %s", name, line)
			}
		}
	}
}
