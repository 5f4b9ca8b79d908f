package job

import (
	"encoding/base64"
	"strconv"
	"strings"
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
			i++
			if !jsonSafe[c] {
				b = appendASCIIEscape(append(b, s[start:i-1]...), c)
				start = i
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if esc := runeEscape(r, size); esc != "" {
			b = append(append(b, s[start:i]...), esc...)
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonSafe[c] says ASCII c is written as it is: not a control character, quote,
// backslash, <, > or &.
var jsonSafe = func() (safe [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		safe[c] = !strings.ContainsRune(`"\<>&`, rune(c))
	}
	return safe
}()

// shortEscapes are the ASCII characters with a two-character escape (\n, \"), by the
// letter after the backslash.
var shortEscapes = [utf8.RuneSelf]byte{'"': '"', '\\': '\\', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

// appendASCIIEscape appends the escape of ASCII c.
func appendASCIIEscape(b []byte, c byte) []byte {
	if e := shortEscapes[c]; e != 0 {
		return append(b, '\\', e)
	}
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
}

// runeEscape is how the rune r, size bytes long, is written if not as it is: invalid
// UTF-8 as U+FFFD, U+2028 and U+2029 escaped; "" for as it is.
func runeEscape(r rune, size int) string {
	switch {
	case r == utf8.RuneError && size == 1:
		return `\ufffd`
	case r == '\u2028':
		return `\u2028`
	case r == '\u2029':
		return `\u2029`
	}
	return ""
}
