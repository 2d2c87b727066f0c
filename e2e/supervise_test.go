package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLockSIGKILLLeavesNoOrphan kills wiggum with SIGKILL while its command,
// a shell with a background and a foreground grandchild, runs: every one of
// them dies, and the lock is free as soon as they are gone.
func TestLockSIGKILLLeavesNoOrphan(t *testing.T) {
	dir := newRepo(t)
	bgSleep, fgSleep := uniqueSleep(), uniqueSleep()
	// The trailing ':' keeps the shell from exec'ing the last sleep, so the
	// tree really is shell, background job and foreground job.
	script := `sleep ` + bgSleep + ` & echo $! > bg.pid; echo $$ > sh.pid; sleep ` + fgSleep + `; :`
	w := startWiggum(t, dir, nil, "lock", "--", "sh", "-c", script)
	shPID := readPID(t, filepath.Join(dir, "sh.pid"))
	bgPID := readPID(t, filepath.Join(dir, "bg.pid"))
	eventually(t, "the foreground sleep to start", func() bool { return len(withMarker(fgSleep)) >= 3 })
	// The lock is taken and the agent runs.
	if r := wiggum(t, dir, nil, "lock", "--", "true"); r.code != 3 {
		t.Fatalf("second lock while the first runs: exit %d, want 3; stderr: %s", r.code, r.stderr)
	}

	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := w.wait(t); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("wiggum exited %d after SIGKILL", code)
	}
	// withMarker(fgSleep) covers the supervisor and the shell too: the
	// sleep's duration is in their command lines.
	eventually(t, "the supervisor, the shell and both sleeps to die", func() bool {
		return len(withMarker(bgSleep)) == 0 && len(withMarker(fgSleep)) == 0 && !alive(shPID) && !alive(bgPID)
	})
	if r := wiggum(t, dir, nil, "lock", "--", "true"); r.code != 0 {
		t.Fatalf("lock after the killed holder's group died: exit %d, want 0; stderr: %s", r.code, r.stderr)
	}
}

// TestLockHeldUntilGroupDies kills wiggum with SIGKILL while its command
// traps SIGTERM and keeps running: the supervisor passes SIGTERM on and,
// holding the inherited lock descriptor, keeps the lock held for as long as
// the command lives, so neither another wiggum nor a bash flock gets in.
func TestLockHeldUntilGroupDies(t *testing.T) {
	dir := newRepo(t)
	marker := uniqueSleep()
	script := `: ` + marker + `; trap 'echo trapped > trapped' TERM; echo $$ > sh.pid; while :; do sleep 0.05; done`
	// The grace period is far longer than the test: only the test's own kill
	// ends the command.
	w := startWiggum(t, dir, nil, "lock", "--grace", "10m", "--", "sh", "-c", script)
	shPID := readPID(t, filepath.Join(dir, "sh.pid"))
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.wait(t)
	waitFile(t, filepath.Join(dir, "trapped"))

	r := wiggum(t, dir, nil, "lock", "--", "true")
	if r.code != 3 {
		t.Fatalf("lock while the dead holder's command still runs: exit %d, want 3; stderr: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "held by pid") {
		t.Fatalf("refusal does not name a holder: %s", r.stderr)
	}
	if r := run(t, dir, nil, "flock", "-n", ".ralph/.agent-lock", "true"); r.code != 1 {
		t.Fatalf("flock -n while the dead holder's command still runs: exit %d, want 1", r.code)
	}
	if r := wiggum(t, dir, nil, "checkpoint"); r.code != 3 {
		t.Fatalf("checkpoint while the dead holder's command still runs: exit %d, want 3; stderr: %s", r.code, r.stderr)
	}
	if !alive(shPID) {
		t.Fatal("the command died before the grace period ended; the test proved nothing")
	}

	if err := syscall.Kill(-shPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the supervisor and the command to die", func() bool { return len(withMarker(marker)) == 0 })
	if r := wiggum(t, dir, nil, "lock", "--", "true"); r.code != 0 {
		t.Fatalf("lock after the group died: exit %d, want 0; stderr: %s", r.code, r.stderr)
	}
}

// TestLockForwardsSignals sends SIGINT or SIGTERM to wiggum alone: its
// command, in a process group of its own, gets the signal from the
// supervisor, and wiggum exits 130 or 143 whatever the command's exit code.
func TestLockForwardsSignals(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{
		{syscall.SIGINT, "INT", 130},
		{syscall.SIGTERM, "TERM", 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRepo(t)
			marker := uniqueSleep()
			script := `: ` + marker + `; trap 'echo $1 > got; exit 0' ` + tc.name + `; echo $$ > sh.pid; while :; do sleep 0.05; done`
			w := startWiggum(t, dir, nil, "lock", "--", "sh", "-c", script, "sh", tc.name)
			shPID := readPID(t, filepath.Join(dir, "sh.pid"))
			if err := w.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if code := w.wait(t); code != tc.code {
				t.Fatalf("wiggum exited %d, want %d; stderr: %s", code, tc.code, w.stderr())
			}
			if got := strings.TrimSpace(waitFile(t, filepath.Join(dir, "got"))); got != tc.name {
				t.Fatalf("the command's trap recorded %q, want %q", got, tc.name)
			}
			if alive(shPID) || len(withMarker(marker)) > 0 {
				t.Fatal("the command outlived wiggum")
			}
		})
	}
}

// TestLockGraceThenKill sends SIGTERM to wiggum whose command traps or
// ignores it and keeps running: after the grace period the whole group gets
// SIGKILL and wiggum exits 143.
func TestLockGraceThenKill(t *testing.T) {
	for name, trap := range map[string]string{
		"traps":   `trap 'echo trapped >> got' TERM`,
		"ignores": `trap '' TERM`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := newRepo(t)
			marker := uniqueSleep()
			script := `: ` + marker + `; ` + trap + `; echo $$ > sh.pid; sleep ` + marker + ` & while :; do sleep 0.05; done`
			w := startWiggum(t, dir, nil, "lock", "--grace", "500ms", "--", "sh", "-c", script)
			shPID := readPID(t, filepath.Join(dir, "sh.pid"))
			if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := w.wait(t); code != 143 {
				t.Fatalf("wiggum exited %d, want 143; stderr: %s", code, w.stderr())
			}
			if alive(shPID) || len(withMarker(marker)) > 0 {
				t.Fatal("the command or its background job outlived wiggum")
			}
			if name == "traps" {
				data, _ := os.ReadFile(filepath.Join(dir, "got"))
				if n := strings.Count(string(data), "trapped"); n != 1 {
					t.Fatalf("the command saw SIGTERM %d times before SIGKILL, want once", n)
				}
			}
		})
	}
}

