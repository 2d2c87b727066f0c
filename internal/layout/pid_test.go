package layout

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A process that exited and that its parent has not reaped yet is dead:
// kill(pid, 0) still finds it, and a container's init that reaps late
// kept a killed wiggum "alive" to the run after it.
func TestPIDAliveTakesAZombieForDead(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer func() { _ = cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("no /proc: %v", err)
			}
			t.Skipf("no /proc here: %v", err)
		}
		if f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never became a zombie")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if PIDAlive(pid) {
		t.Errorf("PIDAlive(%d) = true for a zombie", pid)
	}
	if !PIDAlive(os.Getpid()) {
		t.Error("PIDAlive says this process is dead")
	}
}
