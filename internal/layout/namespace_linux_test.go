package layout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A probe run inside a PID namespace of its own (Codex runs every shell
// command in one; `unshare --pid --fork --mount-proc` makes one) must still
// see a holder outside it. /proc/locks there hides the holder, so a probe
// that trusts it - the naive design - answers "free", and the pre-push
// backstop lets an agent's `git push` through.
func TestProbeSeesHolderFromAnotherPIDNamespace(t *testing.T) {
	if dir := os.Getenv("WIGGUM_TEST_PROBE_DIR"); dir != "" {
		t.Skip("helper mode")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("unshare (util-linux) is needed for this test")
		}
		t.Skip("unshare not installed")
	}
	tr := At(t.TempDir())
	l, err := tr.Acquire(context.Background(), AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()

	probe := func() string {
		cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", os.Args[0], "-test.run=^TestProbeHelper$", "-test.v")
		cmd.Env = append(os.Environ(), "WIGGUM_TEST_PROBE_DIR="+tr.Root)
		out, err := cmd.CombinedOutput()
		if err != nil {
			if os.Getenv("CI") == "" && strings.Contains(string(out), "Operation not permitted") {
				t.Skip("cannot create a PID namespace here: " + strings.TrimSpace(string(out)))
			}
			t.Fatalf("probe in a new PID namespace: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "PROBE "); ok {
				return v
			}
		}
		t.Fatalf("helper printed no result:\n%s", out)
		return ""
	}
	got := probe()
	if !strings.Contains(got, "held=true") {
		t.Fatalf("a probe in another PID namespace says the held lock is free: %s", got)
	}
	if !strings.Contains(got, "proc_locks=0") {
		t.Logf("note: /proc/locks in the namespace still showed the holder (%s); this kernel does not filter it", got)
	}
	if !strings.Contains(got, "session=true") {
		t.Fatalf("the session of a held lock is not seen from another PID namespace: %s", got)
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if got := probe(); !strings.Contains(got, "held=false") {
		t.Fatalf("after release, a probe in another PID namespace says held: %s", got)
	}
}

// TestProbeHelper runs inside the namespace and reports what it sees.
func TestProbeHelper(t *testing.T) {
	dir := os.Getenv("WIGGUM_TEST_PROBE_DIR")
	if dir == "" {
		t.Skip("run by TestProbeSeesHolderFromAnotherPIDNamespace")
	}
	tr := At(dir)
	held, err := tr.Probe()
	if err != nil {
		t.Fatal(err)
	}
	pids, _ := flockHolders(tr.Path(LockFile))
	fmt.Printf("PROBE held=%v proc_locks=%d session=%v\n", held, len(pids), tr.Session().Active)
}

// A supervisor that inherited the lock's descriptor keeps the lock and its
// live mark after the holder's own descriptors are closed.
func TestDupKeepsLiveMark(t *testing.T) {
	tr := At(t.TempDir())
	l, err := tr.Acquire(context.Background(), AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := l.Dup()
	if d == nil {
		t.Fatal("Dup returned nil on Linux")
	}
	l.unlock()
	if marked, err := liveMarked(tr.Path(LockFile)); err != nil || !marked {
		t.Fatalf("live mark gone while a dup is open: %v %v", marked, err)
	}
	if held, _ := tr.Probe(); !held {
		t.Fatal("probe says free while a dup holds the lock")
	}
	d.Close()
	if held, _ := tr.Probe(); held {
		t.Fatal("probe says held after every descriptor closed")
	}
}

// TestAcquireHelper, run as a child with WIGGUM_TEST_ACQUIRE set (inside a
// PID namespace of its own), takes the agent lock of that tree as a run
// does - holder record and all - and holds it until its stdin closes.
func TestAcquireHelper(t *testing.T) {
	dir := os.Getenv("WIGGUM_TEST_ACQUIRE")
	if dir == "" {
		t.Skip("a helper process")
	}
	l, err := At(dir).Acquire(context.Background(), AcquireOptions{Command: []string{"wiggum", "run"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	fmt.Printf("held %d\n", os.Getpid())
	var b [1]byte
	os.Stdin.Read(b[:])
}

// A run in another PID namespace (a container sharing the checkout) writes
// its pid as it sees it in its holder record; the kernel names another pid
// here. The record is still that run's: the refusal names it, with both
// pids, not "a killed run's agent supervisor", and CurrentHolder (status)
// keeps it (hunt12 #2).
func TestHolderInAnotherPIDNamespaceIsNamed(t *testing.T) {
	if os.Getenv("WIGGUM_TEST_ACQUIRE") != "" || os.Getenv("WIGGUM_TEST_PROBE_DIR") != "" {
		t.Skip("helper mode")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare not installed")
	}
	tr := At(t.TempDir())
	cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", os.Args[0], "-test.run=^TestAcquireHelper$")
	cmd.Env = append(os.Environ(), "WIGGUM_TEST_ACQUIRE="+tr.Root)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = cmd.Wait() }()
	var b [64]byte
	n, _ := out.Read(b[:])
	var inner int
	if _, err := fmt.Sscanf(string(b[:n]), "held %d", &inner); err != nil {
		in.Close()
		_ = cmd.Wait()
		if strings.Contains(stderr.String(), "Operation not permitted") {
			t.Skip("cannot create a PID namespace here")
		}
		t.Fatalf("the helper did not take the lock: %q %s", b[:n], stderr.String())
	}
	here := tr.LockPID()
	if here <= 0 || here == inner {
		t.Skipf("the kernel names the holder %d here, %d inside: not told apart", here, inner)
	}
	_, err = tr.Acquire(context.Background(), AcquireOptions{})
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("acquire: %v, want a HeldError", err)
	}
	if held.Holder == nil || held.Holder.PID != inner || held.HereAs != here {
		t.Fatalf("refusal: %v (holder %+v, here %d), want the record of pid %d, %d here", err, held.Holder, held.HereAs, inner, here)
	}
	want := fmt.Sprintf("held by pid %d of another PID namespace (a container's; pid %d here)", inner, here)
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "killed run") {
		t.Fatalf("refusal: %v, want %q", err, want)
	}
	h, err := tr.CurrentHolder()
	if err != nil || h == nil || h.PID != inner {
		t.Fatalf("CurrentHolder: %+v %v, want the record of pid %d", h, err, inner)
	}
}
