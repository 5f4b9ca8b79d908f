package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/protocol"
)

// goJSONWords are Go's own words for a decoding error: never sent to the client.
var goJSONWords = []string{"invalid character", "cannot unmarshal", "unexpected end of JSON", "json:", "Go value"}

// TestUnreadableLinesAnswered: every line the server reads is answered. A line that is
// not a request (Python's NaN or Infinity, cut short, garbage) gets an InvalidArgument
// error carrying the id found in it, or none, and the line's number; the message says
// what was wrong in plain words; the server goes on serving.
func TestUnreadableLinesAnswered(t *testing.T) {
	lines := []struct {
		send   string
		id     int64 // the id the answer must carry (0: none)
		saying string
	}{
		{`{"id": 7, "method": "result", "params": {"job_id": "job-x", "timeout": NaN}}`, 7, "NaN or Infinity"},
		{`{"id": 8, "method": "result", "params": {"job_id": "job-x", "timeout": Infinity, "id": 99}}`, 8, "NaN or Infinity"},
		{`{"method": "cancel", "params": {"id": 5, "timeout": -Infinity}, "id": -3}`, -3, "NaN or Infinity"},
		{`{"id":12,"method":"status","params":{"job_id":"job-x","store":"a \"NaN\" string", "timeout": NaN}}`, 12, "NaN or Infinity"},
		{`{"id": 13, "method": "stat`, 13, "cut-short line"},
		{`{"id": 14, "method": "status", "params": {"job_id": nope}}`, 14, "not valid JSON"},
		{`{"id": 15, "method": 3}`, 15, `"method" is a JSON number, not a string`},
		{`this is not JSON`, 0, "not valid JSON"},
		{`[1, 2]`, 0, "it is a JSON array, not an object"},
		{`{"id": "16", "method": "status"}`, 0, `"id" is a JSON string, not a whole number`},
		{`{"id": 17`, 0, "cut-short line"}, // the id itself may be cut short: not trusted
		{`{"params": {"id": 18}, "method": "x", NaN}`, 0, "NaN or Infinity"},
	}
	in, out := serveLines(t)
	for i, l := range lines {
		if _, err := io.WriteString(in, l.send+"\n"); err != nil {
			t.Fatal(err)
		}
		m := next(t, out)
		if m.Error == nil || m.Error.Class != protocol.InvalidArgument {
			t.Errorf("%s: answer %+v, want an InvalidArgument error", l.send, m)
			continue
		}
		if m.ID != l.id || m.Line != int64(i+1) {
			t.Errorf("%s: answer has id %d and line %d, want id %d and line %d", l.send, m.ID, m.Line, l.id, i+1)
		}
		if !strings.Contains(m.Error.Message, l.saying) || !strings.HasPrefix(m.Error.Message, "the engine could not read ") {
			t.Errorf("%s: message %q, want it to say %q", l.send, m.Error.Message, l.saying)
		}
		for _, w := range goJSONWords {
			if strings.Contains(m.Error.Message, w) {
				t.Errorf("%s: message %q holds Go's words %q", l.send, m.Error.Message, w)
			}
		}
	}
	// Still serving.
	io.WriteString(in, `{"id": 20, "method": "hello"}`+"\n")
	if m := next(t, out); m.ID != 20 || m.Error != nil || m.Line != 0 {
		t.Errorf("hello after the bad lines: %+v", m)
	}
}

// serveLines starts a server (with no engine: only lines it cannot read and hello
// reach it) and returns its input, and its messages after the greeting.
func serveLines(t *testing.T) (io.WriteCloser, <-chan protocol.Message) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Serve(ctx, nil, inR, outW); outW.Close(); close(done) }()
	t.Cleanup(func() { inW.Close(); cancel(); <-done })
	msgs := make(chan protocol.Message, 16)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m protocol.Message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("the server wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			if m.Protocol == 0 {
				msgs <- m
			}
		}
	}()
	return inW, msgs
}

func next(t *testing.T, msgs <-chan protocol.Message) protocol.Message {
	t.Helper()
	select {
	case m, ok := <-msgs:
		if !ok {
			t.Fatal("the server stopped")
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10 s")
	}
	return protocol.Message{}
}

// TestBadParamsPlainWords: params of the wrong type are refused naming the field, in
// plain words.
func TestBadParamsPlainWords(t *testing.T) {
	h := handle(func(_ *Server, _ *call, r *protocol.ResultRequest) (*protocol.Empty, error) { return nil, nil })
	for params, want := range map[string]string{
		`{"timeout": "10"}`:   `bad params: "timeout" is a JSON string, not a number`,
		`{"stream_logs": 1}`:  `bad params: "stream_logs" is a JSON number, not true or false`,
		`[1]`:                 `bad params: it is a JSON array, not an object`,
		`{"job_id": ["x"]}`:   `bad params: "job_id" is a JSON array, not a string`,
		`{"inline_max": 1.5}`: `bad params: "inline_max" is a JSON number 1.5, not a whole number`,
	} {
		_, err := h(nil, &call{Context: context.Background()}, json.RawMessage(params))
		if err == nil || err.Error() != want {
			t.Errorf("params %s: %v, want %q", params, err, want)
		}
	}
	// A wrong value in an object of names is named by its key (Go names only the map).
	sub := handle(func(_ *Server, _ *call, r *protocol.SubmitRequest) (*protocol.Empty, error) { return nil, nil })
	mp := handle(func(_ *Server, _ *call, r *protocol.MapRequest) (*protocol.Empty, error) { return nil, nil })
	for _, c := range []struct {
		h      handler
		params string
		want   string
	}{
		{sub, `{"config": {"project": "p", "zone": ["a"]}}`, `bad params: "config.zone" is a JSON array, not a string`},
		{sub, `{"config": {"store": 123}}`, `bad params: "config.store" is a JSON number, not a string`},
		{sub, `{"config": "x"}`, `bad params: "config" is a JSON string, not an object`},
		{mp, `{"tags": {"a": 1}}`, `bad params: "tags.a" is a JSON number, not a string`},
		{mp, `{"template": {"config": {"zone": true}}}`, `bad params: "template.config.zone" is a JSON bool, not a string`},
	} {
		_, err := c.h(nil, &call{Context: context.Background()}, json.RawMessage(c.params))
		if err == nil || err.Error() != c.want {
			t.Errorf("params %s: %v, want %q", c.params, err, c.want)
		}
	}
}
