package git

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sameAsGit checks that Open(dir) gives git's own answer (rev-parse, with
// the same environment), and reports whether it got it without git.
func sameAsGit(t *testing.T, dir string) (inProcess bool) {
	t.Helper()
	want, werr := openWithGit(ctx, dir)
	got, gerr := Open(ctx, dir)
	if (werr == nil) != (gerr == nil) || errors.Is(werr, ErrNotRepo) != errors.Is(gerr, ErrNotRepo) {
		t.Fatalf("Open(%s): error %v, git says %v", dir, gerr, werr)
	}
	if werr != nil {
		if discover(dir) != nil {
			t.Fatalf("discover(%s) answered where git fails: %v", dir, werr)
		}
		return false
	}
	if !reflect.DeepEqual(*got, *want) {
		t.Fatalf("Open(%s) = %+v\ngit says      %+v", dir, *got, *want)
	}
	d := discover(dir)
	if d != nil && !reflect.DeepEqual(*d, *want) {
		t.Fatalf("discover(%s) = %+v\ngit says          %+v", dir, *d, *want)
	}
	return d != nil
}

func mustInProcess(t *testing.T, dir string) {
	t.Helper()
	if !sameAsGit(t, dir) {
		t.Fatalf("Open(%s) asked git; the files settle this layout", dir)
	}
}

func mustAskGit(t *testing.T, dir string) {
	t.Helper()
	if sameAsGit(t, dir) {
		t.Fatalf("Open(%s) answered without git where git could answer differently", dir)
	}
}

