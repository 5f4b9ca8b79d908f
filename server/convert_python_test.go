package server

import (
	"encoding/json"
	"testing"

	"github.com/kinetic-run/kinetic/protocol"
)

// TestSubmitPythonVersion: the client's Python minor version reaches the engine; a
// client that omits it (an older SDK) sends none, and the engine decides.
func TestSubmitPythonVersion(t *testing.T) {
	for raw, want := range map[string]string{
		`{"kind": "python-pickle", "python": "/usr/bin/python3", "python_version": "3.12"}`: "3.12",
		`{"kind": "python-pickle", "python": "/usr/bin/python3"}`:                           "",
	} {
		var p protocol.SubmitRequest
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			t.Fatal(err)
		}
		if got := submitRequest(&p).PythonVersion; got != want {
			t.Errorf("%s: PythonVersion %q, want %q", raw, got, want)
		}
	}
}
