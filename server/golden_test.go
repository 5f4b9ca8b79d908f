package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/testkit/testbin"
)

// The golden transcripts in testdata/*.jsonl are conversations with a server, one JSON
// object a line: {"send": REQUEST} is written to the server, {"recv": MESSAGE} is a
// message expected from it, {"comment": ...} is ignored. The recv lines after a send
// are the messages that must arrive before the next send, in any order (requests run
// concurrently); a send with no recv lines after it is answered later. The first line
// is the greeting.
//
// In expected messages, "<any>" matches any value, "<any?>" any value or none (a key
// that may be absent), "<re:EXPR>" a string matching EXPR
// (where ${NAME} stands for the literal value bound to NAME),
// and "${NAME}" a string bound to NAME: the first time NAME is seen it binds to the
// actual value (a job ID, say), and later sends and recvs use that value. STORE (the
// file:// store) and STORE_DIR (its directory), WORK (the submitter's working directory), TESTDATA (this directory),
// VALUE_DIR and PYTHON are bound from the start. Objects must have exactly the expected
// keys, so a field added to the wire shows up here.
//
// python/tests/test_protocol.py replays the same files through the SDK's Engine.

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	if p, err := filepath.Abs("/usr/bin/python3"); err == nil && exec.Command(p, "-c", "import cloudpickle").Run() == nil {
		python = p
	} else if exec.Command(python, "-c", "import cloudpickle").Run() != nil {
		t.Skip("no python3 with cloudpickle")
	}
	bin := testbin.Path(t)
	testdata, _ := filepath.Abs("testdata")
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".jsonl"), func(t *testing.T) {
			// Not t.TempDir: a job's supervisor may still be writing as the test ends.
			home, err := os.MkdirTemp("", "kinetic-golden-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(home) })
			t.Setenv("KINETIC_HOME", home)
			t.Setenv("KINETIC_PROFILES_FILE", filepath.Join(home, "profiles.json"))
			for _, k := range []string{"KINETIC_STORE", "KINETIC_BACKEND", "KINETIC_PROFILE"} {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			storeDir := filepath.Join(home, "store")
			store := "file://" + storeDir
			work := filepath.Join(home, "work")
			valueDir := filepath.Join(home, "values")
			for _, d := range []string{work, valueDir} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			eng, err := engine.New(config.Options{Args: map[config.Key]string{config.Store: store, config.Backend: "local"}}, engine.WithUnwritten(batch.Unwritten{}))
			if err != nil {
				t.Fatal(err)
			}
			eng.Exe = bin
			defer eng.Close()
			vars := map[string]any{"STORE": store, "STORE_DIR": storeDir, "WORK": work, "TESTDATA": testdata, "VALUE_DIR": valueDir, "PYTHON": python}
			replay(t, f, eng, vars)
		})
	}
}

type line struct {
	Send    map[string]any `json:"send"`
	Recv    map[string]any `json:"recv"`
	Poll    *poll          `json:"poll"`
	Comment any            `json:"comment"`
}

// poll sends Send again (a fresh id each time) until its reply matches Until: a state a
// transcript must reach before its next step (a job RUNNING before it is cancelled),
// however slow the machine. No other message may arrive meanwhile.
type poll struct {
	Send  map[string]any `json:"send"`
	Until map[string]any `json:"until"`
}

func readTranscript(t *testing.T, path string) []line {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []line
	for i, s := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		var l line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("%s:%d: %v", path, i+1, err)
		}
		if l.Comment == nil {
			out = append(out, l)
		}
	}
	return out
}

