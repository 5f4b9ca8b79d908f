package imagetest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Proxy is a reverse proxy in front of a registry that records each request
// ("METHOD PATH?QUERY STATUS"), so a test sees what a client did against the real
// registry (docker-registry, which mounts blobs across repositories).
type Proxy struct {
	// Host is "127.0.0.1:PORT", the registry part of image references through it.
	Host string
	mu   sync.Mutex
	reqs []string
}

// StartProxy starts a Proxy in front of the registry at registryHost (plain HTTP) and
// stops it when t ends.
func StartProxy(t testing.TB, registryHost string) *Proxy {
	t.Helper()
	p := &Proxy{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: registryHost})
	rp.ModifyResponse = func(r *http.Response) error {
		p.mu.Lock()
		q, _ := url.QueryUnescape(r.Request.URL.RawQuery)
		p.reqs = append(p.reqs, fmt.Sprintf("%s %s?%s %d", r.Request.Method, r.Request.URL.Path, q, r.StatusCode))
		p.mu.Unlock()
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	p.Host = srv.Listener.Addr().String()
	return p
}

// Take returns the requests recorded since the last Take.
func (p *Proxy) Take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.reqs
	p.reqs = nil
	return out
}

// Count is how many of reqs are method requests whose line holds every one of parts.
func Count(reqs []string, method string, parts ...string) int {
	n := 0
	for _, r := range reqs {
		ok := strings.HasPrefix(r, method+" ")
		for _, p := range parts {
			ok = ok && strings.Contains(r, p)
		}
		if ok {
			n++
		}
	}
	return n
}
