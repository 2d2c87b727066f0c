package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/layout"
)

// TestMain lets the test binary act as wiggum's supervisor, and as a
// wiggum that starts a pooled command and is then killed.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == SuperviseArg {
		os.Exit(Supervise(os.Args[2:]))
	}
	if dir := os.Getenv("PROC_TEST_POOL_HELPER"); dir != "" {
		p := NewPool()
		_, err := Start(context.Background(), []string{"sh", "-c", `sleep 60 & echo $! > bg.pid; echo $$ > sh.pid; wait`},
			Options{Dir: dir, Pool: p, Grace: 200 * time.Millisecond})
		if err != nil {
			os.Exit(3)
		}
		select {}
	}
	os.Exit(m.Run())
}

func runPooled(t *testing.T, p *Pool, dir, script string) (string, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pr, err := Start(context.Background(), []string{"sh", "-c", script}, Options{Dir: dir, Stdout: w, Stderr: w, Pool: p})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string)
	go func() {
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				out <- b.String()
				return
			}
		}
	}()
	code, err := pr.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return <-out, code
}

// One supervisor serves command after command: each runs in the given
// directory with its exit code passed back, a command that cannot start
// gets 127 and says why, and the output pipe ends with the command.
func TestPoolReusesOneSupervisor(t *testing.T) {
	p := NewPool()
	defer p.Close()
	dir := t.TempDir()
	var parents []string
	for i := 0; i < 3; i++ {
		out, code := runPooled(t, p, dir, `echo $PPID; pwd; exit `+strconv.Itoa(i))
		if code != i {
			t.Fatalf("exit code %d, want %d", code, i)
		}
		f := strings.Fields(out)
		if len(f) != 2 || f[1] != dir {
			t.Fatalf("output %q: want the parent's pid and %s", out, dir)
		}
		parents = append(parents, f[0])
	}
	if parents[0] == strconv.Itoa(os.Getpid()) || parents[0] != parents[1] || parents[1] != parents[2] {
		t.Fatalf("parents %v: want one supervisor, not this process, for all three", parents)
	}
	out, code := runPooled(t, p, dir, `exec ./no-such-agent`)
	if code != 127 && code != 126 {
		t.Fatalf("missing command: exit %d (%q)", code, out)
	}
	pr, err := Start(context.Background(), []string{"no-such-agent-anywhere"}, Options{Dir: dir, Pool: p})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := pr.Wait(); err != nil || code != 127 {
		t.Fatalf("unknown command: exit %d, %v; want 127", code, err)
	}
}

