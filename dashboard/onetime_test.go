package dashboard

import (
	"strings"
	"testing"
	"time"
)

// A one-time code works once, and not after OneTimeTTL.
func TestOneTimeCode(t *testing.T) {
	s := &Server{o: Options{Token: "0123456789abcdef0123"}}
	u, err := s.OneTimeURL("http://127.0.0.1:1/")
	if err != nil {
		t.Fatal(err)
	}
	_, code, ok := strings.Cut(u, "/?once=")
	if !ok || strings.Contains(u, s.o.Token) {
		t.Fatalf("OneTimeURL = %q", u)
	}
	if !s.useCode(code) {
		t.Fatal("a fresh code was refused")
	}
	if s.useCode(code) {
		t.Fatal("a code worked twice")
	}
	u, _ = s.OneTimeURL("http://127.0.0.1:1")
	_, code, _ = strings.Cut(u, "/?once=")
	s.codes[code] = time.Now().Add(-time.Second) // its time is up
	if s.useCode(code) {
		t.Fatal("an expired code worked")
	}
	if s.useCode("") || s.useCode("guess") {
		t.Fatal("a code that was never made worked")
	}
}
