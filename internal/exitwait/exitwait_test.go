package exitwait

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// For returns once the child has exited and leaves it to Wait to reap:
// the exit status is still there to read.
func TestForLeavesTheExitToWait(t *testing.T) {
	for _, c := range []struct {
		script string
		code   int
		sig    syscall.Signal
	}{
		{"exit 3", 3, 0},
		{"kill -TERM $$", -1, syscall.SIGTERM},
		{"sleep 0.2", 0, 0},
	} {
		cmd := exec.Command("sh", "-c", c.script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		For(cmd.Process)
		if runtime.GOOS == "linux" {
			if st := procState(t, cmd.Process.Pid); st != "Z" {
				t.Fatalf("%q: For returned with the child in state %q, want a zombie (exited, not reaped)", c.script, st)
			}
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if c.code == 0 && err != nil || c.code != 0 && !errors.As(err, &ee) {
			t.Fatalf("%q: Wait after For: %v", c.script, err)
		}
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if cmd.ProcessState.ExitCode() != c.code || (c.sig != 0 && ws.Signal() != c.sig) {
			t.Fatalf("%q: exit %d (%v), want %d", c.script, cmd.ProcessState.ExitCode(), ws, c.code)
		}
	}
}

// Waiting for many children at once holds no thread per child: a Wait
// blocked in waitid would hold one each (and keep the runtime's monitor
// thread waking); For parks them all in the poller.
func TestForHoldsNoThreadPerChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pidfds are Linux's")
	}
	const children = 24
	var cmds []*exec.Cmd
	for range children {
		cmd := exec.Command("sleep", "0.5")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	before := threads(t)
	var wg sync.WaitGroup
	var started sync.WaitGroup
	started.Add(children)
	for _, cmd := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started.Done()
			For(cmd.Process)
		}()
	}
	started.Wait()
	// Every waiter is in For by now or about to be; the children sleep on.
	runtime.Gosched()
	during := threads(t)
	wg.Wait()
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if during-before >= children/2 {
		t.Fatalf("%d threads while %d children were waited for (%d before): a thread per waiter", during, children, before)
	}
}

func procState(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ...
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	return rest[:1]
}

func threads(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no thread count in /proc/self/status")
	return 0
}
