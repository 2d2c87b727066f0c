package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A worker's worktree gets a copy of the ignored files .worktreeinclude
// names - the person's .env and local config, with their permissions -
// and nothing else: not a file the patterns name that git does not ignore,
// not a symbolic link (out of the tree or in it), not one behind a
// symlinked directory, not over a tracked file, and not one git would not
// ignore in the worktree. Without the file, no worktree gets anything.
func TestWorktreeIncludeCopiesIgnoredFiles(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	root := repo.Root
	outside := filepath.Join(filepath.Dir(root), "outside-"+filepath.Base(root))
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, outside, "secret", "not for the worktree\n")
	write(t, root, ".gitignore", "*.env\n.env\n*.local\nlinked\ncache/\nTRACKED.local\n")
	write(t, root, "TRACKED.local", "tracked, despite the pattern\n")
	gitT(t, root, "add", "-f", ".gitignore", "TRACKED.local")
	gitT(t, root, "commit", "-q", "-m", "ignore rules")

	// No .worktreeinclude: nothing is copied.
	write(t, root, ".env", "DATABASE_URL=postgres://localhost/dev\n")
	w, err := Create(ctx, repo, "US-0", "refs/heads/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(w.Path, ".env")) {
		t.Fatal(".env copied without a .worktreeinclude")
	}

	write(t, root, IncludeFile, ".env\n*.local\nnotes.txt\nlinked\ncache/x.local\nlink.env\n")
	if err := os.Chmod(filepath.Join(root, ".env"), 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, root, "config/app.local", "debug=true\n")
	write(t, root, "notes.txt", "not ignored: the person's to commit\n")
	if err := os.Symlink(outside, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link.env")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "TRACKED.local", "the person's local change to a tracked file\n")
	w, err = Create(ctx, repo, "US-1", "refs/heads/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		".env":             "DATABASE_URL=postgres://localhost/dev\n",
		"config/app.local": "debug=true\n",
		"TRACKED.local":    "tracked, despite the pattern\n",
	} {
		got, err := os.ReadFile(filepath.Join(w.Path, filepath.FromSlash(rel)))
		if err != nil || string(got) != want {
			t.Errorf("%s in the worktree: %q, %v", rel, got, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(w.Path, ".env")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf(".env's mode in the worktree: %v, %v", fi.Mode(), err)
	}
	for _, rel := range []string{"notes.txt", "linked", "link.env", IncludeFile} {
		if _, err := os.Lstat(filepath.Join(w.Path, rel)); err == nil {
			t.Errorf("%s was copied", rel)
		}
	}
	if out := gitT(t, w.Path, "status", "--porcelain"); out != "" {
		t.Errorf("the copies show in the worktree's git status:\n%s", out)
	}
	if notes := strings.Join(w.Notes, "\n"); len(w.Notes) != 1 || !strings.Contains(notes, "not copied from your checkout (.worktreeinclude): link.env, linked - a symbolic link in your checkout") {
		t.Errorf("notes: %q", w.Notes)
	}
}

// A worktree whose start has a .gitignore that does not ignore a file the
// checkout ignores: the copy would be committed by the worker, so it is
// removed again, and the worker is told.
func TestWorktreeIncludeNotIgnoredThere(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	root := repo.Root
	start := strings.TrimSpace(gitT(t, root, "rev-parse", "HEAD"))
	write(t, root, ".gitignore", ".env\n")
	gitT(t, root, "add", ".gitignore")
	gitT(t, root, "commit", "-q", "-m", "ignore .env")
	write(t, root, ".env", "SECRET=1\n")
	write(t, root, IncludeFile, ".env\n")
	w, err := CreateAt(ctx, repo, "US-1", "refs/heads/main", start, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(w.Path, ".env")) {
		t.Fatal(".env copied into a worktree that does not ignore it")
	}
	if notes := strings.Join(w.Notes, "\n"); !strings.Contains(notes, "(.worktreeinclude): .env - git does not ignore it in the worktree") {
		t.Errorf("notes: %q", notes)
	}
}

// Files left out for one reason are one note, the first few by name: a
// node_modules named in the file is not a page of notes.
func TestWorktreeIncludeNotesAreShort(t *testing.T) {
	var l leftOut
	for _, f := range []string{"a", "b", "c", "d", "e"} {
		l.add("a symbolic link in your checkout", "node_modules/.bin/"+f)
	}
	l.add("the worktree has a file there", "x.env")
	got := l.notes()
	want := []string{
		"not copied from your checkout (.worktreeinclude): node_modules/.bin/a, node_modules/.bin/b, node_modules/.bin/c and 2 more - a symbolic link in your checkout",
		"not copied from your checkout (.worktreeinclude): x.env - the worktree has a file there",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A .worktreeinclude naming more than a worktree should get (a build
// directory, node_modules) copies up to the bound and says what it left.
func TestWorktreeIncludeBounded(t *testing.T) {
	oldFiles, oldBytes := includeMaxFiles, includeMaxBytes
	includeMaxFiles, includeMaxBytes = 3, 1<<20
	defer func() { includeMaxFiles, includeMaxBytes = oldFiles, oldBytes }()
	repo := newRepo(t)
	ctx := context.Background()
	root := repo.Root
	write(t, root, ".gitignore", "build/\n")
	gitT(t, root, "add", ".gitignore")
	gitT(t, root, "commit", "-q", "-m", "ignore build")
	for _, f := range []string{"a", "b", "c", "d", "e"} {
		write(t, root, "build/"+f, f+"\n")
	}
	write(t, root, IncludeFile, "build/\n")
	w, err := Create(ctx, repo, "US-1", "refs/heads/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(w.Path, "build"))
	if len(entries) != 3 {
		t.Errorf("%d files copied, want the bound's 3", len(entries))
	}
	if notes := strings.Join(w.Notes, "\n"); !strings.Contains(notes, "build/d, build/e - over the 3 files or 1 MiB a worktree gets copied") {
		t.Errorf("notes: %q", notes)
	}
}
