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
		if !first {
			if rest[0] != ',' {
				return nil, false
			}
			rest = rest[1:]
		}
		name, r, ok := fastString(rest)
		if !ok || len(r) == 0 || r[0] != ':' {
			return nil, false
		}
		rest = r[1:]
		switch string(name) {
		case "success", "has_value":
			var v bool
			switch {
			case bytes.HasPrefix(rest, []byte("true")):
				v, rest = true, rest[4:]
			case bytes.HasPrefix(rest, []byte("false")):
				rest = rest[5:]
			default:
				return nil, false
			}
			if name[0] == 's' {
				e.Success = v
			} else {
				e.HasValue = v
			}
		case "exit_code":
			k := 0
			for k < len(rest) && (rest[k] == '-' || rest[k] >= '0' && rest[k] <= '9') {
				k++
			}
			n, err := strconv.Atoi(string(rest[:k]))
			if err != nil || strconv.Itoa(n) != string(rest[:k]) {
				return nil, false
			}
			e.ExitCode, rest = &n, rest[k:]
		default:
			v, r, ok := fastString(rest)
			if !ok {
				return nil, false
			}
			rest = r
			switch string(name) {
			case "phase":
				e.Phase = string(v)
			case "host":
				e.Host = string(v)
			case "value_repr":
				e.ValueRepr = string(v)
			case "exc_type":
				e.ExcType = string(v)
			case "exc_message":
				e.ExcMessage = string(v)
			case "traceback":
				e.Traceback = string(v)
			case "value":
				raw, err := base64.StdEncoding.DecodeString(string(v))
				if err != nil {
					return nil, false
				}
				e.Value = raw
			case "started_at", "called_at", "finished_at":
				t, err := time.Parse(time.RFC3339Nano, string(v))
				if err != nil || !bytes.Equal(v, []byte(t.Format(time.RFC3339Nano))) {
					return nil, false // not as MarshalJSON writes it: encoding/json decides
				}
				switch name[0] {
				case 's':
					e.StartedAt = t
				case 'c':
					e.CalledAt = t
				default:
					e.FinishedAt = t
				}
			default:
				return nil, false
			}
		}
	}
	return e, true
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
