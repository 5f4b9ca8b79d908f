package job

import (
	"testing"
	"time"
)

// BenchmarkDecodeEnvelope measures the fast decoder on the two envelopes a batch's
// results read most: a success with a value, and a failure with its traceback.
func BenchmarkDecodeEnvelope(b *testing.B) {
	at := time.Date(2026, 11, 27, 8, 0, 0, 123456789, time.UTC)
	code := 1
	for _, c := range []struct {
		name string
		e    *Envelope
	}{
		{"success", &Envelope{Success: true, Host: "0", HasValue: true, Value: []byte("a value of some length"), ValueRepr: "'a value'", StartedAt: at, CalledAt: at, FinishedAt: at}},
		{"failure", &Envelope{Phase: PhaseCall, Host: "3", ExcType: "builtins.ValueError", ExcMessage: "bad input", Traceback: "Traceback (most recent call last): file x line 3", ExitCode: &code, StartedAt: at, FinishedAt: at}},
	} {
		enc := c.e.Encode()
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, ok := decodeFast(enc); !ok {
					b.Fatal("decodeFast refused an envelope Encode wrote")
				}
			}
		})
	}
}

// BenchmarkEncodeEnvelope measures Encode on a failure whose message and traceback need
// escaping (quotes, newlines, <, > and &, U+2028, invalid UTF-8) and on a plain success.
func BenchmarkEncodeEnvelope(b *testing.B) {
	at := time.Date(2026, 11, 27, 8, 0, 0, 123456789, time.UTC)
	code := 1
	for _, c := range []struct {
		name string
		e    *Envelope
	}{
		{"success", &Envelope{Success: true, Host: "0", HasValue: true, Value: []byte("a value of some length"), ValueRepr: "'a value'", StartedAt: at, CalledAt: at, FinishedAt: at}},
		{"escaped", &Envelope{Phase: PhaseCall, Host: "3", ExcType: "builtins.ValueError", ExcMessage: "bad \"input\" <x> & y\u2028\xff", Traceback: "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n\tfoo()\nValueError: bad\n", ExitCode: &code, StartedAt: at, FinishedAt: at}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				c.e.Encode()
			}
		})
	}
}
