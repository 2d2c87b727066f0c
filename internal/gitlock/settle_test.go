package gitlock

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// fakeGit starts, in dir, a process named git that ignores SIGTERM (as a
// git 2.39 spinning in its own signal handler does), started by the wiggum
// owner (a pid); it is killed when the test ends.
func fakeGit(t *testing.T, dir string, owner int) *exec.Cmd {
	t.Helper()
	fake := filepath.Join(t.TempDir(), "git")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 0.05; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(fake)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", git.OwnerEnv, owner))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	// The shell's comm is the script's name once it has exec'd.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid)); strings.TrimSpace(string(comm)) == "git" {
			return cmd
		}
	}
	t.Fatal("the fake git never showed as git")
	return nil
}

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	return dead.Process.Pid
}

type said struct {
	mu    sync.Mutex
	lines []string
}

func (s *said) say(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, fmt.Sprintf(format, args...))
}

func (s *said) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// A zombie (state Z) has exited; its parent has not reaped it yet.
	return err == nil && !strings.Contains(string(data), ") Z ")
}

// A git a killed wiggum started that did not heed its SIGTERM is killed
// after the grace - also beside a live run (not exclusive), as worktree
// prune calls it - and the lock it held, stale then, removed: both said.
// Without it, the user's next `git update-ref` of that branch fails on the
// lock (a CI run of TestKilledWhileMakingAhead did).
func TestSettleKillsADeadWiggumsGitAndRemovesItsLock(t *testing.T) {
	for _, exclusive := range []bool{false, true} {
		t.Run(fmt.Sprintf("exclusive=%v", exclusive), func(t *testing.T) {
			dir := testRepo(t)
			gitT(t, dir, "branch", "wiggum/US-1")
			lock := filepath.Join(dir, ".git", "refs", "heads", "wiggum", "US-1.lock")
			if err := os.WriteFile(lock, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			orphan := fakeGit(t, dir, deadPID(t))
			var out said
			err := Settle(context.Background(), SettleOptions{Root: dir, CommonDir: filepath.Join(dir, ".git"), Exclusive: exclusive,
				Wait: 10 * time.Second, Grace: 100 * time.Millisecond, Say: out.say})
			if err != nil {
				t.Fatalf("Settle: %v\n%s", err, out.String())
			}
			if alive(orphan.Process.Pid) {
				t.Errorf("the dead wiggum's git still runs")
			}
			if _, err := os.Stat(lock); !os.IsNotExist(err) {
				t.Errorf("the stale lock is still there: %v", err)
			}
			for _, want := range []string{fmt.Sprintf("killed git (pid %d: /bin/sh ", orphan.Process.Pid), "removed " + lock} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("not said: %q in\n%s", want, out.String())
				}
			}
			gitT(t, dir, "update-ref", "-d", "refs/heads/wiggum/US-1")
		})
	}
}