// replay plays the transcript at path against a server over eng.
func replay(t *testing.T, path string, eng *engine.Engine, vars map[string]any) {
	lines := readTranscript(t, path)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, eng, inR, outW); outW.Close() }()
	msgs := make(chan map[string]any, 100)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("server wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			msgs <- m
		}
		close(msgs)
	}()
	for i := 0; i < len(lines); {
		if p := lines[i].Poll; p != nil {
			pollUntil(t, p, inW, msgs, vars)
			i++
			continue
		}
		var group []map[string]any
		if s := lines[i].Send; s != nil {
			req, err := substitute(s, vars)
			if err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
			b, _ := json.Marshal(req)
			if _, err := inW.Write(append(b, '\n')); err != nil {
				t.Fatal(err)
			}
			i++
		}
		for ; i < len(lines) && lines[i].Send == nil && lines[i].Poll == nil; i++ {
			group = append(group, lines[i].Recv)
		}
		deadline := time.After(2 * time.Minute)
		for len(group) > 0 {
			var m map[string]any
			var ok bool
			select {
			case m, ok = <-msgs:
				if !ok {
					t.Fatalf("server closed its output; still expected %v", group)
				}
			case <-deadline:
				t.Fatalf("no message within 2m; still expected %v", group)
			}
			k := slices.IndexFunc(group, func(want map[string]any) bool { return match(want, m, vars) })
			if k < 0 {
				got, _ := json.Marshal(m)
				want, _ := json.Marshal(group)
				t.Fatalf("unexpected message %s\nexpected one of %s", got, want)
			}
			group = slices.Delete(group, k, k+1)
		}
	}
	inW.Close()
	for m := range msgs {
		got, _ := json.Marshal(m)
		t.Errorf("unexpected message after the transcript: %s", got)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// pollUntil plays a poll line (see poll).
func pollUntil(t *testing.T, p *poll, in io.Writer, msgs <-chan map[string]any, vars map[string]any) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for id := 1000; ; id++ {
		req, err := substitute(p.Send, vars)
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		req.(map[string]any)["id"] = id
		b, _ := json.Marshal(req)
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		select {
		case m = <-msgs:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("poll: no reply to %s", b)
		}
		if got, ok := m["id"].(float64); !ok || int(got) != id {
			b, _ := json.Marshal(m)
			t.Fatalf("poll: unexpected message %s", b)
		}
		if match(p.Until, m, vars) {
			return
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(m)
			t.Fatalf("poll: still %s after 2m; want %v", b, p.Until)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var placeholder = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// substitute replaces bound ${NAME}s in v.
func substitute(v any, vars map[string]any) (any, error) {
	switch v := v.(type) {
	case string:
		if m := placeholder.FindStringSubmatch(v); m != nil && m[0] == v {
			if b, ok := vars[m[1]]; ok {
				return b, nil
			}
			return nil, fmt.Errorf("%s is not bound", v)
		}
		var err error
		s := placeholder.ReplaceAllStringFunc(v, func(p string) string {
			b, ok := vars[p[2:len(p)-1]]
			if !ok {
				err = fmt.Errorf("%s is not bound", p)
			}
			return fmt.Sprint(b)
		})
		return s, err
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			y, err := substitute(x, vars)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			y, err := substitute(x, vars)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	}
	return v, nil
}

// match reports whether got matches want; on a match, the names first seen in want are
// bound in vars (on a mismatch vars is unchanged).
func match(want, got any, vars map[string]any) bool {
	bound := map[string]any{}
	var later []func() bool
	if !match1(want, got, vars, bound, &later) {
		return false
	}
	for _, f := range later {
		if !f() {
			return false
		}
	}
	for k, v := range bound {
		vars[k] = v
	}
	return true
}

// match1 matches want against got, binding names in bound; strings with embedded names
// are checked once the whole value has been matched (later), when every name is bound.
func match1(want, got any, vars, bound map[string]any, later *[]func() bool) bool {
	switch w := want.(type) {
	case string:
		if w == "<any>" || w == "<any?>" {
			return true
		}
		if re, ok := strings.CutPrefix(w, "<re:"); ok && strings.HasSuffix(re, ">") {
			expr := placeholder.ReplaceAllStringFunc(re[:len(re)-1], func(p string) string {
				return regexp.QuoteMeta(fmt.Sprint(vars[p[2:len(p)-1]]))
			})
			s, ok := got.(string)
			return ok && regexp.MustCompile(expr).MatchString(s)
		}
		if m := placeholder.FindStringSubmatch(w); m != nil && m[0] == w {
			if v, ok := vars[m[1]]; ok {
				return reflect.DeepEqual(v, got)
			}
			if v, ok := bound[m[1]]; ok {
				return reflect.DeepEqual(v, got)
			}
			bound[m[1]] = got
			return true
		}
		*later = append(*later, func() bool {
			all := map[string]any{}
			for k, v := range vars {
				all[k] = v
			}
			for k, v := range bound {
				all[k] = v
			}
			s, err := substitute(w, all)
			return err == nil && s == got
		})
		return true
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				return false
			}
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok && wv != "<any?>" || ok && !match1(wv, gv, vars, bound, later) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !match1(w[i], g[i], vars, bound, later) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, got)
}
