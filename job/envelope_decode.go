package job

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"time"
	"unicode/utf8"
)

// decodeFast parses an envelope as Encode writes it (one object, the fields in any
// order, strings without escapes): what a batch's results read a thousand times, without
// encoding/json's reflection. ok is false for anything else (an escape in a string, a
// field it does not know, spaces): the caller decodes it with encoding/json, which the
// fuzz test holds this to.
func decodeFast(b []byte) (e *Envelope, ok bool) {
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	e = &Envelope{}
	rest := b[1 : len(b)-1]
	for first := true; len(rest) > 0; first = false {
		if rest, ok = fastMember(e, rest, first); !ok {
			return nil, false
		}
	}
	return e, true
}

// fastMember decodes the member "name":value at the start of b (after a comma unless it
// is the first) into e, and returns what follows.
func fastMember(e *Envelope, b []byte, first bool) ([]byte, bool) {
	if !first {
		if b[0] != ',' {
			return nil, false
		}
		b = b[1:]
	}
	name, r, ok := fastString(b)
	if !ok || len(r) == 0 || r[0] != ':' {
		return nil, false
	}
	return fastValue(e, name, r[1:])
}

// fastValue decodes the value of field name at the start of b into e.
func fastValue(e *Envelope, name, b []byte) ([]byte, bool) {
	switch string(name) {
	case "success":
		return fastBool(b, &e.Success)
	case "has_value":
		return fastBool(b, &e.HasValue)
	case "exit_code":
		return fastInt(b, &e.ExitCode)
	case "value":
		return fastBase64(b, &e.Value)
	}
	if p := e.textField(name); p != nil {
		return fastText(b, p)
	}
	if p := e.timeField(name); p != nil {
		return fastTime(b, p)
	}
	return nil, false
}

// textField is the string field of e named name, nil if none is.
func (e *Envelope) textField(name []byte) *string {
	switch string(name) {
	case "phase":
		return &e.Phase
	case "host":
		return &e.Host
	case "value_repr":
		return &e.ValueRepr
	case "exc_type":
		return &e.ExcType
	case "exc_message":
		return &e.ExcMessage
	case "traceback":
		return &e.Traceback
	}
	return nil
}

// timeField is the time field of e named name, nil if none is.
func (e *Envelope) timeField(name []byte) *time.Time {
	switch string(name) {
	case "started_at":
		return &e.StartedAt
	case "called_at":
		return &e.CalledAt
	case "finished_at":
		return &e.FinishedAt
	}
	return nil
}

func fastBool(b []byte, v *bool) ([]byte, bool) {
	switch {
	case bytes.HasPrefix(b, []byte("true")):
		*v = true
		return b[4:], true
	case bytes.HasPrefix(b, []byte("false")):
		*v = false
		return b[5:], true
	}
	return nil, false
}

// fastInt reads an integer as encoding/json writes it.
func fastInt(b []byte, v **int) ([]byte, bool) {
	k := 0
	for k < len(b) && (b[k] == '-' || b[k] >= '0' && b[k] <= '9') {
		k++
	}
	n, err := strconv.Atoi(string(b[:k]))
	if err != nil || strconv.Itoa(n) != string(b[:k]) {
		return nil, false
	}
	*v = &n
	return b[k:], true
}

func fastText(b []byte, v *string) ([]byte, bool) {
	s, rest, ok := fastString(b)
	if ok {
		*v = string(s)
	}
	return rest, ok
}

func fastBase64(b []byte, v *[]byte) ([]byte, bool) {
	s, rest, ok := fastString(b)
	if !ok {
		return nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(string(s))
	if err != nil {
		return nil, false
	}
	*v = raw
	return rest, true
}

// fastTime reads a time as MarshalJSON writes it; anything else is for encoding/json to
// decide.
func fastTime(b []byte, v *time.Time) ([]byte, bool) {
	s, rest, ok := fastString(b)
	if !ok {
		return nil, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(s))
	if err != nil || !bytes.Equal(s, []byte(t.Format(time.RFC3339Nano))) {
		return nil, false
	}
	*v = t
	return rest, true
}

// fastString reads a JSON string at the start of b that needs no unescaping: its bytes
// (between the quotes) and what follows; ok is false if b does not start with one.
func fastString(b []byte) (s, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	for k := 1; k < len(b); k++ {
		switch c := b[k]; {
		case c == '"':
			s = b[1:k]
			if !utf8.Valid(s) {
				return nil, nil, false // encoding/json makes each bad byte U+FFFD
			}
			return s, b[k+1:], true
		case c == '\\' || c < 0x20:
			return nil, nil, false
		}
	}
	return nil, nil, false
}
