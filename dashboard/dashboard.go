// Package dashboard is `kinetic dashboard`: a web UI over the engine and the store. It
// serves server-rendered pages (html/template, with a little vanilla JS and CSS embedded
// with go:embed) for the jobs of a store (a paged, filtered table that updates itself),
// one job (its handle, a timeline picture of its phases, live logs, the failure's
// traceback, Cancel and Clean up), one batch (counts, a Gantt chart of its children,
// failures) and the cluster (Kubernetes backends). Every request must carry the access
// token the server was started with (in the URL once, then a cookie), so another user of
// a shared machine can neither read nor cancel jobs; actions are POSTs that carry the
// token in the form too.
package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/job"
)

//go:embed templates/*.html static/*
var assets embed.FS

// cookieName holds the token once a browser has opened the printed URL.
const cookieName = "kinetic_dashboard"

// PageSize is the number of jobs on one page of the jobs table.
const PageSize = 50

// Options configure a dashboard server.
type Options struct {
	// Token is the access token every request must carry (NewToken makes one).
	Token string
	// Store is the store URL whose jobs are shown ("" = the engine's configured store).
	Store string
	// Backend is the configured backend's name (the cluster page says what it is).
	Backend string
	// Cluster, if set, is the Kubernetes cluster of the configured backend (the cluster
	// page lists its nodes, pools and accelerators); ClusterErr says why there is none
	// when the backend is a Kubernetes one.
	Cluster    *infra.Target
	ClusterErr error
	// Cloud, if set, reads the cluster of the configured profile as its cloud describes
	// it: on GKE a *gke.Status through Google's APIs (infra/gke.GetStatus, what `kinetic
	// status` prints): its state and node pools.
	Cloud func(ctx context.Context) (any, error)
	// Fresh is how long one store listing is reused by the requests that follow it
	// (default 1s): a page and its polls share one listing.
	Fresh time.Duration
	// Poll is how often pages ask for updates, in the browser (default 2s).
	Poll time.Duration
}

// Server is the dashboard's HTTP handler. It is safe for concurrent use.
type Server struct {
	e    *engine.Engine
	o    Options
	tmpl *template.Template
	mux  *http.ServeMux

	group  singleflight.Group
	onceMu sync.Mutex
	codes  map[string]time.Time // one-time codes (OneTimeURL) not yet used, and when each expires
	mu     sync.Mutex
	listed *listing
	known  map[string]jobTimes // final jobs' times (and failures), read once
}

// NewToken returns a random access token (24 bytes of crypto/rand, URL-safe).
func NewToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make the dashboard's access token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// New returns a dashboard over e.
func New(e *engine.Engine, o Options) (*Server, error) {
	if len(o.Token) < 16 {
		return nil, errors.New("dashboard: the access token must be at least 16 characters (use NewToken)")
	}
	if o.Fresh == 0 {
		o.Fresh = time.Second
	}
	if o.Poll == 0 {
		o.Poll = 2 * time.Second
	}
	t, err := template.New("").Funcs(funcs).ParseFS(assets, "templates/*.html")
	if err != nil {
		return nil, err
	}
	s := &Server{e: e, o: o, tmpl: t, known: map[string]jobTimes{}}
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/jobs", http.StatusSeeOther) })
	m.HandleFunc("GET /jobs", s.jobsPage)
	m.HandleFunc("GET /api/jobs", s.jobsAPI)
	m.HandleFunc("GET /jobs/{id}", s.jobPage)
	m.HandleFunc("GET /api/jobs/{id}", s.jobAPI)
	m.HandleFunc("GET /api/jobs/{id}/logs", s.logsAPI)
	m.HandleFunc("POST /jobs/{id}/cancel", s.cancelJob)
	m.HandleFunc("POST /jobs/{id}/cleanup", s.cleanupJob)
	m.HandleFunc("GET /batches", s.batchesPage)
	m.HandleFunc("GET /batches/{id}", s.batchPage)
	m.HandleFunc("GET /api/batches/{id}", s.batchAPI)
	m.HandleFunc("POST /batches/{id}/cancel", s.cancelBatch)
	m.HandleFunc("GET /cluster", s.clusterPage)
	s.mux = m
}

