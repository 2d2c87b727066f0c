package hooks

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gitfiles "github.com/wiggum-dev/wiggum/internal/git"
)

// shimStash runs git ARGS in dir as a parallel worker's git shim would
// (ownStash, then git), and returns its output and exit code.
func shimStash(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	common := strings.TrimSpace(git(t, dir, "rev-parse", "--path-format=absolute", "--git-common-dir"))
	return shimStashIn(t, dir, common, args...)
}

// shimStashIn is shimStash in a run whose repository's common git dir is
// shared.
func shimStashIn(t *testing.T, dir, shared string, args ...string) (string, int) {
	t.Helper()
	real := gitfiles.RealGit()
	var stderr strings.Builder
	_, sub, _ := gitCommand(args)
	args, code, release := ownStash(dir, shared, args, sub, real, &stderr)
	defer release()
	if code >= 0 {
		return stderr.String(), code
	}
	cmd := exec.Command(real, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// Two worktrees of one repository on branches w1 and w2, each with stash
// entries of its own, and one of the person's on main: each worktree's
// agent lists, shows, pops, drops and clears only its own, and one that
// names another's by number is refused with the ones it has.
func TestWorkerSeesItsOwnStash(t *testing.T) {
	dir := repo(t)
	w1, w2 := filepath.Join(t.TempDir(), "w1"), filepath.Join(t.TempDir(), "w2")
	git(t, dir, "worktree", "add", "-q", "-b", "w1", w1)
	git(t, dir, "worktree", "add", "-q", "-b", "w2", w2)
	stash := func(in, file string) {
		if err := os.WriteFile(filepath.Join(in, file), []byte(file+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, in, "stash", "push", "-q", "-u", "-m", file)
	}
	stash(dir, "person.txt")
	stash(w1, "w1-old.txt")
	stash(w2, "w2.txt")
	stash(w1, "w1-new.txt")
	// The shared stash, newest first: w1-new, w2, w1-old, person.

	if out, code := shimStash(t, w1, "stash", "list"); code != 0 || out != "stash@{0}: On w1: w1-new.txt\nstash@{2}: On w1: w1-old.txt\n" {
		t.Fatalf("w1's list (exit %d):\n%s", code, out)
	}
	if out, code := shimStash(t, w2, "stash", "list", "--format=%gd %gs"); code != 0 || out != "stash@{1} On w2: w2.txt\n" {
		t.Fatalf("w2's list (exit %d):\n%s", code, out)
	}
	// Another's entry, by number: refused, with what is this worktree's.
	out, code := shimStash(t, w2, "stash", "pop", "stash@{0}")
	if code != 1 || !strings.Contains(out, "stash@{0} (On w1: w1-new.txt) was not made on this worktree's branch, w2") || !strings.Contains(out, "its entries: stash@{1} (On w2: w2.txt)") {
		t.Fatalf("w2 popping w1's entry: exit %d:\n%s", code, out)
	}
	if _, code := shimStash(t, w2, "stash", "show", "2"); code != 1 {
		t.Fatalf("w2 was shown w1's stash@{2}")
	}
	// With no entry named, pop takes this worktree's newest, not stash@{0}.
	if out, code := shimStash(t, w2, "stash", "pop", "-q"); code != 0 {
		t.Fatalf("w2's pop: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(w2, "w2.txt")); err != nil {
		t.Fatalf("w2's pop did not bring back its own work: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w2, "w1-new.txt")); err == nil {
		t.Fatal("w2's pop brought w1's work")
	}
	if out, code := shimStash(t, w2, "stash", "pop"); code != 1 || strings.TrimSpace(out) != "No stash entries found." {
		t.Fatalf("w2's pop of an empty stash of its own: exit %d\n%s", code, out)
	}
	// Its own entry by number (w2's pop moved it up one); then clear
	// takes only w1's.
	if out, code := shimStash(t, w1, "stash", "show", "--name-only", "--include-untracked", "stash@{1}"); code != 0 || !strings.Contains(out, "w1-old.txt") {
		t.Fatalf("w1's show of its own stash@{1}: exit %d\n%s", code, out)
	}
	if out, code := shimStash(t, w1, "stash", "drop", "stash@{2}"); code != 1 || !strings.Contains(out, "(On main: person.txt)") {
		t.Fatalf("w1 dropped the person's entry: exit %d\n%s", code, out)
	}
	if out, code := shimStash(t, w1, "stash", "clear"); code != 0 {
		t.Fatalf("w1's clear: exit %d\n%s", code, out)
	}
	if list := git(t, dir, "stash", "list", "--format=%gs"); list != "On main: person.txt" {
		t.Fatalf("after w1's clear the stash holds:\n%s", list)
	}
	// Another repository (a project's tests making one) keeps git's own
	// stash: there the entries of another branch are listed and popped.
	other := repo(t)
	git(t, other, "checkout", "-q", "-b", "side")
	stash(other, "side.txt")
	git(t, other, "checkout", "-q", "main")
	if out, code := shimStashIn(t, other, filepath.Join(dir, ".git"), "stash", "pop"); code != 0 || !strings.Contains(out, "side.txt") {
		t.Fatalf("another repository's pop: exit %d\n%s", code, out)
	}
	// A detached HEAD cannot tell its entries: git's own stash.
	git(t, w2, "checkout", "-q", "--detach")
	if out, code := shimStash(t, w2, "stash", "list"); code != 0 || !strings.Contains(out, "person.txt") {
		t.Fatalf("detached list: exit %d\n%s", code, out)
	}
}

func TestStashNumber(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "12": 12, "stash@{3}": 3, "refs/stash@{4}": 4, "stash@{x}": -1, "stash@{1": -1, "abc123": -1, "-1": -1, "HEAD": -1} {
		n, ok := stashNumber(in)
		if !ok {
			n = -1
		}
		if n != want {
			t.Errorf("stashNumber(%q) = %d, want %d", in, n, want)
		}
	}
	if got := bre("feat/a.b$"); got != `feat/a\.b\$` {
		t.Errorf("bre = %q", got)
	}
}
