package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageErrors: a command called the wrong way says what is missing or wrong in the
// user's words (never cobra's "accepts 1 arg(s), received 0"), names the command as it
// is typed and where the value comes from, exits 2 (1 stays for failed jobs), and
// creates neither the store nor the profiles directory on its way out (issues 45, 46).
func TestUsageErrors(t *testing.T) {
	e := newEnv(t)
	huge := strings.Repeat("x", 10<<10)
	profilesDir := filepath.Join(e.home, "kinetic-profiles")
	for name, tc := range map[string]struct {
		args    []string
		code    int
		want    []string
		notWant []string
	}{
		"jobs status without JOB_ID":   {[]string{"jobs", "status"}, 2, []string{"missing JOB_ID: kinetic jobs status JOB_ID", "kinetic jobs list"}, []string{"arg(s)"}},
		"jobs logs without JOB_ID":     {[]string{"jobs", "logs"}, 2, []string{"missing JOB_ID: kinetic jobs logs JOB_ID"}, nil},
		"jobs result without JOB_ID":   {[]string{"jobs", "result"}, 2, []string{"missing JOB_ID"}, nil},
		"jobs debug without JOB_ID":    {[]string{"jobs", "debug"}, 2, []string{"missing JOB_ID"}, nil},
		"batch status without GROUP":   {[]string{"batch", "status"}, 2, []string{"missing GROUP_ID: kinetic batch status GROUP_ID", "kinetic batch list"}, nil},
		"batch cancel without GROUP":   {[]string{"batch", "cancel"}, 2, []string{"missing GROUP_ID"}, nil},
		"profile use without NAME":     {[]string{"profile", "use"}, 2, []string{"missing NAME: kinetic profile use NAME", "kinetic profile ls"}, nil},
		"pool remove without NAME":     {[]string{"pool", "remove"}, 2, []string{"missing NAME: kinetic pool remove NAME", "kinetic pool list"}, nil},
		"too many arguments":           {[]string{"jobs", "status", "job-a", "job-b"}, 2, []string{"too many arguments", `"job-b"`}, nil},
		"arguments to list":            {[]string{"jobs", "list", "foo"}, 2, []string{"kinetic jobs list takes no arguments", `"foo"`}, nil},
		"unknown command":              {[]string{"jobs", "lst"}, 2, []string{`unknown command "lst"`, "did you mean list?"}, nil},
		"unknown top command":          {[]string{"stauts"}, 2, []string{`unknown command "stauts"`, "did you mean status?"}, nil},
		"unknown flag":                 {[]string{"jobs", "list", "--jsn"}, 2, []string{"kinetic jobs list has no flag --jsn; did you mean --json?"}, nil},
		"bad flag value":               {[]string{"jobs", "logs", "--tail", "x", "job-a"}, 2, []string{"--tail"}, nil},
		"negative since":               {[]string{"jobs", "list", "--since", "-5m"}, 2, []string{`--since "-5m": a negative duration`}, []string{"36500"}},
		"negative interval":            {[]string{"jobs", "list", "-w", "--interval", "-5s"}, 2, []string{`--interval "-5s": a negative duration`}, []string{"timeout"}},
		"completion of no shell":       {[]string{"completion", "bogus-shell"}, 2, []string{`unknown command "bogus-shell"`, "bash"}, nil},
		"debug port out of range":      {[]string{"jobs", "debug", "--port", "99999", "job-a"}, 2, []string{"--port 99999", "65535"}, nil},
		"huge batch ID":                {[]string{"batch", "cleanup", huge}, 2, []string{"is not a group ID", "(10240 bytes)"}, nil},
		"json before the command":      {[]string{"--json", "jobs", "list"}, 0, nil, []string{"unknown command"}},
		"json where there is none":     {[]string{"--json", "profile", "use", "x"}, 2, []string{"kinetic profile use has no JSON output"}, nil},
		"ls for list":                  {[]string{"jobs", "ls"}, 0, nil, nil},
		"prune of a bad store":         {[]string{"prune", "--store", "ftp://x"}, 1, []string{`"ftp://x"`}, []string{"nothing to prune"}},
		"jobs debug of an unknown job": {[]string{"jobs", "debug", "unknown-id"}, 1, []string{"no job unknown-id"}, nil},
		"batch cancel of unknown":      {[]string{"batch", "cancel", "unknown"}, 1, []string{"no batch unknown"}, nil},
		"jobs cancel of unknown":       {[]string{"jobs", "cancel", "unknown"}, 1, []string{"no job unknown"}, nil},
		"bad container image":          {[]string{"run", "--container-image", "BAD IMAGE!", "examples/hello.py::main"}, 1, []string{`"BAD IMAGE!"`}, nil},
		"profile use of nothing":       {[]string{"profile", "use", "nope"}, 1, []string{`profile "nope" does not exist`}, nil},
		"profile unset of nothing":     {[]string{"profile", "unset"}, 0, nil, nil},
		"pool add, bad accelerator":    {[]string{"pool", "add", "--accelerator", "bogus"}, 2, []string{`"bogus"`}, []string{"credentials"}},
		"pool add, negative min":       {[]string{"pool", "add", "--accelerator", "l4", "--min-nodes", "-1"}, 2, []string{"--min-nodes -1"}, []string{"credentials"}},
		"pool add, max below min":      {[]string{"pool", "add", "--accelerator", "l4", "--min-nodes", "3", "--max-nodes", "1"}, 2, []string{"--min-nodes 3 --max-nodes 1"}, []string{"credentials"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.runEnv([]string{"KINETIC_PROFILES_FILE=" + filepath.Join(profilesDir, "profiles.json"), "GOOGLE_CLOUD_PROJECT=", "GOOGLE_APPLICATION_CREDENTIALS=/nonexistent"}, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			for _, w := range append(tc.notWant, "arg(s)", "received 0") {
				if strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("stdout %q or stderr %q has %q", r.stdout, r.stderr, w)
				}
			}
			if len(r.stderr) > 2<<10 {
				t.Errorf("stderr is %d bytes", len(r.stderr))
			}
			if _, err := os.Stat(e.store); err == nil {
				t.Errorf("the store %s was created", e.store)
				os.RemoveAll(e.store)
			}
			if _, err := os.Stat(profilesDir); err == nil {
				t.Errorf("the profiles directory %s was created", profilesDir)
				os.RemoveAll(profilesDir)
			}
		})
	}
}