// ServeHTTP refuses requests without the token, then routes them.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
	if c := r.URL.Query().Get("once"); c != "" {
		// A one-time code (OneTimeURL) trades for the token's cookie once, within its
		// time: what a browser opener had on its command line is useless after that.
		if !s.useCode(c) {
			s.refuse(w, r, http.StatusForbidden, "This one-time link was already used or has expired: open the URL `kinetic dashboard` printed.")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.o.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		u := *r.URL
		v := u.Query()
		v.Del("once")
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	if q := r.URL.Query().Get("token"); q != "" {
		if !s.tokenOK(q) {
			s.refuse(w, r, http.StatusForbidden, "This access token is not the dashboard's: open the URL `kinetic dashboard` printed.")
			return
		}
		// Keep the token in a cookie, and out of the address bar, history and logs.
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		if r.Method == http.MethodGet {
			u := *r.URL
			v := u.Query()
			v.Del("token")
			u.RawQuery = v.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
	} else if !s.requestAuthorized(r) {
		s.refuse(w, r, http.StatusUnauthorized, "This dashboard needs its access token: open the URL `kinetic dashboard` printed (it ends in ?token=...).")
		return
	}
	if r.Method == http.MethodPost && !s.tokenOK(r.PostFormValue("token")) && !s.tokenOK(bearer(r)) {
		// A cookie alone does not authorise an action: another site could make the
		// browser send it. The page's forms carry the token.
		s.refuse(w, r, http.StatusForbidden, "An action needs the access token in the form: use the dashboard's buttons.")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// OneTimeTTL is how long a one-time code (OneTimeURL) can be used.
const OneTimeTTL = 30 * time.Second

// OneTimeURL returns base (the server's "http://host:port") with a one-time code that
// a browser trades, once and within OneTimeTTL, for the access token's cookie. It is what
// `kinetic dashboard --open` hands the desktop's opener, whose command line every local
// user can read (ps): the token itself never goes there.
func (s *Server) OneTimeURL(base string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make the dashboard's one-time code: %w", err)
	}
	c := base64.RawURLEncoding.EncodeToString(b)
	s.onceMu.Lock()
	defer s.onceMu.Unlock()
	if s.codes == nil {
		s.codes = map[string]time.Time{}
	}
	now := time.Now()
	for k, exp := range s.codes {
		if now.After(exp) {
			delete(s.codes, k)
		}
	}
	s.codes[c] = now.Add(OneTimeTTL)
	return strings.TrimSuffix(base, "/") + "/?once=" + c, nil
}

// useCode reports whether c is a one-time code not used yet and not expired, and uses
// it up.
func (s *Server) useCode(c string) bool {
	s.onceMu.Lock()
	defer s.onceMu.Unlock()
	for k, exp := range s.codes {
		if subtle.ConstantTimeCompare([]byte(k), []byte(c)) == 1 {
			delete(s.codes, k)
			return time.Now().Before(exp)
		}
	}
	return false
}

func bearer(r *http.Request) string {
	a := r.Header.Get("Authorization")
	if t, ok := strings.CutPrefix(a, "Bearer "); ok {
		return t
	}
	return ""
}

func (s *Server) requestAuthorized(r *http.Request) bool {
	if c, err := r.Cookie(cookieName); err == nil && s.tokenOK(c.Value) {
		return true
	}
	return s.tokenOK(bearer(r))
}

func (s *Server) tokenOK(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.o.Token)) == 1
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// Serve serves the dashboard on ln until ctx is done.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		return nil
	}
}

// page renders a full page with the layout.
func (s *Server) page(w http.ResponseWriter, code int, name, title, nav string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	err := s.tmpl.ExecuteTemplate(w, name, map[string]any{"Title": title, "Nav": nav, "D": data, "Token": s.o.Token, "Poll": s.o.Poll.Milliseconds()})
	if err != nil {
		fmt.Fprintf(w, "<p class=error>the page could not be drawn: %s</p>", template.HTMLEscapeString(err.Error()))
	}
}

// fail answers with an error page (or JSON for the API), with a status code from err.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, engine.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, job.ErrDamaged):
		code = http.StatusUnprocessableEntity
	case r.Context().Err() != nil:
		return // the browser went away
	}
	msg := err.Error()
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, code, map[string]string{"error": msg})
		return
	}
	s.page(w, code, "error.html", http.StatusText(code), "", map[string]any{"Code": code, "Message": msg})
}
