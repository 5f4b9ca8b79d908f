package e2e

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `kinetic dashboard --open` (issue 45, item 7) handed xdg-open the URL with the access
// token, on a command line every local user can read (ps). Now the opener gets a
// one-time URL: it trades for the token's cookie once, and is refused after that.
func TestDashboardOpenNoTokenOnCommandLine(t *testing.T) {
	e := newEnv(t)
	// The desktop's opener, as a script that records its command line (no browser here).
	bin := filepath.Join(e.home, "bin")
	os.MkdirAll(bin, 0o755)
	argv := filepath.Join(e.home, "opener-argv")
	os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+argv+".tmp && mv "+argv+".tmp "+argv+"\n"), 0o755)
	cmd := exec.Command(e.bin, "dashboard", "--open", "--port", "0")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "HOME="+e.home, "KINETIC_PROJECT=",
		"PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the dashboard printed no URL: %v", err)
	}
	printed := strings.TrimSpace(line)
	_, token, ok := strings.Cut(printed, "?token=")
	if !ok || len(token) < 16 {
		t.Fatalf("printed URL %q has no token", printed)
	}
	var opened string
	for deadline := time.Now().Add(20 * time.Second); ; {
		if b, err := os.ReadFile(argv); err == nil {
			opened = strings.TrimSpace(string(b))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the opener was never run")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("printed %s; the opener got %s", printed, opened)
	if strings.Contains(opened, token) {
		t.Fatalf("the opener's command line holds the access token: %q", opened)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	// The first use trades the code for the token's cookie.
	resp, err := client.Get(opened)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Value == token {
			cookie = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == nil {
		t.Fatalf("the one-time URL: %s, cookies %v", resp.Status, resp.Cookies())
	}
	req, _ := http.NewRequest("GET", strings.SplitN(opened, "?", 2)[0]+"jobs", nil)
	req.AddCookie(cookie)
	if resp, err := client.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the jobs page with the cookie: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// A second use (someone who read it in ps) is refused, and gets no cookie.
	resp, err = client.Get(opened)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("the one-time URL used again: %s, cookies %v", resp.Status, resp.Cookies())
	}
}
