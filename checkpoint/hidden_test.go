package checkpoint

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A tracked file the person flagged with `git update-index
// --skip-worktree` or `--assume-unchanged` to keep local settings in it
// (the common advice for a config with a local database) is invisible to
// git status. The checkpoint did not hold its local content and the
// rollback did not return it: an attempt that rewrote it kept its version,
// the person's content was saved nowhere. Now the checkpoint holds it, the
// rollback returns it and saves the attempt's version in its backup, and
// the flag and the index entry stay as they were - the content never shows
// in git status nor reaches the next commit. Each case also runs with an
// untracked nested repository, which makes the snapshot take git's index
// route instead of building its trees in this process.
func TestHiddenFilesRollBack(t *testing.T) {
	for _, flag := range []string{"--skip-worktree", "--assume-unchanged"} {
		for _, indexRoute := range []bool{false, true} {
			for _, version := range []string{"3", "4"} {
				name := flag[2:] + "/v" + version
				if indexRoute {
					name += "/index-route"
				}
				t.Run(name, func(t *testing.T) {
					r := newRepo(t)
					r.write("config", "db=prod\n")
					r.write("main.go", "package main\n")
					r.git("add", ".")
					r.git("commit", "-q", "-m", "config")
					r.git("update-index", "--index-version", version)
					r.git("update-index", flag, "config")
					r.write("config", "db=local, the person's own\n")
					if indexRoute {
						r.git("init", "-q", "vendored")
					}
					want := r.git("ls-files", "-s", "-v", "config")
					cp := mustSave(t, r, "")
					if cp.Snapshot == "" {
						t.Fatal("the checkpoint recorded no snapshot: the local content is not held")
					}

					r.write("config", "db=the agent's\n")
					r.write("main.go", "package broken\n")
					res, err := r.st.Rollback(ctx, RollbackOptions{Reason: "tests failed"})
					if err != nil {
						t.Fatal(err)
					}
					if got := r.read("config"); got != "db=local, the person's own\n" {
						t.Errorf("config after the rollback: %q", got)
					}
					if got := r.read("main.go"); got != "package main\n" {
						t.Errorf("main.go after the rollback: %q", got)
					}
					if got := r.git("ls-files", "-s", "-v", "config"); got != want {
						t.Errorf("config's index entry: %q, want %q as before", got, want)
					}
					if got := r.git("show", res.BackupRef+":config"); got != "db=the agent's" {
						t.Errorf("the backup holds config as %q, not the attempt's version", got)
					}
					if got := r.git("status", "--porcelain", "--untracked-files=no"); got != "" {
						t.Errorf("git status after the rollback:\n%s", got)
					}
				})
			}
		}
	}
}

// An agent that takes the flag off to commit the file: the rollback
// returns the commit and the file's local content, and flags it again, so
// the next story's `git add -A` does not commit the person's settings.
func TestHiddenFileUnflaggedByTheAttempt(t *testing.T) {
	for _, flag := range []string{"skip-worktree", "assume-unchanged"} {
		t.Run(flag, func(t *testing.T) {
			r := newRepo(t)
			r.commit("config", "db=prod\n", "config")
			r.git("update-index", "--"+flag, "config")
			r.write("config", "db=local\n")
			want := r.git("ls-files", "-v", "config")
			mustSave(t, r, "")

			r.git("update-index", "--no-"+flag, "config")
			r.write("config", "db=agent\n")
			r.git("commit", "-q", "-am", "the agent's")
			if _, err := r.st.Rollback(ctx, RollbackOptions{Reason: "tests failed"}); err != nil {
				t.Fatal(err)
			}
			if got := r.read("config"); got != "db=local\n" {
				t.Errorf("config after the rollback: %q", got)
			}
			if got := r.git("ls-files", "-v", "config"); got != want {
				t.Errorf("config is %q in the index, want %q: the flag is gone", got, want)
			}
			if got := r.git("status", "--porcelain"); got != "" {
				t.Errorf("git status after the rollback shows the local settings:\n%s", got)
			}
		})
	}
}