// TestBackendChoiceSaid: an error caused by the backend in use says which backend and
// what chose it, with the way back to this machine; GOOGLE_CLOUD_PROJECT chooses GKE as
// KINETIC_PROJECT does; a GPU job with nothing configured is refused with the fixes
// named (never run on the CPU here), and runs here when the local backend is chosen;
// gke without a project says so before any registry (issues 44 and 46).
func TestBackendChoiceSaid(t *testing.T) {
	e := newEnv(t)
	noCreds := "GOOGLE_APPLICATION_CREDENTIALS=" + filepath.Join(e.home, "no-such-key.json")
	for name, tc := range map[string]struct {
		env     []string
		args    []string
		want    []string
		notWant []string
	}{
		"KINETIC_PROJECT": {[]string{"KINETIC_PROJECT=myproj", noCreds}, []string{"jobs", "list"},
			[]string{"backend gke because KINETIC_PROJECT is set (KINETIC_PROJECT=myproj)", "--backend local", "unset KINETIC_PROJECT"}, nil},
		"GOOGLE_CLOUD_PROJECT": {[]string{"GOOGLE_CLOUD_PROJECT=gp", noCreds}, []string{"run", "examples/hello.py::main"},
			[]string{"gs://gp-kn-kinetic-cluster-jobs", "backend gke because GOOGLE_CLOUD_PROJECT is set"}, nil},
		"KINETIC_BACKEND": {[]string{"KINETIC_BACKEND=gke"}, []string{"run", "examples/hello.py::main"},
			[]string{"needs a Google Cloud project", "env KINETIC_BACKEND"}, []string{"registry"}},
		"a GPU with nothing configured": {nil, []string{"run", "-a", "gpu-l4", "examples/hello.py::main"},
			[]string{"accelerator gpu-l4 needs a GPU", "kinetic up --accelerator gpu-l4", "KINETIC_PROJECT", "--backend local"}, []string{"submitted"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.runEnv(tc.env, tc.args...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1; stderr %q", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q has %q", r.stderr, w)
				}
			}
		})
	}
	if _, err := os.Stat(e.store); err == nil {
		t.Errorf("a refused job created the store %s", e.store)
	}
	r := e.run("run", "--backend", "local", "-a", "gpu-l4", "examples/hello.py::add", "1", "2")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "3" || !strings.Contains(r.stderr, "on this machine's CPU") {
		t.Errorf("a GPU job on the local backend chosen explicitly: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestDoctorAndStatusOnTheLocalBackend: with nothing configured, `doctor` and `status`
// check and describe this machine (python, state directory, store, slots) and say
// ready, exit 0, without a word of kubeconfig or Google credentials; a container runtime
// that is chosen but missing is a ✗ with the fix (issue 46).
func TestDoctorAndStatusOnTheLocalBackend(t *testing.T) {
	e := newEnv(t)
	for _, cmd := range [][]string{{"doctor"}, {"status"}} {
		r := e.run(cmd...)
		if r.code != 0 {
			t.Errorf("%v: exit %d\n%s%s", cmd, r.code, r.stdout, r.stderr)
		}
		for _, w := range []string{"local", "python", "store", "slots", "ready: jobs can run"} {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%v: stdout lacks %q:\n%s", cmd, w, r.stdout)
			}
		}
		for _, w := range []string{"kubeconfig", "Google credentials", "not ready", "✗"} {
			if strings.Contains(r.stdout+r.stderr, w) {
				t.Errorf("%v: output has %q:\n%s%s", cmd, w, r.stdout, r.stderr)
			}
		}
	}
	if _, err := os.Stat(e.store); err == nil {
		t.Errorf("doctor or status created the store")
	}
	// A container runtime chosen but not installed: PATH without podman or docker.
	bin := t.TempDir()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	os.Symlink(py, filepath.Join(bin, "python3"))
	r := e.runEnv([]string{"KINETIC_CONTAINER=podman", "PATH=" + bin}, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "✗ container runtime") || !strings.Contains(r.stdout, "container=none") {
		t.Errorf("doctor with container=podman and no podman: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestRunChecksBeforeSubmit: `kinetic run FILE.py::FUNC` finds a mistyped FUNC before
// anything is submitted (did-you-mean, exit 2, no store made), NAME=VALUE arguments are
// keyword arguments, and values are read as documented: Python literals, else strings
// (issue 46).
func TestRunChecksBeforeSubmit(t *testing.T) {
	e := newEnv(t)
	r := e.run("run", "examples/hello.py::mian")
	if r.code != 2 || !strings.Contains(r.stderr, "has no function 'mian'; did you mean main?") || strings.Contains(r.stderr, "submitted") {
		t.Errorf("a typo: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(e.store); err == nil {
		t.Errorf("a refused FILE.py::FUNC created the store")
	}
	os.WriteFile(filepath.Join(e.dir, "types.py"), []byte("def f(a, b='x', **kw):\n    return [type(v).__name__ for v in (a, b)] + sorted((k, type(v).__name__) for k, v in kw.items())\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"examples/hello.py::main", "n=2"}, "{'sum': 3, 'steps': 2}"},
		{[]string{"examples/hello.py::add", "b=2", "a=40"}, "42"},
		{[]string{"types.py::f", "3", "steps=3", "lr=0.5", "ok=True", "none=None", "xs=[1,2]", "opt=adam", "path=data/train.csv"},
			"['int', 'str', ('lr', 'float'), ('none', 'NoneType'), ('ok', 'bool'), ('opt', 'str'), ('path', 'str'), ('steps', 'int'), ('xs', 'list')]"},
		{[]string{"types.py::f", "'a=b'", "b='3'"}, "['str', 'str']"},
	} {
		r := e.run(append([]string{"run", "-q"}, tc.args...)...)
		if r.code != 0 || strings.TrimSpace(r.stdout) != tc.want {
			t.Errorf("run %v: exit %d, stdout %q, want %q; stderr %q", tc.args, r.code, r.stdout, tc.want, r.stderr)
		}
	}
	if r := e.run("run", "examples/hello.py::main", "n=2", "3"); r.code != 2 || !strings.Contains(r.stderr, "comes after a keyword argument") {
		t.Errorf("positional after keyword: exit %d, %q", r.code, r.stderr)
	}
}

// TestCompletion: the shells complete job and batch IDs from the store (never creating
// it), accelerator names from the catalog and profile names from the profiles file.
func TestCompletion(t *testing.T) {
	e := newEnv(t)
	complete := func(args ...string) []string {
		t.Helper()
		r := e.run(append([]string{"__complete"}, args...)...)
		if r.code != 0 {
			t.Fatalf("__complete %v: exit %d %s", args, r.code, r.stderr)
		}
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if l != "" && !strings.HasPrefix(l, ":") {
				out = append(out, strings.SplitN(l, "\t", 2)[0])
			}
		}
		return out
	}
	if got := complete("jobs", "status", ""); len(got) != 0 {
		t.Errorf("job IDs of an empty store: %q", got)
	}
	if _, err := os.Stat(e.store); err == nil {
		t.Errorf("completion created the store")
	}
	if got := complete("run", "--accelerator", "gpu-l"); !contains(got, "gpu-l4") {
		t.Errorf("accelerators for gpu-l: %q", got)
	}
	id := e.submitAsync(t, "true")
	for _, cmd := range [][]string{{"jobs", "status", ""}, {"jobs", "result", "job-"}, {"jobs", "cancel", ""}} {
		if got := complete(cmd...); !contains(got, id) {
			t.Errorf("%v: %q lacks %s", cmd, got, id)
		}
	}
	if r := e.run("profile", "create", "laptop", "--backend", "local"); r.code != 0 {
		t.Fatalf("profile create: %s", r.stderr)
	}
	if got := complete("profile", "use", "la"); !contains(got, "laptop") {
		t.Errorf("profiles: %q", got)
	}
	if got := complete("--profile", ""); !contains(got, "laptop") {
		t.Errorf("--profile: %q", got)
	}
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// TestRunJSONShape: `run --json` and `jobs result --json` print one shape: the job's ID,
// its state and envelope, and the value as JSON when it is JSON-able (the Python repr
// stays in value_repr) (issue 46).
func TestRunJSONShape(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.dir, "vals.py"), []byte("def d():\n    return {'loss': 0.12, 'ok': True, 'tags': ['a', None]}\ndef s():\n    return {1, 2}\n"), 0o644)
	type out struct {
		JobID    string          `json:"job_id"`
		State    string          `json:"state"`
		Value    json.RawMessage `json:"value"`
		Envelope struct {
			ValueRepr string `json:"value_repr"`
		} `json:"envelope"`
	}
	parse := func(r result) out {
		t.Helper()
		var o out
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &o) != nil {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		return o
	}
	o := parse(e.run("run", "-q", "--json", "vals.py::d"))
	if !strings.HasPrefix(o.JobID, "job-") || o.State != "SUCCEEDED" || string(o.Value) == "" {
		t.Fatalf("run --json: %+v", o)
	}
	var v map[string]any
	if err := json.Unmarshal(o.Value, &v); err != nil || v["loss"] != 0.12 || v["ok"] != true || len(v["tags"].([]any)) != 2 {
		t.Errorf("value %s: %v", o.Value, err)
	}
	again := parse(e.run("jobs", "result", "--json", o.JobID))
	if again.JobID != o.JobID || string(again.Value) != string(o.Value) {
		t.Errorf("jobs result --json: %+v, want the same shape as run --json %+v", again, o)
	}
	set := parse(e.run("run", "-q", "--json", "vals.py::s"))
	if set.Value != nil || set.Envelope.ValueRepr != "{1, 2}" {
		t.Errorf("a set is not JSON: value %s, value_repr %q", set.Value, set.Envelope.ValueRepr)
	}
}

// TestCancelledReadsAsCancelled: a cancelled job keeps its FAILED status (the API's
// JobStatus) and its reason, and `jobs list` marks it (cancelled) (issue 46).
func TestCancelledReadsAsCancelled(t *testing.T) {
	e := newEnv(t)
	id := e.submitAsync(t, "sh", "-c", "sleep 300")
	e.waitStatus(t, id, "RUNNING")
	if r := e.run("jobs", "cancel", id); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	e.waitStatus(t, id, "FAILED")
	r := e.run("jobs", "list")
	var row string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, id) {
			row = l
		}
	}
	if !strings.Contains(row, "FAILED (cancelled)") {
		t.Errorf("jobs list row of a cancelled job: %q\n%s", row, r.stdout)
	}
	if st := e.statusJSON(t, id); st["status"] != "FAILED" || st["reason"] != "cancelled" {
		t.Errorf("jobs status --json: %v, want FAILED, reason cancelled", st)
	}
}

// TestKubeconfigFirst: a Kubernetes backend with no kubeconfig says so first, not that
// an image registry is missing (issue 46: the fundamental thing first).
func TestKubeconfigFirst(t *testing.T) {
	e := newEnv(t)
	r := e.runEnv([]string{"KUBECONFIG=" + filepath.Join(e.home, "no-kubeconfig"), "KINETIC_KUBECONFIG="}, "run", "--backend", "k8s", "examples/hello.py::main")
	if r.code != 1 || !strings.Contains(r.stderr, "backend k8s (argument) runs jobs on a Kubernetes cluster") || strings.Contains(r.stderr, "registry") {
		t.Errorf("k8s without a kubeconfig: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(e.store); err == nil {
		t.Errorf("the store was created")
	}
}
