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

// FuzzDecodeEnvelope holds the fast decoder to encoding/json: whatever it accepts,
// json.Unmarshal reads the same; and every envelope Encode writes it reads back.
func FuzzDecodeEnvelope(f *testing.F) {
	code := 2
	at := time.Date(2026, 11, 27, 8, 0, 0, 5, time.UTC)
	for _, e := range []*Envelope{
		{Success: true, Host: "0", HasValue: true, Value: []byte("abc"), ValueRepr: "'abc'", StartedAt: at, FinishedAt: at.In(time.FixedZone("", -7200))},
		{Phase: "call", Host: "0", ExcType: "builtins.ValueError", ExcMessage: "bad", Traceback: "T\n", ExitCode: &code},
	} {
		f.Add(e.Encode())
	}
	f.Add([]byte(`{"success":true,"host":"0","has_value":false,"exit_code":-0}`))
	f.Add([]byte(`{"success":true,"success":false,"x":1}`))
	f.Add([]byte(`{"host":"\xff","value":"====","finished_at":"2026-11-27T08:00:00Z"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := decodeFast(b)
		if !ok {
			return
		}
		var want Envelope
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("fast decoder accepted %q, encoding/json refuses it: %v", b, err)
		}
		if got, exp := json.RawMessage(fast.Encode()), json.RawMessage(want.Encode()); !bytes.Equal(got, exp) {
			t.Fatalf("%q: fast %s, encoding/json %s", b, got, exp)
		}
		if !fast.StartedAt.Equal(want.StartedAt) || !fast.CalledAt.Equal(want.CalledAt) || !fast.FinishedAt.Equal(want.FinishedAt) {
			t.Fatalf("%q: times differ", b)
		}
	})
}

func TestDecodeFastReadsEncode(t *testing.T) {
	code := 0
	e := &Envelope{Success: true, Host: "0", HasValue: true, Value: []byte{1, 2, 3}, ValueRepr: "[1, 2, 3]", ExitCode: &code,
		StartedAt: time.Now().UTC(), CalledAt: time.Now().UTC(), FinishedAt: time.Now().UTC()}
	got, ok := decodeFast(e.Encode())
	if !ok || !bytes.Equal(got.Encode(), e.Encode()) {
		t.Fatalf("decodeFast(Encode()) = %+v, %v", got, ok)
	}
	if _, ok := decodeFast((&Envelope{ExcMessage: "a\nb"}).Encode()); ok {
		t.Fatal("an escaped string taken by the fast decoder")
	}
}
