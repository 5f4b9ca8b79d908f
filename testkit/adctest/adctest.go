// Package adctest stands in for Google's OAuth 2.0 token endpoint and Artifact
// Registry's token exchange, for tests of what a user with only `gcloud auth
// application-default login` has: an authorized_user ADC file (client id and secret,
// a refresh token) whose token_uri points here. The token endpoint hands out access
// tokens for the refresh token it issued (grant_type=refresh_token, as
// golang.org/x/oauth2 sends it); the registry guard (Registry) answers as Artifact
// Registry does: 401 with a Bearer challenge whose realm is the registry's /v2/token,
// which hands out a registry token for Basic credentials whose password is an access
// token from here (go-containerregistry's google keychain sends `_token:TOKEN`; `docker
// login -u oauth2accesstoken` the same), and every other request needs that registry
// token. Everything listens on 127.0.0.1 (or where the caller serves the handler).
package adctest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Server is the token endpoint and the tokens it handed out.
type Server struct {
	// URL is the token endpoint (an ADC file's token_uri).
	URL string
	// Token, when set before the first request, is the access token handed out (e.g. a
	// test API server's, so the same ADC reaches a cluster); else a new one each time.
	Token string

	refresh  string
	mu       sync.Mutex
	access   map[string]bool
	registry map[string]bool
	minted   int
	exchange int
}

// Start starts the token endpoint; it stops when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{refresh: "1//refresh-" + random(), access: map[string]bool{}, registry: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(s.token))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/token"
	return s
}

func random() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	if r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("refresh_token") != s.refresh || r.Form.Get("client_id") == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"invalid_grant","error_description":"Bad Request"}`))
		return
	}
	s.mu.Lock()
	tok := s.Token
	if tok == "" {
		tok = "ya29.test-" + random()
	}
	s.access[tok] = true
	s.minted++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3599, "scope": "https://www.googleapis.com/auth/cloud-platform"})
}

// Minted is how many access tokens were handed out.
func (s *Server) Minted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.minted
}

// Exchanged is how many registry tokens Registry handed out for access tokens.
func (s *Server) Exchanged() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exchange
}

// AuthorizedUser writes an authorized_user ADC file (what `gcloud auth
// application-default login` writes, with token_uri here) into dir and returns its
// path; quotaProject "" leaves quota_project_id out, as gcloud does before `gcloud auth
// application-default set-quota-project`.
func (s *Server) AuthorizedUser(t testing.TB, dir, quotaProject string) string {
	t.Helper()
	m := map[string]string{"type": "authorized_user", "client_id": "764086051850-test.apps.googleusercontent.com",
		"client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty", "refresh_token": s.refresh, "token_uri": s.URL}
	if quotaProject != "" {
		m["quota_project_id"] = quotaProject
	}
	b, _ := json.Marshal(m)
	p := filepath.Join(dir, "application_default_credentials.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Registry guards a registry handler as Artifact Registry answers (see the package
// comment). pass, when set, lets requests it accepts through without a token: the
// nodes' own credentials (a kubelet pulls as the node's service account), which a test
// cluster's containerd does not have.
func (s *Server) Registry(next http.Handler, pass func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pass != nil && pass(r) {
			next.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/v2/token" {
			user, pw, ok := r.BasicAuth()
			s.mu.Lock()
			good := ok && (user == "_token" || user == "oauth2accesstoken") && s.access[pw]
			var rt string
			if good {
				rt = "registry-" + random()
				s.registry[rt] = true
				s.exchange++
			}
			s.mu.Unlock()
			if !good {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"failed authentication"}]}`))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"token": rt, "access_token": rt, "expires_in": 3600})
			return
		}
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			s.mu.Lock()
			good := s.registry[tok]
			s.mu.Unlock()
			if good {
				next.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("Www-Authenticate", `Bearer realm="http://`+r.Host+`/v2/token",service="`+r.Host+`"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"Unauthenticated request. Unauthenticated requests do not have permission \"artifactregistry.repositories.downloadArtifacts\" on resource"}]}`))
	})
}
