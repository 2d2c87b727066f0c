package checkpoint

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
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

// An index entry named outside the working tree or inside .git (written
// by hand: git refuses to make one), such as an agent's planted
// sub/../../outside, was read back by git status as it is, and taken as a
// path: the checkpoint read the file it names into its snapshot, and the
// rollback wrote the checkpoint's content there - a file outside the tree,
// outside the agent's sandbox. Now status refuses such a name: the
// checkpoint and the rollback stop with a clear error, nothing read or
// written.
func TestIndexEntryNamedOutsideTheTree(t *testing.T) {
	for _, name := range []string{"sub/../../OUTSIDE", ".git/hooks/post-checkout", "a/./b"} {
		setup := func(t *testing.T) (r *testRepo, outside, rel string) {
			r = newRepo(t)
			outside = filepath.Join(filepath.Dir(r.dir), "outside-"+filepath.Base(r.dir))
			if err := os.WriteFile(outside, []byte("not the repository's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r.write("sub/x", "x\n")
			return r, outside, strings.ReplaceAll(name, "OUTSIDE", filepath.Base(outside))
		}
		untouched := func(t *testing.T, outside, want string) {
			t.Helper()
			if got, err := os.ReadFile(outside); err != nil || string(got) != want {
				t.Fatalf("the file outside the tree: %q, %v", got, err)
			}
		}
		t.Run(name+"/before the checkpoint", func(t *testing.T) {
			r, outside, rel := setup(t)
			plantIndexEntry(t, r, rel)
			_, err := r.st.Save(ctx, "", SaveOptions{})
			if err == nil {
				// What the previous code did next: the rollback wrote the
				// checkpoint's content to the file outside.
				_ = os.WriteFile(outside, []byte("changed since\n"), 0o644)
				r.write("README", "the attempt's\n")
				_, _ = r.st.Rollback(ctx, RollbackOptions{Reason: "tests failed"})
				untouched(t, outside, "changed since\n")
				t.Fatal("the checkpoint took an index naming a path outside the tree")
			}
			if !strings.Contains(err.Error(), "not a path in the working tree") {
				t.Fatalf("checkpoint: %v", err)
			}
			untouched(t, outside, "not the repository's\n")
		})
		t.Run(name+"/by the attempt", func(t *testing.T) {
			r, outside, rel := setup(t)
			mustSave(t, r, "")
			r.write("README", "the attempt's\n")
			plantIndexEntry(t, r, rel)
			before := r.git("rev-parse", "HEAD")
			_, err := r.st.Rollback(ctx, RollbackOptions{Reason: "tests failed"})
			if err == nil || !strings.Contains(err.Error(), "not a path in the working tree") {
				t.Fatalf("rollback: %v", err)
			}
			untouched(t, outside, "not the repository's\n")
			if r.read("README") != "the attempt's\n" || r.git("rev-parse", "HEAD") != before {
				t.Error("the refused rollback changed the tree")
			}
		})
	}
}

// plantIndexEntry adds an entry named rel (any name) to r's index, as a
// program writing the index file itself would.
func plantIndexEntry(t *testing.T, r *testRepo, rel string, oid ...string) {
	t.Helper()
	if len(oid) == 0 {
		oid = []string{r.git("hash-object", "-w", "README")}
	}
	index := filepath.Join(r.dir, ".git", "index")
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	out, err := editIndexData(data, 0, []treeChange{{path: rel, mode: "100644", oid: oid[0]}})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum(out[:len(out)-20])
	copy(out[len(out)-20:], sum[:])
	if err := os.WriteFile(index, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A commit whose tree holds an entry named "..", "." or ".git" (made by
// hand with hash-object --literally and commit-tree: git never writes one,
// and fsck and checkout refuse it), committed by the attempt with an index
// to match, so git status has nothing to say: the rollback's comparison of
// trees took "../outside" for a path the checkpoint does not have and
// removed that file, outside the tree. Now the rollback stops with a clear
// error, the file where it was.
func TestCommittedTreeNamingOutsideTheTree(t *testing.T) {
	for _, name := range []string{"..", ".git", "."} {
		t.Run(name, func(t *testing.T) {
			r := newRepo(t)
			outside := filepath.Join(filepath.Dir(r.dir), "outside-"+filepath.Base(r.dir))
			if err := os.WriteFile(outside, []byte("not the repository's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			mustSave(t, r, "")
			readme := r.git("hash-object", "-w", "README")
			ignore := r.git("hash-object", "-w", ".gitignore")
			blob := r.git("hash-object", "-w", outside)
			sub := literalTree(t, r, "100644 "+filepath.Base(outside), blob)
			// In git's order (a tree's name sorts as if it ended in "/").
			root := literalTree(t, r, "40000 "+name, sub, "100644 .gitignore", ignore, "100644 README", readme)
			commit := r.git("commit-tree", root, "-p", "HEAD", "-m", "the attempt's")
			r.git("update-ref", "HEAD", commit)
			plantIndexEntry(t, r, name+"/"+filepath.Base(outside), blob)
			if name == ".." { // the case where git status has nothing to say
				if st := r.git("status", "--porcelain"); st != "" {
					t.Fatalf("git status is not clean, the case is not made:\n%s", st)
				}
			}

			_, err := r.st.Rollback(ctx, RollbackOptions{Reason: "tests failed"})
			if err == nil || !strings.Contains(err.Error(), "never writes") {
				t.Errorf("rollback: %v", err)
			}
			if got, err := os.ReadFile(outside); err != nil || string(got) != "not the repository's\n" {
				t.Fatalf("the file outside the tree: %q, %v", got, err)
			}
		})
	}
}

// literalTree writes a tree object of the entries given as pairs ("mode
// name", hex id), in that order, without git's checks.
func literalTree(t *testing.T, r *testRepo, pairs ...string) string {
	t.Helper()
	var b []byte
	for i := 0; i < len(pairs); i += 2 {
		id, err := hex.DecodeString(pairs[i+1])
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(append(b, pairs[i]...), 0), id...)
	}
	cmd := exec.Command("git", "hash-object", "-t", "tree", "--literally", "-w", "--stdin")
	cmd.Dir = r.dir
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
