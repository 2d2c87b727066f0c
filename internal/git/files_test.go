package git

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileReadsMainAndLinkedWorktree(t *testing.T) {
	dir := testRepo(t)
	sub := filepath.Join(dir, "deep", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := FindRoot(sub); got != dir {
		t.Fatalf("FindRoot(%s) = %q, want %q", sub, got, dir)
	}
	gitDir, common := Dirs(dir)
	if gitDir != filepath.Join(dir, ".git") || common != gitDir {
		t.Fatalf("Dirs: %q %q", gitDir, common)
	}
	if b, known := HeadBranch(gitDir); b != "main" || !known {
		t.Fatalf("branch %q %v", b, known)
	}

	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, dir, "worktree", "add", "-q", "-b", "story/1", wt)
	if got := FindRoot(wt); got != wt {
		t.Fatalf("FindRoot in a linked worktree: %q", got)
	}
	wgit, wcommon := Dirs(wt)
	r, err := Open(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	// The file reads agree with git's own answer.
	if wgit != r.GitDir || wcommon != r.CommonDir {
		t.Fatalf("Dirs(%s) = %q %q, git says %q %q", wt, wgit, wcommon, r.GitDir, r.CommonDir)
	}
	if b, known := HeadBranch(wgit); b != "story/1" || !known {
		t.Fatalf("worktree branch %q %v", b, known)
	}
	gitT(t, wt, "switch", "-q", "--detach")
	if b, known := HeadBranch(wgit); b != "" || !known {
		t.Fatalf("detached HEAD read as branch %q %v", b, known)
	}
	// A repository keeping its refs in a reftable has a placeholder for
	// HEAD's file, naming the branch ".invalid": unknown, git's to say.
	if err := os.WriteFile(filepath.Join(wgit, "HEAD"), []byte("ref: refs/heads/.invalid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, known := HeadBranch(wgit); b != "" || known {
		t.Fatalf("the reftable placeholder read as branch %q %v", b, known)
	}
}

// ValidBranch is git check-ref-format --branch, on what a HEAD file holds.
func TestValidBranchAgreesWithGit(t *testing.T) {
	dir := testRepo(t)
	for _, name := range []string{"main", "feature/deep/name", "US-7", "a.b", "x@y", ".invalid", "a/.b", "a..b", "a.lock", "a/", "/a",
		"a//b", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[", "a\\b", "a.", "@", "a@{1}", "a\x01b", "a\x7fb"} {
		_, err := runGit(dir, "check-ref-format", "refs/heads/"+name)
		if got := ValidBranch(name); got != (err == nil) {
			t.Errorf("ValidBranch(%q) = %v, git check-ref-format says %v", name, got, err == nil)
		}
	}
}

func TestFileReadsOutsideAndBroken(t *testing.T) {
	if got := FindRoot(t.TempDir()); got != "" {
		// A temp dir under a repository would make this meaningless.
		t.Skipf("temp dir is inside a repository (%s)", got)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".git"), []byte("not a gitdir line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if g, c := Dirs(dir); g != "" || c != "" {
		t.Fatalf("a broken .git file read as %q %q", g, c)
	}
	if b, known := HeadBranch(filepath.Join(dir, "nowhere")); b != "" || !known {
		t.Fatalf("missing HEAD read as %q %v", b, known)
	}
}

func TestRemoteDefaultBranch(t *testing.T) {
	dir := testRepo(t)
	_, common := Dirs(dir)
	if d, known := RemoteDefaultBranch(common); d != "" || !known {
		t.Fatalf("no remote, default %q %v", d, known)
	}
	gitT(t, dir, "update-ref", "refs/remotes/origin/trunk", "HEAD")
	gitT(t, dir, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
	if d, known := RemoteDefaultBranch(common); d != "trunk" || !known {
		t.Fatalf("default %q %v, want trunk", d, known)
	}
	// Refs kept in a reftable are git's to read.
	if err := os.Mkdir(filepath.Join(common, "reftable"), 0o755); err != nil {
		t.Fatal(err)
	}
	if d, known := RemoteDefaultBranch(common); d != "" || known {
		t.Fatalf("a reftable repository's default branch read from files: %q %v", d, known)
	}
}

// TestRefValueReadsWhatGitReads: a loose ref, a packed one and a missing
// one read as git reads them.
func TestRefValueReadsWhatGitReads(t *testing.T) {
	dir := testRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	head := gitT(t, dir, "rev-parse", "HEAD")
	if v, ok := r.RefValue("refs/wiggum/x"); !ok || v != "" {
		t.Fatalf("missing ref: %q %v", v, ok)
	}
	gitT(t, dir, "update-ref", "refs/wiggum/x", head)
	if v, ok := r.RefValue("refs/wiggum/x"); !ok || v != head {
		t.Fatalf("loose ref: %q %v, want %s", v, ok, head)
	}
	gitT(t, dir, "pack-refs", "--all")
	if v, ok := r.RefValue("refs/wiggum/x"); !ok || v != head {
		t.Fatalf("packed ref: %q %v, want %s", v, ok, head)
	}
	if v, ok := r.RefValue("refs/wiggum/y"); !ok || v != "" {
		t.Fatalf("missing ref with packed refs: %q %v", v, ok)
	}
	if _, ok := r.RefValue("HEAD"); ok {
		t.Fatal("a symbolic ref read as known")
	}
	// A packed ref shadowed by a loose one: the loose file wins, as in git.
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "next")
	next := gitT(t, dir, "rev-parse", "HEAD")
	gitT(t, dir, "update-ref", "refs/wiggum/x", next)
	if v, ok := r.RefValue("refs/wiggum/x"); !ok || v != next || v != gitT(t, dir, "rev-parse", "refs/wiggum/x") {
		t.Fatalf("loose over packed: %q %v, want %s", v, ok, next)
	}
	// Refs kept another way (reftable) are git's to read.
	if err := os.Mkdir(filepath.Join(dir, ".git", "reftable"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.RefValue("refs/wiggum/x"); ok {
		t.Fatal("a reftable repository's ref read from files")
	}
}

// Branch answers from HEAD's file what git symbolic-ref answers, in every
// state HEAD can be in, and leaves to git what the file cannot settle.
func TestBranchReadsWhatGitReads(t *testing.T) {
	dir := testRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, dir, "worktree", "add", "-q", "-b", "side", wt)
	fresh := t.TempDir()
	gitT(t, fresh, "-c", "init.defaultRefFormat=files", "init", "-q", "-b", "unborn")
	git := func(d string) string {
		out, err := runGit(d, "symbolic-ref", "--quiet", "HEAD")
		if err != nil {
			return ""
		}
		return strings.TrimSpace(out)
	}
	check := func(what, d string, fromFile bool) {
		t.Helper()
		r, err := Open(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Branch(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if want := git(d); got != want {
			t.Errorf("%s: Branch %q, git says %q", what, got, want)
		}
		if _, ok := r.headFile(); ok != fromFile {
			t.Errorf("%s: answered from HEAD's file: %v, want %v", what, ok, fromFile)
		}
	}
	check("main tree on a branch", dir, true)
	check("linked worktree on its branch", wt, true)
	check("unborn branch", fresh, true)
	gitT(t, dir, "checkout", "-q", "--detach")
	check("detached HEAD", dir, true)
	gitT(t, dir, "symbolic-ref", "HEAD", "refs/remotes/origin/x")
	check("HEAD on a remote-tracking ref", dir, false)
	gitT(t, dir, "checkout", "-q", "main")
	gitT(t, dir, "checkout", "-q", "-b", "feature/deep/name")
	check("branch with slashes", dir, true)
	// A reftable repository's HEAD file is a placeholder: git answers.
	if err := os.Mkdir(filepath.Join(dir, ".git", "reftable"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, _ := Open(ctx, dir)
	if _, ok := r.headFile(); ok {
		t.Error("a reftable repository's HEAD read from its file")
	}
}

// InProgress finds a cherry-pick or revert half done where git keeps its
// marker: a file in the git dir, or - in a repository that keeps its refs
// in a reftable (git 2.45 and later) - a ref only git can read. Here git
// 2.39 stands in for the reftable: the repository gets the reftable
// directory and the marker is a ref git resolves, with no file.
func TestInProgressAsksGitInAReftableRepository(t *testing.T) {
	dir := testRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if op := r.InProgress(); op != "" {
		t.Fatalf("a clean repository has a %s in progress", op)
	}
	head := gitT(t, dir, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(r.GitDir, "REVERT_HEAD"), []byte(head+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if op := r.InProgress(); op != "revert" {
		t.Fatalf("REVERT_HEAD's file: %q", op)
	}
	if err := os.Remove(filepath.Join(r.GitDir, "REVERT_HEAD")); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "update-ref", "refs/heads/CHERRY_PICK_HEAD", head)
	if op := r.InProgress(); op != "" {
		t.Fatalf("refs in files: a branch named CHERRY_PICK_HEAD read as a %s", op)
	}
	if err := os.Mkdir(filepath.Join(r.CommonDir, "reftable"), 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	if op := r.InProgress(); op != "cherry-pick" {
		t.Fatalf("a reftable repository whose git resolves CHERRY_PICK_HEAD: %q", op)
	}
}

// A ref's reflog is read from its file as git writes it: oldest first,
// the creation with an all-zero old value, git's own message; a ref with
// no reflog has none.
func TestReflogReadsTheFile(t *testing.T) {
	dir := testRepo(t)
	gitT(t, dir, "branch", "topic")
	write(t, dir, "a.txt", "changed\n")
	gitT(t, dir, "stash", "-q")
	repo, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	topic, ok := repo.Reflog("refs/heads/topic")
	head := gitT(t, dir, "rev-parse", "HEAD")
	if !ok || len(topic) != 1 || strings.Trim(topic[0].Old, "0") != "" || topic[0].New != head ||
		!strings.HasPrefix(topic[0].Message, "branch: Created from") || topic[0].Time == 0 {
		t.Fatalf("topic's reflog = %+v, %v", topic, ok)
	}
	stash, ok := repo.Reflog("refs/stash")
	if !ok || len(stash) != 1 || stash[0].New != gitT(t, dir, "rev-parse", "stash@{0}") || !strings.HasPrefix(stash[0].Message, "WIP on main: ") {
		t.Fatalf("the stash's reflog = %+v, %v", stash, ok)
	}
	if none, ok := repo.Reflog("refs/tags/none"); !ok || len(none) != 0 {
		t.Fatalf("no reflog = %+v, %v", none, ok)
	}
}

// Refs reads the branches and tags git lists - loose, packed, a loose
// one over its packed line, a nested name, an annotated tag as its tag
// object - and leaves a reftable repository to git.
func TestRefsReadsWhatGitLists(t *testing.T) {
	dir := testRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "tag", "packed")
	gitT(t, dir, "branch", "old")
	gitT(t, dir, "pack-refs", "--all")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "next")
	gitT(t, dir, "tag", "-a", "-m", "annotated", "rel/v1")
	gitT(t, dir, "branch", "-f", "old")
	gitT(t, dir, "update-ref", "refs/wiggum/other", "HEAD")
	want := map[string]string{}
	for _, line := range strings.Split(gitT(t, dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/tags/", "refs/heads/"), "\n") {
		name, id, _ := strings.Cut(line, " ")
		want[name] = id
	}
	got, ok := r.Refs("refs/tags/", "refs/heads/")
	if !ok || len(got) != len(want) || len(got) != 4 {
		t.Fatalf("Refs = %v %v, git lists %v", got, ok, want)
	}
	for name, id := range want {
		if got[name] != id {
			t.Errorf("%s: %s, git says %s", name, got[name], id)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".git", "reftable"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Refs("refs/tags/"); ok {
		t.Fatal("a reftable repository's refs read from files")
	}
}
