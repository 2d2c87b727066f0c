package loop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// The loop's quiet commit reports the id git gave it: read from the
// branch's loose ref in the main tree and in a worktree, and asked of git
// when the ref is packed; nothing to commit is no commit.
func TestCommitReportsItsID(t *testing.T) {
	ctx := context.Background()
	st, _ := newRepo(t, 1)
	root := st.Repo.Root
	c := (&run{}).newCommitter(st.Repo, nil, nil)
	check := func(repo *git.Repo, c *committer, file string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo.Root, file), []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		sha, err := c.commitAll(ctx, "add "+file)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "--short=7", "HEAD"))
		if sha != want {
			t.Fatalf("commit of %s reported %q, HEAD is %q", file, sha, want)
		}
	}
	check(st.Repo, c, "a.txt")
	gitT(t, root, "pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(st.Repo.CommonDir, "refs", "heads", strings.TrimPrefix(strings.TrimSpace(gitT(t, root, "symbolic-ref", "HEAD")), "refs/heads/"))); err == nil {
		t.Fatal("pack-refs left the branch's loose ref")
	}
	if headFromFiles(st.Repo.GitDir, st.Repo.CommonDir) != "" {
		t.Fatal("a packed ref was read as a loose one")
	}
	c2 := (&run{}).newCommitter(st.Repo, nil, nil)
	check(st.Repo, c2, "b.txt")

	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, root, "worktree", "add", "-q", "-b", "side", wt)
	wrepo, err := git.Open(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	check(wrepo, (&run{}).newCommitter(wrepo, nil, nil), "c.txt")
	if sha, err := (&run{}).newCommitter(wrepo, nil, nil).commitAll(ctx, "nothing"); err != nil || sha != "" {
		t.Fatalf("nothing to commit: %q, %v", sha, err)
	}
}

// isTestFile knows tests by their names and their directories, and
// nothing else.
func TestIsTestFile(t *testing.T) {
	for p, want := range map[string]bool{
		"calc_test.go": true, "pkg/x/calc_test.go": true, "test_api.py": true, "api_test.py": true,
		"app.test.js": true, "src/App.spec.tsx": true, "user_spec.rb": true, "src/main/java/FooTest.java": true,
		"FooTests.kt": true, "tests/helpers.rs": true, "web/__tests__/a.js": true, "src/test/resources/x.json": true,
		"spec/support/h.rb": true, "src/__snapshots__/App.test.js.snap": true, "pkg/testdata/golden.txt": true,
		"calc.go": false, "test.py": false, "latest.js": false, "contest_entry.py": false, "docs/testing.md": false,
		"Testimony.java": false, "attest/x.go": false, "spectrum.ts": false, "README.test": false,
	} {
		if got := isTestFile(p); got != want {
			t.Errorf("isTestFile(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestRepoWriteFailed: git's own words for a commit it could not write
// into the repository - including the ref lock a full disk keeps it from
// writing, where it names no cause (hunt22 #6) - and not a hook's refusal.
func TestRepoWriteFailed(t *testing.T) {
	for _, c := range []struct {
		detail string
		want   bool
	}{
		{"git -c gc.auto=0 commit -q -F -: fatal: cannot update ref 'refs/heads/wiggum/US-1': couldn't write '/r/.git/refs/heads/wiggum/US-1.lock'", true},
		{"git commit: fatal: unable to write loose object file: No space left on device", true},
		{"git commit: error: unable to write new index file", true},
		{"git commit: fatal: sha1 file '/r/.git/index.lock' write error. Out of diskspace", true},
		{"git commit: lint failed: 3 problems", false},
		{"git commit: the hook says: unable to write the report", false},
	} {
		if got := repoWriteFailed(c.detail); got != c.want {
			t.Errorf("repoWriteFailed(%q) = %v, want %v", c.detail, got, c.want)
		}
	}
}
