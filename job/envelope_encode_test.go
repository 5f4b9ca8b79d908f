package job

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// marshalled is what encoding/json writes for e: Encode must write the same bytes.
func marshalled(t *testing.T, e *Envelope) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestEncodeIsJSONMarshal(t *testing.T) {
	code := 3
	at := time.Date(2026, 11, 27, 8, 0, 0, 123456789, time.UTC)
	for _, e := range []*Envelope{
		{},
		{Success: true, Host: "0", HasValue: true, Value: []byte{0, 1, 2, 0xff}, ValueRepr: "[1, 2]", StartedAt: at, CalledAt: at.Add(time.Millisecond), FinishedAt: at.In(time.FixedZone("x", 3600))},
		{Phase: PhaseCall, Host: "1", ExcType: "builtins.ValueError", ExcMessage: "bad <input> & \"quotes\" \\ \n\t\r\b\f\x00\x1f \u2028\u2029 \xff\xfe é 日本", Traceback: "Traceback (most recent call last):\n  ...", ExitCode: &code},
	} {
		if got, want := e.Encode(), marshalled(t, e); !bytes.Equal(got, want) {
			t.Errorf("Encode:\n%s\njson.Marshal:\n%s", got, want)
		}
		if back, err := DecodeEnvelope(e.Encode()); err != nil || back.Success != e.Success || back.Host != e.Host || !back.FinishedAt.Equal(e.FinishedAt) {
			t.Errorf("decoded back: %+v, %v", back, err)
		}
	}
}

// FuzzEncode holds Encode to json.Marshal's bytes for any text in the envelope's strings
// (the exception's message and traceback are whatever the function raised).
func FuzzEncode(f *testing.F) {
	f.Add("ok", "builtins.KeyError", "'x'\n<tr>", []byte{1, 2}, int64(0), true)
	f.Add("", "", "\xff\u2028\x7f", []byte(nil), int64(-1), false)
	f.Fuzz(func(t *testing.T, repr, typ, msg string, value []byte, nanos int64, ok bool) {
		e := &Envelope{Success: ok, Host: repr, HasValue: len(value) > 0, Value: value, ValueRepr: repr, ExcType: typ, ExcMessage: msg, Traceback: msg + typ}
		if nanos > 0 {
			e.FinishedAt = time.Unix(0, nanos).UTC()
		}
		if got, want := e.Encode(), marshalled(t, e); !bytes.Equal(got, want) {
			t.Fatalf("Encode:\n%q\njson.Marshal:\n%q", got, want)
		}
	})
}
