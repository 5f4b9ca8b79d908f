package job

import (
	"encoding/base64"
	"strconv"
	"time"
	"unicode/utf8"
)

// Encode returns the envelope as one line of JSON: the bytes json.Marshal gives (the
// fuzz test holds it to that), without its reflection. A local map writes one envelope
// per input, and json.MarshalIndent was a tenth of its group worker's time.
func (e *Envelope) Encode() []byte {
	b := make([]byte, 0, 160+len(e.ValueRepr)+len(e.ExcMessage)+len(e.Traceback)+base64.StdEncoding.EncodedLen(len(e.Value)))
	b = append(b, `{"success":`...)
	b = strconv.AppendBool(b, e.Success)
	if e.Phase != "" {
		b = appendField(b, "phase", e.Phase)
	}
	b = appendField(b, "host", e.Host)
	b = append(b, `,"has_value":`...)
	b = strconv.AppendBool(b, e.HasValue)
	if len(e.Value) > 0 {
		b = append(b, `,"value":"`...)
		b = base64.StdEncoding.AppendEncode(b, e.Value)
		b = append(b, '"')
	}
	for _, f := range [...]struct{ name, v string }{{"value_repr", e.ValueRepr}, {"exc_type", e.ExcType}, {"exc_message", e.ExcMessage}, {"traceback", e.Traceback}} {
		if f.v != "" {
			b = appendField(b, f.name, f.v)
		}
	}
	if e.ExitCode != nil {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(*e.ExitCode), 10)
	}
	for _, f := range [...]struct {
		name string
		t    time.Time
	}{{"started_at", e.StartedAt}, {"called_at", e.CalledAt}, {"finished_at", e.FinishedAt}} {
		if f.t.IsZero() {
			continue
		}
		tb, err := f.t.MarshalJSON() // a year outside 0–9999 cannot be written
		if err != nil {
			continue
		}
		b = append(b, `,"`...)
		b = append(b, f.name...)
		b = append(b, `":`...)
		b = append(b, tb...)
	}
	return append(b, "}\n"...)
}

// appendField appends ,"name":"v".
func appendField(b []byte, name, v string) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return appendString(b, v)
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string escaped as encoding/json escapes it: quote,
// backslash and control characters; <, > and & (HTML-safe); U+2028 and U+2029; and
// invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
