package checkpoint

import (
	"os"
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