// An attempt that only takes the flag off, changing nothing: the rollback
// has nothing to return but the flag, and puts it back.
func TestHiddenFileOnlyUnflagged(t *testing.T) {
	r := newRepo(t)
	r.commit("config", "db=prod\n", "config")
	r.git("update-index", "--skip-worktree", "config")
	r.write("config", "db=local\n")
	mustSave(t, r, "")
	r.git("update-index", "--no-skip-worktree", "config")
	if _, err := r.st.Rollback(ctx, RollbackOptions{Reason: "tests failed"}); err != nil {
		t.Fatal(err)
	}
	if got := r.git("ls-files", "-v", "config"); !strings.HasPrefix(got, "S ") {
		t.Errorf("config is %q in the index: the flag was not put back", got)
	}
	if got := r.git("status", "--porcelain"); got != "" {
		t.Errorf("git status shows the local settings:\n%s", got)
	}
}

// What is not a change: a hidden file left as it was makes no snapshot;
// a sparse checkout's files outside its cone (skip-worktree, absent) are
// neither held as deleted nor written back by a rollback.
func TestHiddenFilesThatAreNotChanges(t *testing.T) {
	r := newRepo(t)
	r.commit("config", "db=prod\n", "config")
	r.commit("far/away.txt", "outside the cone\n", "far")
	r.git("update-index", "--assume-unchanged", "config")
	if cp := mustSave(t, r, ""); cp.Snapshot != "" || len(cp.AssumeUnchanged) != 0 {
		t.Fatalf("an unchanged hidden file made a snapshot %q (%q)", cp.Snapshot, cp.AssumeUnchanged)
	}

	r.git("sparse-checkout", "set", "--no-cone", "/*", "!/far/")
	if r.exists("far/away.txt") {
		t.Fatal("sparse checkout left far/away.txt")
	}
	cp := mustSave(t, r, "")
	if cp.Snapshot != "" || len(cp.SkipWorktree) != 0 {
		t.Fatalf("the sparse checkout's absent file made a snapshot %q (%q)", cp.Snapshot, cp.SkipWorktree)
	}
	r.write("README", "changed\n")
	if _, err := r.st.Rollback(ctx, RollbackOptions{Reason: "tests failed"}); err != nil {
		t.Fatal(err)
	}
	if r.exists("far/away.txt") {
		t.Error("the rollback wrote a file outside the sparse checkout")
	}
	if got := r.git("ls-files", "-v", "far/away.txt"); !strings.HasPrefix(got, "S ") {
		t.Errorf("far/away.txt is %q in the index, not skip-worktree", got)
	}
	if got := r.read("README"); got != "hello\n" {
		t.Errorf("README after the rollback: %q", got)
	}
}

// A checkpoint record whose hidden files are not paths in the tree (a
// corrupt or planted checkpoint.json) is refused, never handed to git.
func TestHiddenFileRecordChecked(t *testing.T) {
	for _, p := range []string{"../outside", "/etc/passwd", "a/../../b", ""} {
		cp := &Checkpoint{Head: strings.Repeat("a", 40), Branch: "refs/heads/main", SkipWorktree: []string{p}}
		cp.Time = cp.Time.AddDate(2026, 0, 0)
		if err := cp.check(); err == nil {
			t.Errorf("skip_worktree %q accepted", p)
		}
	}
}

// FuzzScanIndex: any bytes as an index - torn, hostile, a version or a
// length git never writes - are read without a panic or a read past the
// end, and what it reports as names lie within the file's entries.
func FuzzScanIndex(f *testing.F) {
	dir := f.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			f.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	git("add", "README")
	git("commit", "-q", "-m", "init")
	for _, v := range []string{"2", "3", "4"} {
		git("update-index", "--index-version", v)
		git("update-index", "--skip-worktree", "README")
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:len(data)-20])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n := 0
		end, err := scanIndex(body, 20, func(raw, name []byte, flags uint16) error {
			if len(raw) < 62 || len(name) > len(body) {
				t.Fatalf("entry of %d bytes, name of %d in a body of %d", len(raw), len(name), len(body))
			}
			n++
			return nil
		})
		if err == nil && (end > len(body) || end < 12) {
			t.Fatalf("extensions at %d in a body of %d", end, len(body))
		}
	})
}
