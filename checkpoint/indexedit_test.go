package checkpoint

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// indexGit runs git with GIT_INDEX_FILE=idx and returns its output.
func (r *testRepo) indexGit(idx string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = r.dir, append(os.Environ(), "GIT_INDEX_FILE="+idx)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s on %s: %v\n%s", strings.Join(args, " "), idx, err, out)
	}
	return string(out)
}

// editFixture is a repository whose index (with a cache tree, every stat
// older than the index so none is racily clean) has nested directories,
// and an edit touching each case update-index handles: a changed blob, a
// removal, a new path in a new directory, a file replacing a directory, a
// directory replacing a file, an executable and a symbolic link.
func editFixture(t *testing.T) (*testRepo, []treeChange) {
	r := newRepo(t)
	for _, p := range []string{"a/one.txt", "a/two.txt", "a/b/deep.txt", "a/b/kept.txt", "c/x.txt", "a/b/deep.txt", "dir/in.txt", "dir/sub/in.txt", "file", "z.txt"} {
		r.write(p, "content of "+p+"\n")
	}
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "tree")
	old := time.Now().Add(-time.Hour)
	filepath.Walk(r.dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() && fi.Name() == ".git" {
			return filepath.SkipDir
		}
		if err == nil {
			os.Chtimes(p, old, old)
		}
		return nil
	})
	r.git("update-index", "--refresh")
	r.git("write-tree") // the cache tree, complete
	blob := r.git("hash-object", "-w", "README")
	return r, []treeChange{
		{path: "a/two.txt", mode: "100644", oid: blob},
		{path: "c/x.txt"},
		{path: "a/b/deep.txt"},
		{path: "new/dir/n.txt", mode: "100644", oid: blob},
		{path: "dir", mode: "100755", oid: blob},
		{path: "file/now/a/dir", mode: "100644", oid: blob},
		{path: "a/link", mode: "120000", oid: blob},
	}
}

// TestEditIndexIsGits: the index edited in process holds what git's
// `update-index --index-info` makes of the same input - every entry with
// the same stat data, and a cache tree that yields the same tree.
func TestEditIndexIsGits(t *testing.T) {
	r, changes := editFixture(t)
	user := filepath.Join(r.dir, ".git", "index")
	mine := filepath.Join(r.dir, ".git", "mine")
	if err := os.Chmod(user, 0o664); err != nil { // as in a shared repository
		t.Fatal(err)
	}
	if err := editIndex(user, mine, changes, 40); err != nil {
		t.Fatalf("editIndex: %v", err)
	}
	if fi, err := os.Stat(mine); err != nil {
		t.Fatal(err)
	} else if fi.Mode().Perm() != 0o664 {
		t.Fatalf("the edited index's mode is %v, want the old one's, 0664", fi.Mode())
	}
	theirs := &treeIndex{path: filepath.Join(r.dir, ".git", "theirs"), env: []string{"GIT_INDEX_FILE=" + filepath.Join(r.dir, ".git", "theirs")}}
	if err := r.st.linkIndex(theirs); err != nil {
		t.Fatal(err)
	}
	if err := r.st.setEntries(ctx, theirs, changes, 40); err != nil {
		t.Fatal(err)
	}
	a, b := r.indexGit(mine, "ls-files", "-s", "--debug"), r.indexGit(theirs.path, "ls-files", "-s", "--debug")
	if a != b {
		t.Fatalf("index edited in process:\n%s\ngit's:\n%s", a, b)
	}
	for _, gone := range []string{"c/x.txt", "a/b/deep.txt", "dir/in.txt", "dir/sub/in.txt", "file "} {
		if strings.Contains(a, "\t"+strings.TrimSpace(gone)+"\n") {
			t.Fatalf("%s is still in the index:\n%s", gone, a)
		}
	}
	// A cache tree not invalidated along a changed path would hand
	// write-tree a stale tree id for it.
	if x, y := r.indexGit(mine, "write-tree"), r.indexGit(theirs.path, "write-tree"); x != y {
		t.Fatalf("write-tree: in process %s, git %s", x, y)
	}
	// And untouched entries keep the stat data git recorded: nothing to
	// refresh, nothing but the edited paths reported.
	got := r.indexGit(mine, "diff-files", "--name-only")
	for _, p := range strings.Fields(got) {
		if p != "a/two.txt" && p != "dir" && p != "a/link" && p != "new/dir/n.txt" && p != "file/now/a/dir" {
			t.Fatalf("untouched %s lost its stat data:\n%s", p, got)
		}
	}
}