// TestLockPassesThrough: stdin reaches the command, its stdout and stderr
// reach wiggum's, and its exit code is wiggum's.
func TestLockPassesThrough(t *testing.T) {
	dir := newRepo(t)
	p := start(t, dir, nil, "line one\nline two\n", wiggumBin, "lock", "--", "sh", "-c", `cat; echo "to stderr" >&2; exit 7`)
	if code := p.wait(t); code != 7 {
		t.Fatalf("exit %d, want the command's 7; stderr: %s", code, p.stderr())
	}
	if got := p.stdout(); got != "line one\nline two\n" {
		t.Fatalf("stdout %q", got)
	}
	if got := p.stderr(); got != "to stderr\n" {
		t.Fatalf("stderr %q", got)
	}
}

// TestLockWait: with --wait, a second wiggum waits for the holder to finish
// and then runs; with a wait shorter than the holder's run it exits 3.
func TestLockWait(t *testing.T) {
	dir := newRepo(t)
	order := filepath.Join(dir, "order")
	holder := startWiggum(t, dir, nil, "lock", "--", "sh", "-c",
		`touch held; while [ ! -e release ]; do sleep 0.02; done; echo first >> order`)
	waitFile(t, filepath.Join(dir, "held"))

	if r := wiggum(t, dir, nil, "lock", "--wait", "200ms", "--", "sh", "-c", "echo short >> order"); r.code != 3 {
		t.Fatalf("--wait 200ms against a holder that never lets go: exit %d, want 3; stderr: %s", r.code, r.stderr)
	}
	waiter := startWiggum(t, dir, nil, "lock", "--wait", "10m", "--", "sh", "-c", "echo second >> order")
	// Give the waiter time to find the lock held a few times. This sleep is
	// no assertion: on a slow machine the test proves less, never fails
	// wrongly; the proof is the order of the runs below.
	time.Sleep(300 * time.Millisecond)
	if exists(order) {
		t.Fatal("a command ran while another held the lock")
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := holder.wait(t); code != 0 {
		t.Fatalf("holder exited %d", code)
	}
	if code := waiter.wait(t); code != 0 {
		t.Fatalf("waiter exited %d; stderr: %s", code, waiter.stderr())
	}
	data, err := os.ReadFile(order)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "first\nsecond\n" {
		t.Fatalf("order of runs %q, want first then second", data)
	}
}

// TestLockKillsEscapedDescendants: a descendant that left the command's
// process group (setsid, as Node's detached spawn does) must not outlive
// wiggum either, whether the command exits by itself or wiggum is
// SIGKILLed; otherwise it could write to the repository once the lock is free.
func TestLockKillsEscapedDescendants(t *testing.T) {
	t.Run("command exits", func(t *testing.T) {
		dir := newRepo(t)
		escaped := uniqueSleep()
		r := wiggum(t, dir, nil, "lock", "--", "sh", "-c", `setsid sleep `+escaped+` > /dev/null 2>&1 & echo $! > escaped.pid
			# exit only once the job has left the group and become the sleep
			until grep -q sleep /proc/$!/cmdline 2>/dev/null; do sleep 0.01; done`)
		if r.code != 0 {
			t.Fatalf("exit %d; stderr: %s", r.code, r.stderr)
		}
		pid := readPID(t, filepath.Join(dir, "escaped.pid"))
		if alive(pid) || len(withMarker(escaped)) > 0 {
			t.Fatal("a setsid descendant outlived wiggum lock")
		}
	})
	t.Run("wiggum SIGKILLed", func(t *testing.T) {
		dir := newRepo(t)
		escaped, fg := uniqueSleep(), uniqueSleep()
		w := startWiggum(t, dir, nil, "lock", "--", "sh", "-c",
			`setsid sh -c 'sleep `+escaped+`; :' > /dev/null 2>&1 & echo $! > escaped.pid; sleep `+fg+`; :`)
		pid := readPID(t, filepath.Join(dir, "escaped.pid"))
		eventually(t, "both sleeps to start", func() bool { return len(withMarker(escaped)) >= 2 && len(withMarker(fg)) >= 3 })
		if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		w.wait(t)
		eventually(t, "every descendant, in the group or not, to die", func() bool {
			return !alive(pid) && len(withMarker(escaped)) == 0 && len(withMarker(fg)) == 0
		})
	})
}

// TestLockWaitInterrupted: SIGINT or SIGTERM while waiting for the lock
// ends wiggum with 130 or 143, like any interrupt, and the command never runs.
func TestLockWaitInterrupted(t *testing.T) {
	dir := newRepo(t)
	holder := startWiggum(t, dir, nil, "lock", "--", "sh", "-c", `touch held; while [ ! -e release ]; do sleep 0.02; done`)
	waitFile(t, filepath.Join(dir, "held"))
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		w := startWiggum(t, dir, nil, "lock", "--wait", "10m", "--", "touch", "ran")
		// Let it start waiting; a signal that comes earlier still has to
		// end it with the same code, so this sleep is no assertion.
		time.Sleep(300 * time.Millisecond)
		if err := w.cmd.Process.Signal(tc.sig); err != nil {
			t.Fatal(err)
		}
		if code := w.wait(t); code != tc.code {
			t.Fatalf("%v while waiting for the lock: exit %d, want %d; stderr: %s", tc.sig, code, tc.code, w.stderr())
		}
	}
	if exists(filepath.Join(dir, "ran")) {
		t.Fatal("the command ran although wiggum was interrupted while waiting")
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	holder.wait(t)
}

// TestSupervisorKilledIsNoFailedAttempt: a pooled supervisor of wiggum's
// own killed while its agent works (the OOM killer, a stray kill) ends
// that attempt as interrupted - rolled back, not counted against
// --retries, no failure context about wiggum's internals - and the story
// is done in the next attempt. (Before, the attempt failed "agent: wait:
// supervisor of ... ended before its command", and with --retries 0 the
// story was skipped.)
func TestSupervisorKilledIsNoFailedAttempt(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 1, `cat > /dev/null
echo "work of $WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
if [ ! -e "$MARKS/killed" ]; then
  touch "$MARKS/ready"
  while [ ! -e "$MARKS/killed" ]; do sleep 0.05; done
fi
`)
	p := startWiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--retries", "0", "--agent-cmd", "sh "+agent)
	waitFile(t, filepath.Join(marks, "ready"))
	killed := 0
	for _, pid := range withParent(p.pid()) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cmdline), "__supervise") && len(withParent(pid)) > 0 { // busy: it runs the agent
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed++
		}
	}
	writeFile(t, filepath.Join(marks, "killed"), "")
	if killed == 0 {
		t.Fatalf("no busy supervisor of wiggum (pid %d) found", p.pid())
	}
	code := p.wait(t)
	out := p.stdout() + p.stderr()
	if code != 0 {
		t.Fatalf("exit %d, want 0 (the story done in its next attempt)\n%s", code, out)
	}
	if strings.Contains(out, "✘") || strings.Contains(out, "US-1 failed") {
		t.Errorf("the attempt whose supervisor was killed counts as failed:\n%s", out)
	}
	if got := strings.TrimSpace(mustRun(t, dir, "git", "show", "HEAD:f-US-1.txt")); got != "work of US-1" {
		t.Errorf("US-1's work in HEAD: %q", got)
	}
	if data, err := os.ReadFile(filepath.Join(dir, ".ralph", "wiggum", "failures.jsonl")); err == nil && len(data) > 0 {
		t.Errorf("a failure was recorded:\n%s", data)
	}
}

// withParent lists the processes whose parent is pid.
func withParent(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			pids = append(pids, child)
		}
	}
	return pids
}