func mkdir(t *testing.T, p string) string {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenWithoutGitInCommonLayouts(t *testing.T) {
	dir := testRepo(t)
	mustInProcess(t, dir)
	mustInProcess(t, mkdir(t, filepath.Join(dir, "deep", "sub")))

	// GIT_DIR and GIT_WORK_TREE (a git hook's environment) point elsewhere:
	// Open ignores them, as its git calls do.
	other := testRepo(t)
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	mustInProcess(t, dir)
	os.Unsetenv("GIT_DIR")
	os.Unsetenv("GIT_WORK_TREE")

	// Detached HEAD, an unborn branch, packed refs: HEAD is not read here.
	gitT(t, dir, "switch", "-q", "--detach")
	mustInProcess(t, dir)
	gitT(t, dir, "pack-refs", "--all")
	gitT(t, dir, "switch", "-q", "--orphan", "unborn")
	mustInProcess(t, dir)

	// A linked worktree: a .git file, a commondir.
	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, dir, "worktree", "add", "-q", "-b", "story/1", wt, "main")
	mustInProcess(t, wt)
	mustInProcess(t, mkdir(t, filepath.Join(wt, "x", "y")))

	// A relative gitdir line, as `git worktree repair`-style tools and
	// submodules write.
	rel := testRepo(t)
	real := filepath.Join(t.TempDir(), "moved.git")
	if err := os.Rename(filepath.Join(rel, ".git"), real); err != nil {
		t.Fatal(err)
	}
	relPath, err := filepath.Rel(rel, real)
	if err != nil {
		t.Fatal(err)
	}
	write(t, rel, ".git", "gitdir: "+relPath+"\n")
	mustInProcess(t, rel)

	// .git as a symbolic link to the git dir, and a working tree reached
	// through a symbolic link.
	sym := testRepo(t)
	moved := filepath.Join(t.TempDir(), "gitdir")
	if err := os.Rename(filepath.Join(sym, ".git"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, filepath.Join(sym, ".git")); err != nil {
		t.Fatal(err)
	}
	mustInProcess(t, sym)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	mustInProcess(t, filepath.Join(link, "deep"))
}

func TestOpenWithoutGitInSHA256Repo(t *testing.T) {
	testRepo(t) // the environment
	dir := t.TempDir()
	cmdOut, err := runGit(dir, "-c", "init.defaultRefFormat=files", "init", "-q", "--object-format=sha256")
	if err != nil {
		t.Skipf("this git cannot make a SHA-256 repository: %s", cmdOut)
	}
	mustInProcess(t, dir)
}

func TestOpenAsksGitWhenFilesCannotSettleIt(t *testing.T) {
	dir := testRepo(t)

	// core.hooksPath, in the repository's config and in the global one.
	gitT(t, dir, "config", "core.hooksPath", ".githooks")
	mustAskGit(t, dir)
	gitT(t, dir, "config", "--unset", "core.hooksPath")
	mustInProcess(t, dir)
	write(t, os.Getenv("HOME"), ".gitconfig", "[core]\n\thooksPath = /somewhere/hooks\n")
	mustAskGit(t, dir)
	write(t, os.Getenv("HOME"), ".gitconfig", "[include]\n\tpath = more.inc\n")
	mustAskGit(t, dir)
	os.Remove(filepath.Join(os.Getenv("HOME"), ".gitconfig"))
	mustInProcess(t, dir)

	// A system config the git in use reads.
	t.Setenv("GIT_CONFIG_NOSYSTEM", "")
	sys := filepath.Join(t.TempDir(), "gitconfig")
	write(t, filepath.Dir(sys), "gitconfig", "[core]\n\thooksPath = /sys/hooks\n")
	t.Setenv("GIT_CONFIG_SYSTEM", sys)
	mustAskGit(t, dir)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.Unsetenv("GIT_CONFIG_SYSTEM")

	// `git -c` (a hook run by git -c ...) and the discovery variables.
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='/x'")
	mustAskGit(t, dir)
	os.Unsetenv("GIT_CONFIG_PARAMETERS")
	t.Setenv("GIT_CEILING_DIRECTORIES", dir)
	mustAskGit(t, mkdir(t, filepath.Join(dir, "sub")))
	os.Unsetenv("GIT_CEILING_DIRECTORIES")

	// core.worktree moves the working tree away from the .git directory.
	elsewhere := t.TempDir()
	gitT(t, dir, "config", "core.worktree", elsewhere)
	mustAskGit(t, dir)
	gitT(t, dir, "config", "--unset", "core.worktree")

	// Inside the git dir, a bare repository, no repository at all.
	mustAskGit(t, filepath.Join(dir, ".git", "refs"))
	bare := filepath.Join(t.TempDir(), "bare.git")
	gitT(t, dir, "clone", "-q", "--bare", dir, bare)
	mustAskGit(t, bare)
	if FindRoot(os.TempDir()) == "" {
		mustAskGit(t, t.TempDir())
	}

	// An empty .git directory is not a repository: git looks further up.
	outer := testRepo(t)
	inner := mkdir(t, filepath.Join(outer, "inner"))
	mkdir(t, filepath.Join(inner, ".git"))
	mustAskGit(t, inner)
}

func TestOpenInSubmodule(t *testing.T) {
	sub := testRepo(t)
	super := testRepo(t)
	gitT(t, super, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "mod")
	mod := filepath.Join(super, "mod")
	if fi, err := os.Lstat(filepath.Join(mod, ".git")); err != nil || fi.IsDir() {
		t.Fatalf("the submodule has no .git file: %v", err)
	}
	// Its config sets core.worktree, so git is asked; the answer is git's.
	sameAsGit(t, mod)
	r, err := Open(ctx, filepath.Join(mod))
	if err != nil || r.Root != mod || !strings.Contains(r.GitDir, filepath.Join(".git", "modules", "mod")) {
		t.Fatalf("Open in a submodule: %+v %v", r, err)
	}
}

func TestPlainConfig(t *testing.T) {
	for text, want := range map[string]bool{
		"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tlogallrefupdates = true\n": true,
		"[core]\n\tBare = TRUE\n":                   false,
		"[core]\n\thooksPath = x\n":                 false,
		"[CORE]\n  HooksPath=x\n":                   false,
		"[includeIf \"gitdir:~/w/\"]\n\tpath = x\n": false,
		"[core]\n\tworktree = /x\n":                 false,
		"[user]\n\tname = a\n":                      true,
	} {
		if got := linesLack([]byte(text), bareSet, layoutWords...); got != want {
			t.Errorf("config %q read as plain: %v, want %v", text, got, want)
		}
	}
}

func runGit(dir string, args ...string) (string, error) {
	out, err := run(ctx, dir, nil, nil, args...)
	return string(out), err
}
