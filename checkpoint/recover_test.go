package checkpoint

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rolledBack makes an attempt (a.txt edited, out.txt new) and rolls it
// back; it returns the backup's name.
func rolledBack(t *testing.T, r *testRepo) string {
	t.Helper()
	mustSave(t, r, "s1")
	r.write("a.txt", "agent wrote\n")
	r.write("out.txt", "agent output\n")
	res, err := r.st.Rollback(ctx, RollbackOptions{Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(res.BackupRef, BackupPrefix)
}

// A restore keeps what the person hides from git: a skip-worktree and an
// assume-unchanged file the saved state did not change keep their content
// and flags, an ignored file it does not hold is left alone, and an
// ignored file it does hold is saved in the state-before backup before it
// is written over; the state-before backup holds the hidden files'
// content, as a checkpoint does.
func TestRecoverKeepsHiddenAndIgnoredFiles(t *testing.T) {
	r := newRepo(t)
	r.commit("config.ini", "db=prod\n", "cfg")
	r.commit("local.env", "KEY=shared\n", "env")
	r.commit("a.txt", "a\n", "a")
	name := rolledBack(t, r)

	r.write("config.ini", "db=localhost\n")
	r.git("update-index", "--skip-worktree", "config.ini")
	r.write("local.env", "KEY=mine\n")
	r.git("update-index", "--assume-unchanged", "local.env")
	r.write("mine.log", "MY log\n") // ignored by *.log
	if err := os.WriteFile(filepath.Join(r.dir, ".git", "info", "exclude"), []byte("*.txt.bak\nout.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.write("out.txt", "MY out, ignored now\n")

	rr, err := r.st.Restore(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"config.ini": "db=localhost\n", "local.env": "KEY=mine\n", "mine.log": "MY log\n",
		"a.txt": "agent wrote\n", "out.txt": "agent output\n",
	} {
		if got := r.read(path); got != want {
			t.Errorf("after recover %s = %q, want %q", path, got, want)
		}
	}
	if got := r.git("ls-files", "-v", "config.ini", "local.env"); got != "S config.ini\nh local.env" {
		t.Errorf("flags after recover:\n%s\nwant S config.ini, h local.env", got)
	}
	if got := r.git("diff", "--cached", "--name-only"); got != "" {
		t.Errorf("recover left staged changes: %s", got)
	}
	for path, want := range map[string]string{"config.ini": "db=localhost", "local.env": "KEY=mine", "out.txt": "MY out, ignored now"} {
		if got := r.git("show", rr.BackupRef+":"+path); got != want {
			t.Errorf("state-before backup %s = %q, want %q", path, got, want)
		}
	}
}

// A restore writes only the paths where the saved state differs: every
// other file keeps its mtime.
func TestRecoverWritesOnlyWhatDiffers(t *testing.T) {
	r := newRepo(t)
	r.commit("a.txt", "a\n", "a")
	for _, f := range []string{"f1.txt", "d/f2.txt"} {
		r.commit(f, f+"\n", f)
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range []string{"f1.txt", "d/f2.txt", "README"} {
		if err := os.Chtimes(filepath.Join(r.dir, f), old, old); err != nil {
			t.Fatal(err)
		}
	}
	name := rolledBack(t, r)
	if _, err := r.st.Restore(ctx, name); err != nil {
		t.Fatal(err)
	}
	if got := r.read("a.txt"); got != "agent wrote\n" {
		t.Fatalf("a.txt = %q", got)
	}
	for _, f := range []string{"f1.txt", "d/f2.txt", "README"} {
		fi, err := os.Stat(filepath.Join(r.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(old) {
			t.Errorf("%s was rewritten by recover (mtime %s, want %s)", f, fi.ModTime(), old)
		}
	}
	if got := r.git("status", "--porcelain"); got != "M a.txt\n?? out.txt" && got != " M a.txt\n?? out.txt" {
		t.Errorf("status after recover:\n%s", got)
	}
}

// Listing, counting, resolving and pruning 1,000 backups starts a bounded
// number of git processes, counted by a git on PATH that logs each call.
func TestBackupListingStartsBoundedGits(t *testing.T) {
	r := newRepo(t)
	head := r.git("rev-parse", "HEAD")
	var in strings.Builder
	for i := 0; i < 1000; i++ {
		in.WriteString(fmt.Sprintf("create %s20200101T000000Z-0000%c%c-%d %s\n", BackupPrefix, 'a'+i%26, 'x', i, head))
	}
	cmd := exec.Command("git", "update-ref", "--stdin")
	cmd.Dir, cmd.Stdin = r.dir, strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	wrapper := "#!/bin/sh\necho \"$1\" >> " + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	calls := func(what string, f func() error) {
		t.Helper()
		os.Remove(log)
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		data, _ := os.ReadFile(log)
		if n := strings.Count(string(data), "\n"); n > 3 {
			t.Errorf("%s over 1,000 backups started %d gits, want at most 3", what, n)
		}
	}
	calls("CountBackups", func() error {
		n, err := r.st.CountBackups(ctx)
		if err == nil && n != 1000 {
			t.Errorf("CountBackups = %d, want 1000", n)
		}
		return err
	})
	calls("resolveBackup", func() error {
		_, err := r.st.resolveBackup(ctx, "20200101T000000Z-0000ax")
		if err == nil || !strings.Contains(err.Error(), "names") {
			t.Errorf("resolveBackup of an ambiguous prefix: %v", err)
		}
		return nil
	})
	calls("Prune --dry-run", func() error {
		gone, err := r.st.Prune(ctx, -time.Hour, true)
		if err == nil && len(gone) != 1000 {
			t.Errorf("Prune would delete %d, want 1000", len(gone))
		}
		return err
	})
	calls("Backups", func() error {
		list, err := r.st.Backups(ctx)
		if err == nil && len(list) != 1000 {
			t.Errorf("Backups listed %d, want 1000", len(list))
		}
		return err
	})
}

// Listing backups that each name a checkpoint counts each one's commits
// beyond it without a git per backup: the count a rollback knows is in the
// backup's message, and older backups without it are counted in one batch
// (a merge in a chain aside).
func TestBackupCommitCountsStartBoundedGits(t *testing.T) {
	r := newRepo(t)
	want := map[string]int{}
	for i := range 4 {
		mustSave(t, r, "s1")
		for j := range i % 3 {
			r.commit(fmt.Sprintf("c%d-%d.txt", i, j), "x\n", "agent commit")
		}
		r.write("a.txt", fmt.Sprintf("attempt %d\n", i))
		reason := fmt.Sprintf("attempt %d", i)
		if _, err := r.st.Rollback(ctx, RollbackOptions{Session: "s1", Reason: reason, DiscardForeign: true}); err != nil {
			t.Fatal(err)
		}
		want[reason] = i % 3
	}
	// Backups made before the count was recorded: heads 0 to 40 commits
	// past their checkpoint, one on a merge.
	cp := r.git("rev-parse", "HEAD")
	tree := r.git("rev-parse", "HEAD^{tree}")
	head := cp
	var in strings.Builder
	for k := 0; k <= 40; k++ {
		if k > 0 {
			head = r.git("commit-tree", "-p", head, "-m", fmt.Sprintf("c%d", k), tree)
		}
		reason := fmt.Sprintf("legacy %d", k)
		msg := fmt.Sprintf("wiggum backup: %s\n\nhead: %s\ncheckpoint: %s\nbranch: main\n", reason, head, cp)
		b := r.git("commit-tree", "-p", head, "-m", msg, tree)
		fmt.Fprintf(&in, "create %s20200101T0000%02dZ-legacy%d %s\n", BackupPrefix, k, k, b)
		want[reason] = k
	}
	side := r.git("commit-tree", "-p", cp, "-m", "side", tree)
	merge := r.git("commit-tree", "-p", head, "-p", side, "-m", "merge", tree)
	msg := fmt.Sprintf("wiggum backup: merged\n\nhead: %s\ncheckpoint: %s\nbranch: main\n", merge, cp)
	fmt.Fprintf(&in, "create %s20200102T000000Z-merged %s\n", BackupPrefix, r.git("commit-tree", "-p", merge, "-m", msg, tree))
	want["merged"] = 40 + 2
	cmd := exec.Command("git", "update-ref", "--stdin")
	cmd.Dir, cmd.Stdin = r.dir, strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	wrapper := "#!/bin/sh\necho \"$1\" >> " + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	list, err := r.st.Backups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// for-each-ref, cat-file, log, and a rev-list for the older backup
	// whose commits include a merge.
	data, _ := os.ReadFile(log)
	if n := strings.Count(string(data), "\n"); n > 4 {
		t.Errorf("listing %d backups started %d gits, want at most 4:\n%s", len(list), n, data)
	}
	if len(list) != len(want) {
		t.Fatalf("listed %d backups, want %d", len(list), len(want))
	}
	for _, b := range list {
		if w, ok := want[b.Reason]; !ok || b.Commits != w {
			t.Errorf("%s (%s): %d commit(s), want %d", b.Ref, b.Reason, b.Commits, w)
		}
	}
}
