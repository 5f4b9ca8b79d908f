package storetest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Fault is the answer a FaultProxy gives, instead of its server's, to the requests it
// matches: Method ("" for any) and a substring of the path (and query).
type Fault struct {
	Method, PathContains string
	Status               int
	ContentType, Body    string
}

// FaultProxy is a reverse proxy on 127.0.0.1 in front of a real store server (an
// emulator): it passes every request on, except those the fault set matches, which it
// answers itself, as the service refuses (a 403, a 429, a 503, in the service's own
// error format). It injects faults; the emulator keeps the state.
type FaultProxy struct {
	srv   *httptest.Server
	mu    sync.Mutex
	fault *Fault
	hits  int
}

// StartFaultProxy starts a FaultProxy in front of target (http://host:port), closed
// when t ends.
func StartFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := p.match(r); f != nil {
			w.Header().Set("Content-Type", f.ContentType)
			w.WriteHeader(f.Status)
			w.Write([]byte(f.Body))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// URL is the proxy's base URL, http://127.0.0.1:PORT.
func (p *FaultProxy) URL() string { return p.srv.URL }

// Set makes f the fault (nil: none) and resets the count of requests it answered.
func (p *FaultProxy) Set(f *Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault, p.hits = f, 0
}

// Hits is how many requests the fault answered since Set.
func (p *FaultProxy) Hits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits
}

func (p *FaultProxy) match(r *http.Request) *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.fault
	if f == nil || (f.Method != "" && f.Method != r.Method) || !strings.Contains(r.URL.RequestURI(), f.PathContains) {
		return nil
	}
	p.hits++
	return f
}
