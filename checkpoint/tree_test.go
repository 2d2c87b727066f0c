package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// gitTree is the tree git itself makes of the working tree (tracked and
// untracked, not ignored): `git add -A` into a throwaway index.
func (r *testRepo) gitTree() string {
	r.t.Helper()
	idx := filepath.Join(r.t.TempDir(), "index")
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = r.dir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+idx)
		out, err := cmd.CombinedOutput()
		if err != nil {
			r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("read-tree", "HEAD")
	run("add", "-A")
	return run("write-tree")
}

// TestQuickSnapshotIsGitsTree: the snapshot built from HEAD's trees is, byte
// for byte, the tree git makes of the same working tree, for every kind of
// change a working tree can hold; and the index route (its fallback) agrees.
func TestQuickSnapshotIsGitsTree(t *testing.T) {
	r := newRepo(t)
	for _, f := range []string{"a/b/c.txt", "a/b/d.txt", "a/e.txt", "a.b", "a-b/x", "gone/one.txt", "filedir", "dirfile/x.txt", "keep/k.txt", "ab/deep/er/z.txt"} {
		r.write(f, "content of "+f+"\n")
	}
	r.write(".gitattributes", "*.crlf text eol=crlf\n")
	if err := os.Symlink("a/e.txt", filepath.Join(r.dir, "link")); err != nil {
		t.Fatal(err)
	}
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "tree")

	r.write("a/b/c.txt", "changed\n")                         // modified
	os.Remove(filepath.Join(r.dir, "a/b/d.txt"))              // deleted
	os.RemoveAll(filepath.Join(r.dir, "gone"))                // a directory emptied
	os.Remove(filepath.Join(r.dir, "filedir"))                // a file that became a directory
	r.write("filedir/inside.txt", "now a directory\n")        //
	os.RemoveAll(filepath.Join(r.dir, "dirfile"))             // a directory that became a file
	r.write("dirfile", "now a file\n")                        //
	r.write("a/new/deeper/n.txt", "untracked in new dirs\n")  // untracked, new directories
	r.write("a.b", "changed too\n")                           // sorts between a and a/ in git's order
	r.write("a0", "new, sorts after a/\n")                    //
	r.write("with space é.txt", "unicode\n")                  //
	r.write("x.crlf", "line one\nline two\n")                 // a filter applies
	r.write("run.sh", "#!/bin/sh\n")                          // executable
	os.Chmod(filepath.Join(r.dir, "run.sh"), 0o755)           //
	os.Remove(filepath.Join(r.dir, "link"))                   // a symlink retargeted
	os.Symlink("a/b/c.txt", filepath.Join(r.dir, "link"))     //
	os.Symlink("nowhere", filepath.Join(r.dir, "a/dangling")) // a new dangling symlink
	r.write("keep/staged.txt", "staged\n")                    // staged, then changed
	r.git("add", "keep/staged.txt")                           //
	r.write("keep/staged.txt", "staged, then changed\n")      //
	r.write("ab/deep/er/z.txt", "deep change\n")              //
	r.write("debug.log", "ignored\n")                         // ignored: not in the snapshot

	want := r.gitTree()
	now, err := r.st.Repo.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	commit, tree, tracked, err := r.st.quickSnapshot(ctx, now, "test", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tree != want {
		t.Fatalf("quick snapshot tree %s, git's %s:\n%s", tree, want, r.git("diff-tree", "-r", "--raw", want, tree))
	}
	if got := r.git("rev-parse", commit+"^{tree}", commit+"^1"); got != tree+"\n"+r.git("rev-parse", "HEAD") {
		t.Fatalf("commit %s: %s", commit, got)
	}
	if len(tracked) != len(now.Changes)+len(now.Untracked) {
		t.Fatalf("%d states for %d changes and %d untracked files", len(tracked), len(now.Changes), len(now.Untracked))
	}
	if err := r.git("fsck", "--no-dangling", "--strict"); err != "" {
		t.Fatalf("fsck: %s", err)
	}
	idx, itree, err := r.st.worktreeIndex(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	idx.remove()
	if itree != want {
		t.Fatalf("index route tree %s, git's %s", itree, want)
	}
}

// TestQuickSnapshotDeclines: what the tree route does not handle goes
// through the index, and the snapshot is still the working tree.
func TestQuickSnapshotDeclines(t *testing.T) {
	r := newRepo(t)
	r.write("a.txt", "a\n")
	r.git("add", "a.txt")
	r.git("commit", "-q", "-m", "a")
	r.write("a.txt", "ours\n")
	r.git("commit", "-q", "-am", "ours")
	r.git("checkout", "-q", "-b", "other", "HEAD~1")
	r.write("a.txt", "theirs\n")
	r.git("commit", "-q", "-am", "theirs")
	cmd := exec.Command("git", "merge", "main")
	cmd.Dir = r.dir
	cmd.Run() // conflicts
	os.Remove(filepath.Join(r.dir, ".git", "MERGE_HEAD"))
	now, err := r.st.Repo.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.st.quickSnapshot(ctx, now, "test", nil, nil); !errors.Is(err, errDecline) {
		t.Fatalf("an unmerged path: %v, want errDecline", err)
	}
	commit, tree, _, _, err := r.st.snapshot(ctx, now, "test", false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.git("show", commit+":a.txt"); !strings.Contains(got, "<<<<<<<") || tree == "" {
		t.Fatalf("snapshot of the conflicted file: %q", got)
	}
}

// TestRollbackResetsStagedButUnchangedPaths: a path the agent staged and
// then changed back in the working tree is no change of the working tree,
// but the index must still return to the checkpoint.
func TestRollbackResetsStagedButUnchangedPaths(t *testing.T) {
	r := newRepo(t)
	r.write("a.txt", "original\n")
	r.git("add", "a.txt")
	r.git("commit", "-q", "-m", "a")
	mustSave(t, r, "")
	r.write("a.txt", "staged by the agent\n")
	r.git("add", "a.txt")
	r.write("a.txt", "original\n")
	r.write("b.txt", "new\n")
	if _, err := r.st.Rollback(ctx, RollbackOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := r.git("status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Fatalf("status after rollback:\n%s", got)
	}
	if got := r.git("diff", "--cached", "--name-only"); got != "" {
		t.Fatalf("index still differs from HEAD: %s", got)
	}
}

// TestWriteIndexIsGits: the small index written in process reads back in
// git as the same entries `update-index --index-info` records, for names
// of every padding length, and checks out.
func TestWriteIndexIsGits(t *testing.T) {
	r := newRepo(t)
	var entries []treeChange
	blob := r.git("hash-object", "-w", "README")
	for i := 1; i <= 9; i++ {
		entries = append(entries, treeChange{path: "d/" + strings.Repeat("n", i), mode: "100644", oid: blob})
	}
	entries = append(entries,
		treeChange{path: "a.sh", mode: "100755", oid: blob},
		treeChange{path: "z/link", mode: "120000", oid: blob},
		treeChange{path: "a b/é.txt", mode: "100644", oid: blob})
	mine := filepath.Join(r.dir, ".git", "mine")
	if ok, err := writeIndex(mine, entries); !ok || err != nil {
		t.Fatalf("writeIndex: %v %v", ok, err)
	}
	theirs := &treeIndex{path: filepath.Join(r.dir, ".git", "theirs"), env: []string{"GIT_INDEX_FILE=" + filepath.Join(r.dir, ".git", "theirs")}}
	if err := r.st.setEntries(ctx, theirs, entries, 40); err != nil {
		t.Fatal(err)
	}
	ls := func(idx string) string {
		cmd := exec.Command("git", "ls-files", "-s", "--debug")
		cmd.Dir, cmd.Env = r.dir, append(os.Environ(), "GIT_INDEX_FILE="+idx)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git ls-files on %s: %v\n%s", idx, err, out)
		}
		return string(out)
	}
	if a, b := ls(mine), ls(theirs.path); a != b {
		t.Fatalf("index written in process:\n%s\ngit's:\n%s", a, b)
	}
	cmd := exec.Command("git", "checkout-index", "-f", "-a")
	cmd.Dir, cmd.Env = r.dir, append(os.Environ(), "GIT_INDEX_FILE="+mine)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("checkout-index: %v\n%s", err, out)
	}
	if r.read("d/nnnn") != r.read("README") {
		t.Fatal("checked out the wrong content")
	}
}

// TestRollbackOfAFileNamedWithALineBreak: a name cat-file and hash-object
// cannot carry sends the snapshot through the index, and the rollback
// still saves and removes it.
func TestRollbackOfAFileNamedWithALineBreak(t *testing.T) {
	r := newRepo(t)
	r.write("kept.txt", "dirty at the checkpoint\n")
	mustSave(t, r, "")
	r.write("odd\nname.txt", "the agent's\n")
	r.write("README", "agent edit\n")
	res, err := r.st.Rollback(ctx, RollbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.exists("odd\nname.txt") || r.read("README") != "hello\n" || r.read("kept.txt") != "dirty at the checkpoint\n" {
		t.Fatal("not back at the checkpoint")
	}
	if got := r.git("show", res.BackupRef+":odd\nname.txt"); got != "the agent's" {
		t.Fatalf("backup holds %q", got)
	}
}

// TestLinearChainProvesOnlyWhatItSees: the commits read with the facts
// stand in for rev-list only for a single-parent chain down to the
// checkpoint; a merge, a checkpoint further down or off the chain leaves
// it to rev-list - and the rollback's answer is the same either way.
func TestLinearChainProvesOnlyWhatItSees(t *testing.T) {
	r := newRepo(t)
	cp := r.git("rev-parse", "HEAD")
	var want []string
	for i := range 3 {
		want = append([]string{r.commit(fmt.Sprintf("f%d", i), "x\n", "c")}, want...)
	}
	read := func(head string, n int) []git.Object {
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf("%s~%d^{commit}", head, i))
		}
		objs, err := r.st.Repo.Batch(ctx, names...)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	if got, ok := linearChain(read(want[0], chainDepth), cp); !ok || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("chain %v %v, want %v", got, ok, want)
	}
	if _, ok := linearChain(read(want[0], 3), cp); ok {
		t.Fatal("a checkpoint past the commits read was taken as found")
	}
	r.git("checkout", "-q", "-b", "side", cp)
	side := r.commit("side.txt", "s\n", "side")
	r.git("checkout", "-q", "main")
	r.git("merge", "-q", "--no-edit", side)
	merge := r.git("rev-parse", "HEAD")
	if _, ok := linearChain(read(merge, chainDepth), cp); ok {
		t.Fatal("a merge was taken as a chain")
	}
	if _, ok := linearChain(read(merge, chainDepth), side); ok {
		t.Fatal("a commit off the first-parent chain was taken as found")
	}
}

