package gcstest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEmulatorDiesWithItsProcess: a process that started the emulator and is killed
// (SIGKILL: no cleanup runs) takes the emulator with it. Before, the emulator of a
// killed bench kept running and held the shared heavy-test lock its parent had inherited.
func TestEmulatorDiesWithItsProcess(t *testing.T) {
	if os.Getenv("GCSTEST_CHILD") == "1" {
		s := Start(t)
		fmt.Printf("EMULATOR %d\n", s.cmd.Process.Pid)
		time.Sleep(time.Minute) // killed by the parent test
		return
	}
	child := exec.Command(os.Args[0], "-test.run", "^TestEmulatorDiesWithItsProcess$", "-test.count=1")
	child.Env = append(os.Environ(), "GCSTEST_CHILD=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	pid := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "EMULATOR "); ok {
			pid, _ = strconv.Atoi(v)
			break
		}
	}
	if pid == 0 {
		child.Process.Kill()
		t.Fatal("the child did not start an emulator")
	}
	child.Process.Kill()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if !alive(pid) {
			return
		}
	}
	exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
	t.Fatalf("the emulator (pid %d) outlived the process that started it", pid)
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(raw)[strings.LastIndex(string(raw), ")")+1:])
	return len(f) > 0 && f[0] != "Z"
}
