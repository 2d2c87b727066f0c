package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestBashFlockExcludesWiggum: the bash loop's `flock -n .ralph/.agent-lock`
// and wiggum lock the same file, so each keeps the other out, and wiggum
// names the flock holder's pid even though it left no holder record. The
// lock file is the same inode from start to end: nobody deletes it.
func TestBashFlockExcludesWiggum(t *testing.T) {
	dir := newRepo(t)
	if err := os.MkdirAll(filepath.Join(dir, ".ralph"), 0o755); err != nil {
		t.Fatal(err)
	}
	lockFile := filepath.Join(dir, ".ralph", ".agent-lock")

	// A bash loop holds the lock.
	bash := start(t, dir, nil, "", "flock", "-n", lockFile, "sh", "-c",
		`touch held; while [ ! -e release ]; do sleep 0.02; done`)
	waitFile(t, filepath.Join(dir, "held"))
	inode := inodeOf(t, lockFile)
	for _, args := range [][]string{{"lock", "--", "true"}, {"checkpoint"}, {"rollback"}} {
		r := wiggum(t, dir, nil, args...)
		if r.code != 3 {
			t.Fatalf("wiggum %s while bash holds the lock: exit %d, want 3; stderr: %s", args[0], r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "held by pid "+strconv.Itoa(bash.pid())) || !strings.Contains(r.stderr, "no wiggum holder record") {
			t.Fatalf("wiggum %s: refusal does not name the flock holder %d: %s", args[0], bash.pid(), r.stderr)
		}
		if !strings.Contains(r.stderr, " since ") {
			t.Fatalf("wiggum %s: refusal does not say since when: %s", args[0], r.stderr)
		}
	}
	// status names the flock holder too, from the kernel's lock table.
	if r := wiggum(t, dir, nil, "status", "--json"); !strings.Contains(r.stdout, `"pid": `+strconv.Itoa(bash.pid())) || !strings.Contains(r.stdout, `"held": true`) {
		t.Fatalf("status --json does not name the flock holder %d: %s", bash.pid(), r.stdout)
	}
	if r := wiggum(t, dir, []string{"WIGGUM_SESSION=whatever"}, "checkpoint"); r.code != 3 {
		t.Fatalf("checkpoint with a made-up session while bash holds the lock: exit %d, want 3", r.code)
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := bash.wait(t); code != 0 {
		t.Fatalf("flock holder exited %d", code)
	}

	// wiggum holds the lock.
	w := startWiggum(t, dir, nil, "lock", "--", "sh", "-c",
		`touch held2; while [ ! -e release2 ]; do sleep 0.02; done`)
	waitFile(t, filepath.Join(dir, "held2"))
	if r := run(t, dir, nil, "flock", "-n", lockFile, "sh", "-c", "touch bash-ran"); r.code != 1 {
		t.Fatalf("flock -n while wiggum holds the lock: exit %d, want 1", r.code)
	}
	// The way the bash loop takes it: a descriptor on the file, then flock.
	if r := run(t, dir, nil, "bash", "-c", `exec 9>"$1"; flock -n 9`, "bash", lockFile); r.code != 1 {
		t.Fatalf("bash 'exec 9>lock; flock -n 9' while wiggum holds the lock: exit %d, want 1", r.code)
	}
	if exists(filepath.Join(dir, "bash-ran")) {
		t.Fatal("flock ran its command while wiggum held the lock")
	}
	if err := os.WriteFile(filepath.Join(dir, "release2"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := w.wait(t); code != 0 {
		t.Fatalf("wiggum lock exited %d; stderr: %s", code, w.stderr())
	}
	if r := run(t, dir, nil, "flock", "-n", lockFile, "true"); r.code != 0 {
		t.Fatalf("flock -n after wiggum finished: exit %d, want 0", r.code)
	}
	if got := inodeOf(t, lockFile); got != inode {
		t.Fatalf("the lock file was replaced (inode %d, then %d)", inode, got)
	}
}

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the lock file is gone: %v", err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}
