package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	gitfiles "github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// A hook call must cost about what starting a Go binary costs, so nothing
// here spawns git where git's files can answer: the working tree and its
// branch come from internal/git's file reads, the session from the holder
// record and a lock probe. (A repository that keeps its refs in a reftable
// is the exception: its branch is git's to say.)

// findRoot is the working tree containing dir, found without git.
func findRoot(dir string) string { return gitfiles.FindRoot(dir) }

// treeOf is the working tree a hook whose cwd is dir acts on: the one
// containing dir, or - when the process belongs to a live session (its
// token is the holder's) and dir is not in a tree of its own that counts -
// the session's tree. That covers a repository nested in the session's
// tree (a submodule, a clone, a generator's repository) with no session
// of its own, and a cwd outside the tree altogether: no repository at
// all, the tree's parent, an unrelated repository. Claude Code keeps its
// shell's directory from call to call (and with --add-dir does not reset a
// cd out of the project): after one cd vendor/lib, or cd /var/tmp, every
// hook named a place with no session, and the guard and the test rollback
// were off for the rest of the attempt (a person's branch deleted with
// git -C ../.. branch -D, cd /repo && git reset --hard allowed, failing
// tests committed). A payload's cwd must never switch the guard off. The
// guard still places each command by its own directory (cd, -C), and the
// test hook rolls back only a test run in the tree (testRun). Another
// worktree of the session's repository keeps its own tree (sessionAt), and
// so does a repository with a live session of its own. Only a hook in a
// session, away from its tree, pays for the check.
func treeOf(dir string) string {
	root := findRoot(dir)
	tok, held := os.Getenv(layout.SessionEnv), os.Getenv(layout.RootEnv)
	if tok == "" || held == "" || root == held {
		return root
	}
	if root != "" && (gitfiles.SameRepository(root, held) || layout.At(root).Session().Active) {
		return root
	}
	if !layout.At(held).Session().Mine {
		return root
	}
	return held
}

// sessionAt is the session a hook at root acts in: the tree's own, else
// the session that started this process, when the process works in
// another worktree of that session's repository. Claude Code's subagents
// with isolation "worktree" do: they work in .claude/worktrees/, with the
// session's environment, and a push from there once reached the remote
// because that tree had no session of its own.
func sessionAt(root string) layout.SessionInfo {
	s := layout.At(root).Session()
	if s.Active || root == "" {
		return s
	}
	tok, held := os.Getenv(layout.SessionEnv), os.Getenv(layout.RootEnv)
	if tok == "" || held == "" || !gitfiles.SameRepository(root, held) {
		return s
	}
	h := layout.At(held).Session()
	if !h.Mine {
		return s
	}
	h.Mine, h.Elsewhere = false, true
	return h
}

// branches returns the checked-out branch ("" when detached or unknown)
// and the remote's default branch ("" when unknown), for the guard's
// protected-branch rule. In a repository that keeps its refs in a
// reftable the files cannot tell, and git is asked (a few milliseconds
// more a hook there): read from HEAD's placeholder file, the branch would
// be ".invalid", and merging into main would not be denied.
func branches(root string) (current, defaultBranch string) {
	gitDir, commonDir := gitfiles.Dirs(root)
	if gitDir == "" {
		return "", ""
	}
	current, known := gitfiles.HeadBranch(gitDir)
	if !known {
		current = symbolicRef(root, "HEAD", "refs/heads/")
	}
	defaultBranch, known = gitfiles.RemoteDefaultBranch(commonDir)
	if !known {
		defaultBranch = symbolicRef(root, "refs/remotes/origin/HEAD", "refs/remotes/origin/")
	}
	return current, defaultBranch
}

// symbolicRef asks git which branch under prefix the symbolic ref names;
// "" when it names none (or git does not answer within a few seconds).
func symbolicRef(root, ref, prefix string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := (&gitfiles.Repo{Root: root}).Line(ctx, "symbolic-ref", "-q", ref)
	if err != nil {
		return ""
	}
	name, ok := strings.CutPrefix(out, prefix)
	if !ok || !gitfiles.ValidBranch(name) {
		return ""
	}
	return name
}

// branchExists asks git whether the local branch name exists; when git
// cannot answer within a few seconds, it is taken to exist.
func branchExists(root, name string) bool {
	if !gitfiles.ValidBranch(name) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := (&gitfiles.Repo{Root: root}).Line(ctx, "rev-parse", "--verify", "-q", "refs/heads/"+name)
	return err == nil || ctx.Err() != nil
}

// infoDir is the repository's shared info directory (where exclude
// lives), "" when root holds no readable .git.
func infoDir(root string) string {
	if _, common := gitfiles.Dirs(root); common != "" {
		return filepath.Join(common, "info")
	}
	return ""
}
