package git

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorktreeWithoutGitNeverReachesTheOuterRepository: a worktree inside
// the main tree (as parallel runs make them) whose .git file went missing
// makes every git process wiggum starts there - one-shot, started, cat-file
// - fail with "not a git repository", never act on the repository around
// it; a user's own ceiling is kept.
func TestWorktreeWithoutGitNeverReachesTheOuterRepository(t *testing.T) {
	dir := testRepo(t)
	inner := filepath.Join(dir, ".ralph", "wt", "US-1")
	gitT(t, dir, "worktree", "add", "-q", "-b", "wiggum/US-1", inner)
	r, err := Open(ctx, inner)
	if err != nil || r.Root != inner {
		t.Fatalf("Open the worktree: %+v, %v", r, err)
	}
	if err := os.Remove(filepath.Join(inner, ".git")); err != nil {
		t.Fatal(err)
	}
	head := gitT(t, dir, "rev-parse", "HEAD")
	t.Setenv("GIT_CEILING_DIRECTORIES", "/nonexistent-ceiling")
	if _, err := r.Run(ctx, "commit", "-q", "--allow-empty", "-m", "escaped"); err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Errorf("commit in the worktree without .git: %v, want not a git repository", err)
	}
	s := r.Start(ctx, nil, "update-ref", "--stdin")
	if _, err := s.Finish([]byte("update refs/heads/escaped " + head + "\n")); err == nil {
		t.Errorf("a started git in the worktree without .git succeeded")
	}
	c := r.Cat(ctx)
	if objs, err := c.Read("HEAD"); err == nil && len(objs) == 1 && objs[0].ID != "" {
		t.Errorf("cat-file in the worktree without .git read HEAD: %s", objs[0].ID)
	}
	c.Close()
	if got := gitT(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatalf("main moved from %s to %s", head, got)
	}
	if out := gitT(t, dir, "branch", "--list", "escaped"); out != "" {
		t.Fatalf("a branch was made in the outer repository: %s", out)
	}
	if env := CeilingEnv(inner); env != "GIT_CEILING_DIRECTORIES="+filepath.Dir(inner)+":/nonexistent-ceiling" {
		t.Errorf("CeilingEnv = %s", env)
	}
}
