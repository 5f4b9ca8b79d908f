package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/protocol"
)

// faultUnreadableLines: `kinetic serve --stdio` answers every line it reads. A request
// with NaN in it (what Python's json writes for float('nan')) is answered with its own
// id, a line with no id to read with its line number, in plain words; the next request
// is served.
func faultUnreadableLines(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, "serve", "--stdio")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "HOME="+e.home)
	cmd.Stdin = strings.NewReader(`{"id": 1, "method": "result", "params": {"job_id": "job-x", "timeout": NaN}}
garbage
{"id": 3, "method": "hello"}
`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output() // stdin ends: the engine answers what it read, then exits
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.Bytes())
	}
	type message struct {
		ID    int64 `json:"id"`
		Line  int64 `json:"line"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		Result map[string]any `json:"result"`
	}
	byLine := map[int64]message{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("a line that is not JSON: %q", sc.Text())
		}
		switch {
		case m.ID == 3:
			byLine[3] = m
		case m.Line != 0:
			byLine[m.Line] = m
		}
	}
	nan, garbage, hello := byLine[1], byLine[2], byLine[3]
	if nan.ID != 1 || nan.Error == nil || nan.Error.Type != "InvalidArgument" || !strings.Contains(nan.Error.Message, "NaN or Infinity") {
		t.Errorf("the NaN request: %+v, want an InvalidArgument error with id 1 saying NaN or Infinity\n%s", nan, out)
	}
	if garbage.ID != 0 || garbage.Error == nil || !strings.Contains(garbage.Error.Message, "could not read line 2") {
		t.Errorf("the garbage line: %+v, want an error for line 2\n%s", garbage, out)
	}
	for _, m := range []message{nan, garbage} {
		if m.Error != nil && (strings.Contains(m.Error.Message, "invalid character") || strings.Contains(m.Error.Message, "json:")) {
			t.Errorf("Go's words reach the client: %q", m.Error.Message)
		}
	}
	if hello.Error != nil || hello.Result["protocol"] != float64(protocol.Version) {
		t.Errorf("the request after them: %+v, want hello's answer\n%s", hello, out)
	}
}
