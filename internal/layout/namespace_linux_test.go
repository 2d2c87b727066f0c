package layout

import (
	"context"
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