// TestSnapshotHashesVerbatimFilesItself: where no attribute or conversion
// can apply, the snapshot's blobs are hashed in this process - and are
// still git's; once one can (autocrlf, a .gitattributes on the way, a
// global attributes file), git hashes them and the tree is git's again.
func TestSnapshotHashesVerbatimFilesItself(t *testing.T) {
	r := newRepo(t)
	r.write("src/a.txt", "a\n")
	r.write("src/deep/b.txt", "b\n")
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "src")
	check := func(verbatim bool) {
		t.Helper()
		r.write("src/a.txt", "line one\r\nline two\r\n")
		r.write("src/deep/new.txt", "new\r\n")
		r.write("src/deep/run.sh", "#!/bin/sh\r\n")
		os.Chmod(filepath.Join(r.dir, "src/deep/run.sh"), 0o755)
		now, err := r.st.Repo.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.st.Repo.Verbatim(now.Paths()); got != verbatim {
			t.Fatalf("Verbatim(%v) = %v, want %v", now.Paths(), got, verbatim)
		}
		want := r.gitTree()
		_, tree, _, err := r.st.quickSnapshot(ctx, now, "test", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tree != want {
			t.Fatalf("snapshot tree %s, git's %s:\n%s", tree, want, r.git("diff-tree", "-r", "--raw", want, tree))
		}
	}
	check(true)
	r.git("config", "core.autocrlf", "true")
	check(false)
	r.git("config", "--unset", "core.autocrlf")
	check(true)
	r.write("src/deep/.gitattributes", "*.txt eol=crlf\n")
	r.git("add", "src/deep/.gitattributes")
	r.git("commit", "-q", "-m", "attributes")
	check(false)
	r.git("rm", "-q", "src/deep/.gitattributes")
	r.git("commit", "-q", "-m", "no attributes")
	check(true)
	global := filepath.Join(os.Getenv("HOME"), ".config", "git", "attributes")
	if err := os.MkdirAll(filepath.Dir(global), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(global, []byte("* text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check(false)
}
