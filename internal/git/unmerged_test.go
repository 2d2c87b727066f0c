package git

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// conflicted makes a stash pop conflict in c.txt (no merge state left,
// only the index's stages) with a.txt staged besides, in index format v.
func conflicted(t *testing.T, v string) string {
	t.Helper()
	dir := testRepo(t)
	gitT(t, dir, "config", "index.version", v)
	gitT(t, dir, "update-index", "--index-version", v)
	for _, f := range []string{"c.txt", "d/deep/e.txt", "d/deep/f.txt"} {
		write(t, dir, f, "base\n")
	}
	gitT(t, dir, "add", ".")
	gitT(t, dir, "commit", "-q", "-m", "base")
	write(t, dir, "c.txt", "stashed\n")
	gitT(t, dir, "stash", "-q")
	write(t, dir, "c.txt", "committed\n")
	gitT(t, dir, "commit", "-q", "-am", "change")
	if out, err := runGit(dir, "stash", "pop"); err == nil {
		t.Fatalf("stash pop did not conflict:\n%s", out)
	}
	write(t, dir, "a.txt", "staged\n")
	gitT(t, dir, "add", "a.txt")
	return dir
}

// The index's conflict stages are read from the file in every format git
// writes (2, 3 - extended flags - and 4, prefix-compressed paths), and
// agree with git's own ls-files -u; a clean index has none.
func TestUnmergedReadsTheIndex(t *testing.T) {
	for _, v := range []string{"2", "3", "4"} {
		t.Run("v"+v, func(t *testing.T) {
			dir := conflicted(t, v)
			repo, err := Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if v == "3" {
				// An intent-to-add entry sets the extended flags.
				write(t, dir, "later.txt", "x\n")
				gitT(t, dir, "add", "-N", "later.txt")
			}
			got, err := unmergedInIndex(filepath.Join(repo.GitDir, "index"), 20)
			if err != nil {
				t.Fatalf("index v%s not read: %v", v, err)
			}
			if !slices.Equal(got, []string{"c.txt"}) {
				t.Fatalf("unmerged = %q, want [c.txt]", got)
			}
			if list, err := repo.Unmerged(ctx); err != nil || !slices.Equal(list, got) {
				t.Fatalf("Unmerged = %q, %v", list, err)
			}
			gitT(t, dir, "checkout", "HEAD", "--", "c.txt")
			if got, err := repo.Unmerged(ctx); err != nil || len(got) != 0 {
				t.Fatalf("after the conflict is resolved: %q, %v", got, err)
			}
		})
	}
}

// A split index (its entries in a shared file) is not read from the file:
// git answers, the same.
func TestUnmergedAsksGitForASplitIndex(t *testing.T) {
	dir := conflicted(t, "2")
	gitT(t, dir, "update-index", "--split-index")
	repo, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unmergedInIndex(filepath.Join(repo.GitDir, "index"), 20); err != errIndexFormat {
		t.Fatalf("a split index read from the file: %v", err)
	}
	if got, err := repo.Unmerged(ctx); err != nil || !slices.Equal(got, []string{"c.txt"}) {
		t.Fatalf("Unmerged = %q, %v", got, err)
	}
}

// A damaged index is never taken for a clean one.
func FuzzUnmergedInIndex(f *testing.F) {
	dir := f.TempDir()
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "index")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = unmergedInIndex(path, 20) // no panic, whatever the bytes
	})
}