// A git that a live wiggum (here: this process) or the user runs is never
// killed, and its lock never removed: beside a live run Settle lets both
// be at once; holding the agent lock it waits, then fails naming the git.
func TestSettleLeavesALiveGitAlone(t *testing.T) {
	dir := testRepo(t)
	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, owner := range []int{os.Getpid(), 0} {
		live := fakeGit(t, dir, owner)
		var out said
		o := SettleOptions{Root: dir, CommonDir: filepath.Join(dir, ".git"), Wait: 300 * time.Millisecond, Grace: 50 * time.Millisecond, Say: out.say}
		if err := Settle(context.Background(), o); err != nil {
			t.Fatalf("owner %d, beside a live run: %v", owner, err)
		}
		o.Exclusive = true
		err := Settle(context.Background(), o)
		want := fmt.Sprintf("%s exists for more than 300ms and git (pid %d: /bin/sh ", lock, live.Process.Pid)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("owner %d, holding the agent lock: err = %v, want %q", owner, err, want)
		}
		if !alive(live.Process.Pid) {
			t.Fatalf("owner %d: the live git was killed", owner)
		}
		if _, err := os.Stat(lock); err != nil {
			t.Fatalf("owner %d: the live git's lock was removed: %v", owner, err)
		}
		if out.String() != "" {
			t.Errorf("owner %d: said %q", owner, out.String())
		}
		_ = live.Process.Kill()
		for alive(live.Process.Pid) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// A run's start never removes the index lock of a live git run on the
// repository from another directory (--git-dir/--work-tree): it waits for
// it, then fails naming it (hunt12 #6).
func TestSettleLeavesAGitFromElsewhereAlone(t *testing.T) {
	dir := testRepo(t)
	gitDir := filepath.Join(dir, ".git")
	cmd := exec.Command("git", "--git-dir="+gitDir, "--work-tree="+dir, "update-index", "--index-info")
	cmd.Dir = t.TempDir()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	lock := filepath.Join(gitDir, "index.lock")
	for i := 0; ; i++ {
		if _, err := os.Stat(lock); err == nil {
			break
		}
		if i == 500 {
			t.Fatal("git never took the index lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var out said
	err = Settle(context.Background(), SettleOptions{Root: dir, CommonDir: gitDir, Exclusive: true,
		Wait: 200 * time.Millisecond, Grace: 50 * time.Millisecond, Say: out.say})
	want := fmt.Sprintf("git (pid %d: git --git-dir=", cmd.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Settle: %v, want an error naming %q (said %q)", err, want, out.String())
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the live git's lock was removed: %v", err)
	}
}

// A git that never takes a lock - an editor's cat-file --batch, a git log
// open in a pager - does not keep a stale index lock in place: the run's
// start removes it and goes on, rather than waiting for that git to end
// and refusing (hunt12 #5).
func TestSettleRemovesAStaleLockBesideAReadOnlyGit(t *testing.T) {
	dir := testRepo(t)
	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	reader := exec.Command("git", "cat-file", "--batch")
	reader.Dir = dir
	in, err := reader.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = reader.Wait() })
	var out said
	err = Settle(context.Background(), SettleOptions{Root: dir, CommonDir: filepath.Join(dir, ".git"), Exclusive: true,
		Wait: 200 * time.Millisecond, Grace: 50 * time.Millisecond, Say: out.say})
	if err != nil {
		t.Fatalf("Settle beside git cat-file --batch: %v", err)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("the stale lock is still there: %v", err)
	}
	if !strings.Contains(out.String(), "removed "+lock) {
		t.Errorf("not said: %q", out.String())
	}
	if !alive(reader.Process.Pid) {
		t.Error("the reading git was killed")
	}
}

// A lock file replaced since it was seen stale - a new git took the lock
// once the old file went - is not removed.
func TestRemoveStaleSparesAReplacedLock(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "main.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	seen, err := os.Lstat(lock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	// The new file may get the old inode back; its change time differs
	// once the file system's clock (jiffies, for some) has ticked.
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(lock, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if removed, err := git.RemoveStale(lock, seen); removed || err != nil {
		t.Fatalf("RemoveStale = %v, %v", removed, err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the new lock is gone: %v", err)
	}
	seen, _ = os.Lstat(lock)
	if removed, err := git.RemoveStale(lock, seen); !removed || err != nil {
		t.Fatalf("RemoveStale of the same file = %v, %v", removed, err)
	}
}

// The error for a git lock that outlives the wait names the process that
// keeps it: its command line and parent, so the user can find it.
func TestDescribeProcessNamesCommandAndParent(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Start returns as the exec begins; the new command line shows a
	// moment later.
	got := DescribeProcess(cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); strings.HasPrefix(got, ": ,") && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		got = DescribeProcess(cmd.Process.Pid)
	}
	if want := fmt.Sprintf(": sleep 30, parent %d", os.Getpid()); got != want {
		t.Fatalf("DescribeProcess = %q, want %q", got, want)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := DescribeProcess(cmd.Process.Pid); got != "" {
		t.Fatalf("a process that is gone is described as %q", got)
	}
}

// testRepo makes a real repository with one commit.
func testRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, "-c", "init.defaultRefFormat=files", "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", ".")
	gitT(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init")
	return dir
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