// TestEditIndexSmudgesRacilyCleanEntries: an entry written in the second
// its index was (its stat data cannot tell a same-size edit that second)
// loses its size in the new, younger index, so git looks at its content.
func TestEditIndexSmudgesRacilyCleanEntries(t *testing.T) {
	r, changes := editFixture(t)
	// z.txt: stat data recorded now, then the same size edit.
	r.write("z.txt", "content of z.txt\n")
	r.git("update-index", "--refresh")
	r.write("z.txt", "CONTENT OF Z.TXT\n")
	user := filepath.Join(r.dir, ".git", "index")
	fi, err := os.Stat(user)
	if err != nil {
		t.Fatal(err)
	}
	zi, err := os.Stat(filepath.Join(r.dir, "z.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if zi.ModTime().Unix() < fi.ModTime().Unix() {
		t.Skip("the edit and the index fell in different seconds; nothing racy to test")
	}
	mine := filepath.Join(r.dir, ".git", "mine")
	if err := editIndex(user, mine, changes, 40); err != nil {
		t.Fatal(err)
	}
	// Make the new index clearly younger than z.txt, as a later write is.
	later := time.Now().Add(time.Hour)
	os.Chtimes(mine, later, later)
	if got := r.indexGit(mine, "diff-files", "--name-only", "--", "z.txt"); !strings.Contains(got, "z.txt") {
		t.Fatal("the same-second edit of z.txt is invisible through the edited index")
	}
}

// TestEditIndexDeclines: what it does not do as git would, it leaves to
// git, writing nothing.
func TestEditIndexDeclines(t *testing.T) {
	r, changes := editFixture(t)
	user := filepath.Join(r.dir, ".git", "index")
	mine := filepath.Join(r.dir, ".git", "mine")
	for name, c := range map[string][]treeChange{
		"a submodule": {{path: "sub", mode: "160000", oid: strings.Repeat("1", 40)}},
		"twice":       {{path: "q", mode: "100644", oid: strings.Repeat("1", 40)}, {path: "q", mode: "100755", oid: strings.Repeat("1", 40)}},
	} {
		if err := editIndex(user, mine, c, 40); !errors.Is(err, errIndexDecline) {
			t.Errorf("%s: %v, want a decline", name, err)
		}
	}
	if err := editIndex(user, mine, changes, 64); !errors.Is(err, errIndexDecline) {
		t.Errorf("SHA-256: %v, want a decline", err)
	}
	data, err := os.ReadFile(user)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), data...)
	corrupt[20] ^= 1
	if _, err := editIndexData(corrupt, 0, changes); !errors.Is(err, errIndexDecline) {
		t.Errorf("a bad checksum: %v, want a decline", err)
	}
	if _, err := editIndexData(data[:30], 0, changes); !errors.Is(err, errIndexDecline) {
		t.Errorf("a truncated index: %v, want a decline", err)
	}
	r.git("update-index", "--index-version", "4")
	if err := editIndex(user, mine, changes, 40); !errors.Is(err, errIndexDecline) {
		t.Errorf("version 4: %v, want a decline", err)
	}
	r.git("update-index", "--index-version", "2", "--untracked-cache")
	r.git("status", "--porcelain")
	if err := editIndex(user, mine, changes, 40); !errors.Is(err, errIndexDecline) {
		t.Errorf("an untracked cache: %v, want a decline", err)
	}
	if _, err := os.Stat(mine); err == nil {
		t.Fatal("a declined edit wrote an index")
	}
}

// TestRollbackThroughGitsIndexEdit: with an index editIndex declines (a
// version 4 one), the rollback's index comes from git, as right.
func TestRollbackThroughGitsIndexEdit(t *testing.T) {
	r := newRepo(t)
	r.git("update-index", "--index-version", "4")
	r.write("kept.txt", "dirty at the checkpoint\n")
	mustSave(t, r, "")
	r.commit("work.txt", "the agent's\n", "agent")
	r.write("README", "agent edit\n")
	if _, err := r.st.Rollback(ctx, RollbackOptions{DiscardForeign: true}); err != nil {
		t.Fatal(err)
	}
	if got := r.git("status", "--porcelain", "--untracked-files=all"); got != "?? kept.txt" {
		t.Fatalf("status after rollback:\n%s", got)
	}
	data, err := os.ReadFile(filepath.Join(r.dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 8 || data[7] != 4 {
		t.Fatalf("index header % x, want git's edit to keep version 4", data[:min(len(data), 8)])
	}
}
