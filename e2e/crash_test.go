package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckpointSurvivesSIGKILL kills `wiggum checkpoint` with SIGKILL at
// random moments across its run, many times, on a dirty tree (so each run
// snapshots, moves a ref and writes checkpoint.json). After every kill the
// state must read cleanly: status succeeds, and once any checkpoint was
// written, a checkpoint is there and rollback --dry-run reads it.
func TestCheckpointSurvivesSIGKILL(t *testing.T) {
	const rounds = 40
	dir := newRepo(t)
	work := filepath.Join(dir, "work.txt")
	// The fastest of a few unkilled runs sets the range of the random kill
	// times, so most kills land inside a run; nothing is asserted about how
	// long a run takes.
	span := time.Hour
	for i := range 3 {
		if err := os.WriteFile(work, []byte(fmt.Sprintf("start %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		mustRun(t, dir, wiggumBin, "checkpoint")
		span = min(span, time.Since(began))
	}

	killed, finished := 0, 0
	for round := range rounds {
		if err := os.WriteFile(work, []byte(fmt.Sprintf("round %d\n", round)), 0o644); err != nil {
			t.Fatal(err)
		}
		p := startWiggum(t, dir, nil, "checkpoint")
		time.Sleep(rand.N(span))
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		switch code := p.wait(t); code {
		case 128 + int(syscall.SIGKILL):
			killed++
		case 0:
			finished++
		default:
			// A run that began while git children of an earlier killed run
			// still finished their work may fail, but only with a clear error.
			if !strings.Contains(p.stderr(), "wiggum:") {
				t.Fatalf("round %d: checkpoint exited %d with no message", round, code)
			}
		}
		checkReadable(t, dir, round)
	}
	t.Logf("%d runs killed, %d finished before the kill", killed, finished)
}

// checkReadable asserts that wiggum reads the checkpoint state cleanly.
func checkReadable(t *testing.T, dir string, round int) {
	t.Helper()
	r := wiggum(t, dir, nil, "status", "--json")
	if r.code != 0 {
		t.Fatalf("round %d: status after a kill: exit %d\n%s%s", round, r.code, r.stdout, r.stderr)
	}
	var st struct {
		Checkpoint *struct{ Head string } `json:"checkpoint"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("round %d: status --json: %v\n%s", round, err, r.stdout)
	}
	if st.Checkpoint == nil || len(st.Checkpoint.Head) != 40 {
		t.Fatalf("round %d: the checkpoint is gone after a kill:\n%s", round, r.stdout)
	}
	// A process forked by the killed wiggum but not yet exec'd (git, started
	// just before the kill) holds a copy of the lock descriptor until its
	// exec closes it, so the lock may stay held a moment longer than
	// wiggum lives: exit 3 is retried, anything else fails at once.
	eventually(t, "rollback --dry-run to get the lock", func() bool {
		r = wiggum(t, dir, nil, "rollback", "--dry-run")
		return r.code != 3
	})
	if r.code != 0 {
		t.Fatalf("round %d: rollback --dry-run after a kill: exit %d\n%s", round, r.code, r.stderr)
	}
}

// TestCorruptStateIsAnError damages each state file in turn: every command
// that reads it fails with exit 1 or 2 and a message naming the file as
// corrupt, never behaves as if there were no state, and changes nothing.
func TestCorruptStateIsAnError(t *testing.T) {
	contents := map[string]string{
		"truncated":  `{"head": "4b825dc642cb6eb9a060e54bf8d69288fbee49`,
		"empty":      ``,
		"garbage":    "\x00\x01\xffnot json",
		"null":       `null`,
		"bad sha":    `{"head": "../../etc/passwd", "branch": "refs/heads/main", "time": "2026-11-21T10:00:00Z"}`,
		"two values": `{"head": "0000000000000000000000000000000000000000"} {}`,
	}
	for name, content := range contents {
		t.Run("checkpoint/"+name, func(t *testing.T) {
			dir := newRepo(t)
			mustRun(t, dir, wiggumBin, "checkpoint")
			agentCommit(t, dir)
			writeState(t, dir, ".ralph/wiggum/checkpoint.json", content)
			before := repoState(t, dir)
			for _, args := range [][]string{{"status"}, {"status", "--json"}, {"rollback"}, {"rollback", "--dry-run"}} {
				expectCorrupt(t, dir, nil, "checkpoint.json", args...)
			}
			if after := repoState(t, dir); after != before {
				t.Fatalf("a command changed the repository:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	t.Run("holder record", func(t *testing.T) {
		dir := newRepo(t)
		holder := startWiggum(t, dir, nil, "lock", "--", "sh", "-c",
			`touch held; while [ ! -e release ]; do sleep 0.02; done`)
		waitFile(t, filepath.Join(dir, "held"))
		writeState(t, dir, ".ralph/.agent-lock.json", `{"pid": 12, "host": `)
		expectCorrupt(t, dir, nil, ".agent-lock.json", "status")
		expectCorrupt(t, dir, nil, ".agent-lock.json", "status", "--json")
		// The lock, not the record, decides: others are still kept out.
		if r := wiggum(t, dir, nil, "lock", "--", "true"); r.code != 3 {
			t.Fatalf("lock with a corrupt record while held: exit %d, want 3; stderr: %s", r.code, r.stderr)
		}
		if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		holder.wait(t)
	})
	t.Run("journal", func(t *testing.T) {
		dir := newRepo(t)
		hook := "#!/bin/sh\n" + journalMarker(t) + "\nexit 0\n"
		if err := os.WriteFile(filepath.Join(dir, ".git", "hooks", "post-commit"), []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
		mustRun(t, dir, wiggumBin, "checkpoint")
		agentCommit(t, dir)
		writeState(t, dir, ".ralph/wiggum/journal.jsonl", "{\"sha\": \"abc\"}\n{torn")
		before := repoState(t, dir)
		for _, args := range [][]string{{"status"}, {"rollback"}, {"rollback", "--dry-run"}} {
			expectCorrupt(t, dir, nil, "journal.jsonl", args...)
		}
		if after := repoState(t, dir); after != before {
			t.Fatalf("a command changed the repository:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// journalMarker is the fingerprint that turns the commit journal on; the
// test reads it from the source so it cannot drift from the real one.
func journalMarker(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../checkpoint/journal.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "const GitHookMarker = \"")
	marker, _, ok2 := strings.Cut(rest, "\"")
	if !ok || !ok2 {
		t.Fatal("GitHookMarker not found in checkpoint/journal.go")
	}
	return marker
}

func expectCorrupt(t *testing.T, dir string, env []string, file string, args ...string) {
	t.Helper()
	r := wiggum(t, dir, env, args...)
	out := r.stdout + r.stderr
	if r.code != 1 && r.code != 2 {
		t.Fatalf("wiggum %s with a corrupt %s: exit %d, want 1 or 2\n%s", strings.Join(args, " "), file, r.code, out)
	}
	if !strings.Contains(out, file) || !strings.Contains(out, "corrupt") {
		t.Fatalf("wiggum %s: the message does not say %s is corrupt:\n%s", strings.Join(args, " "), file, out)
	}
	if strings.Contains(out, "no checkpoint recorded") {
		t.Fatalf("wiggum %s treats a corrupt %s as no state:\n%s", strings.Join(args, " "), file, out)
	}
}

// agentCommit makes a commit and leaves staged, unstaged and new files, the
// state a rollback would discard.
func agentCommit(t *testing.T, dir string) {
	t.Helper()
	writeState(t, dir, "b.txt", "b\n")
	mustRun(t, dir, "git", "add", "b.txt")
	mustRun(t, dir, "git", "commit", "-q", "-m", "agent")
	writeState(t, dir, "a.txt", "changed\n")
	writeState(t, dir, "c.txt", "staged\n")
	mustRun(t, dir, "git", "add", "c.txt")
	writeState(t, dir, "d.txt", "new\n")
}

// repoState fingerprints HEAD, the index and the working tree.
func repoState(t *testing.T, dir string) string {
	t.Helper()
	head := mustRun(t, dir, "git", "rev-parse", "HEAD")
	index := mustRun(t, dir, "git", "ls-files", "-s")
	status := mustRun(t, dir, "git", "status", "--porcelain", "--untracked-files=all")
	var files strings.Builder
	for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		fmt.Fprintf(&files, "%s=%q ", f, data)
	}
	return head + index + status + files.String()
}

func writeState(t *testing.T, dir, rel, content string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