// A cancelled command's whole group is stopped, a background job included,
// before Wait returns; the supervisor then serves the next command.
func TestPoolCancelKillsTheGroup(t *testing.T) {
	p := NewPool()
	defer p.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	pr, err := Start(ctx, []string{"sh", "-c", `trap "" TERM; sleep 60 & echo $! > bg.pid; echo $$ > sh.pid; while :; do sleep 0.05; done`},
		Options{Dir: dir, Pool: p, Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sh := readPid(t, filepath.Join(dir, "sh.pid"))
	bg := readPid(t, filepath.Join(dir, "bg.pid"))
	cancel()
	code, err := pr.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit %d: want SIGKILL after the grace period (the shell ignores SIGTERM)", code)
	}
	for _, pid := range []int{sh, bg} {
		if alive(pid) {
			t.Errorf("pid %d outlived the command's Wait", pid)
		}
	}
	if _, code := runPooled(t, p, dir, `exit 7`); code != 7 {
		t.Fatalf("next command: exit %d, want 7", code)
	}
}

// The held descriptor (the agent lock) stays open in the supervisor until
// the command's group is gone, and not a moment longer.
func TestPoolHoldsTheLockForTheCommand(t *testing.T) {
	p := NewPool()
	defer p.Close()
	dir := t.TempDir()
	lockPath := filepath.Join(dir, "lock")
	hold, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(hold.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	pr, err := Start(context.Background(), []string{"sh", "-c", `echo $$ > sh.pid; while [ ! -e stop ]; do sleep 0.02; done`},
		Options{Dir: dir, Pool: p, Hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	hold.Close()
	readPid(t, filepath.Join(dir, "sh.pid"))
	if free(t, lockPath) {
		t.Fatal("the lock was free while the command ran")
	}
	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, err := pr.Wait(); err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	if !free(t, lockPath) {
		t.Fatal("the lock was still held after the command's Wait")
	}
}

// A wiggum killed with SIGKILL while a pooled command runs leaves nothing
// behind: its supervisor sees the socket end and stops the whole group.
func TestPoolSIGKILLedParentLeavesNoOrphan(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROC_TEST_POOL_HELPER="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sh := readPid(t, filepath.Join(dir, "sh.pid"))
	bg := readPid(t, filepath.Join(dir, "bg.pid"))
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(sh) || alive(bg) {
		if time.Now().After(deadline) {
			syscall.Kill(sh, syscall.SIGKILL)
			syscall.Kill(bg, syscall.SIGKILL)
			t.Fatalf("the command (%d) or its background job (%d) outlived the killed parent", sh, bg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func free(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return !strings.Contains(string(data), ") Z ")
}

// A command whose environment is too large for one message runs on a
// one-shot supervisor, and the pool's supervisor serves the next one.
func TestPoolFallsBackForAHugeCommand(t *testing.T) {
	p := NewPool()
	defer p.Close()
	dir := t.TempDir()
	_, code := runPooled(t, p, dir, `exit 3`)
	// Larger than a message in all, each variable within exec's limit.
	var big []string
	for i := 0; i*60000 <= maxPoolMsg; i++ {
		big = append(big, "BIG"+strconv.Itoa(i)+"="+strings.Repeat("x", 60000))
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, err := Start(context.Background(), []string{"sh", "-c", `echo ${#BIG0} $PPID`}, Options{Dir: dir, Env: append(os.Environ(), big...), Stdout: w, Pool: p})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	n, _ := r.Read(buf)
	r.Close()
	if c, err := pr.Wait(); err != nil || c != 0 || code != 3 {
		t.Fatalf("exit %d, %v (first %d)", c, err, code)
	}
	f := strings.Fields(string(buf[:n]))
	if len(f) != 2 || f[0] != "60000" {
		t.Fatalf("output %q", buf[:n])
	}
	out, _ := runPooled(t, p, dir, `echo $PPID`)
	if strings.TrimSpace(out) == f[1] {
		t.Fatal("the huge command ran on the pooled supervisor")
	}
	if _, code := runPooled(t, p, dir, `exit 4`); code != 4 {
		t.Fatalf("after the fallback: exit %d", code)
	}
}

// Warm starts supervisors ahead of any command: the commands that follow
// run on them (their parent is a warmed supervisor, not one started for
// them), and Close ends the ones left idle.
func TestPoolWarmStartsSupervisorsAhead(t *testing.T) {
	if !pooling {
		t.Skip("no pooled supervisors on this platform")
	}
	p := NewPool()
	p.Warm(2)
	var warmed []*server
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		p.mu.Lock()
		warmed = append([]*server(nil), p.idle...)
		p.mu.Unlock()
		if len(warmed) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d supervisor(s) warmed, want 2", len(warmed))
		}
	}
	pids := map[string]bool{}
	for _, s := range warmed {
		pids[strconv.Itoa(s.cmd.Process.Pid)] = true
	}
	dir := t.TempDir()
	out, code := runPooled(t, p, dir, `echo $PPID`)
	if code != 0 || !pids[strings.TrimSpace(out)] {
		t.Fatalf("the command ran under %q (exit %d), not under a warmed supervisor %v", out, code, pids)
	}
	p.Close()
	for _, s := range warmed {
		if err := s.cmd.Process.Signal(syscall.Signal(0)); err == nil {
			t.Errorf("supervisor %d still runs after Close", s.cmd.Process.Pid)
		}
	}
}

// layout.ProcStat reads the state and the parent past a command name that holds
// parentheses and blanks, and says when the process is gone.
func TestProcStat(t *testing.T) {
	dir := t.TempDir()
	odd := filepath.Join(dir, "a) b (c")
	if err := os.WriteFile(odd, []byte("#!/bin/sh\nsleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	state, ppid, ok := layout.ProcStat(cmd.Process.Pid)
	if !ok || ppid != os.Getpid() || state == "" {
		t.Fatalf("Stat = %q, %d, %v; want a state and parent %d", state, ppid, ok, os.Getpid())
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, _, ok := layout.ProcStat(cmd.Process.Pid); ok {
		t.Fatal("Stat of a reaped process says ok")
	}
}
