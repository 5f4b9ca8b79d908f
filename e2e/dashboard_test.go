package e2e

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDashboardCLI: `kinetic dashboard` prints a URL on 127.0.0.1 with a token, serves
// the store's jobs with it and nothing without it, and stops on Ctrl-C.
func TestDashboardCLI(t *testing.T) {
	e := newEnv(t)
	r := e.run("run", "--", "sh", "-c", "echo hi")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	cmd := exec.Command(e.bin, "dashboard", "--port", "0")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "HOME="+e.home)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSpace(line)
	base, token, ok := strings.Cut(url, "/?token=")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || len(token) < 32 {
		t.Fatalf("printed %q: want http://127.0.0.1:PORT/?token=...", url)
	}
	resp, err := http.Get(base + "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", base+"/api/jobs", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"in_store":1`) || !strings.Contains(string(b), "SUCCEEDED") {
		t.Errorf("with the token: %d %.300s", resp.StatusCode, b)
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after Ctrl-C: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the dashboard did not stop on Ctrl-C")
	}
}
