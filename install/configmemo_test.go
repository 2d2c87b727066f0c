package install

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// configOf answers from its last read while no file of the configuration
// changed - no git process - and asks git again as soon as one did: an
// edited config, an include target that appeared, a config.worktree made
// (the ways an agent plants a command git would run).
func TestConfigOfRecallsUntilAFileChanges(t *testing.T) {
	racy, local := memoRacy, memoRacyLocal
	memoRacy, memoRacyLocal = -time.Hour, -time.Hour // every file counts as old enough: the races are not this test's
	t.Cleanup(func() { memoRacy, memoRacyLocal = racy, local })
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(t.TempDir(), "gitconfig"))
	dir := gitRepo(t)
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forget(repo) })
	path := os.Getenv("PATH")
	// withoutGit reads with no git to run: only a recalled read answers.
	withoutGit := func() ([]configEntry, error) {
		t.Setenv("PATH", "")
		defer os.Setenv("PATH", path)
		return configOf(ctx, repo)
	}
	has := func(es []configEntry, key, value string) bool {
		return slices.ContainsFunc(es, func(e configEntry) bool { return e.key == key && e.value == value })
	}
	appendTo := func(file, text string) {
		t.Helper()
		f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}

	first, err := configOf(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	again, err := withoutGit()
	if err != nil || !slices.Equal(first, again) {
		t.Fatalf("an unchanged configuration read again asked git (%v) or changed: %v, want %v", err, again, first)
	}

	for _, step := range []struct {
		name, file, text, key, value string
	}{
		{"the repository's config edited", filepath.Join(dir, ".git", "config"), "[core]\n\tfsmonitor = planted-1\n", "core.fsmonitor", "planted-1"},
		{"an include named before its file exists", filepath.Join(dir, ".git", "config"), "[include]\n\tpath = later.inc\n", "include.path", "later.inc"},
		{"the include's file made", filepath.Join(dir, ".git", "later.inc"), "[diff]\n\texternal = planted-2\n", "diff.external", "planted-2"},
		{"the user's config made", os.Getenv("GIT_CONFIG_GLOBAL"), "[core]\n\tpager = planted-3\n", "core.pager", "planted-3"},
	} {
		appendTo(step.file, step.text)
		if _, err := withoutGit(); err == nil {
			t.Fatalf("%s: answered from the last read, without git", step.name)
		}
		es, err := configOf(ctx, repo)
		if err != nil {
			t.Fatal(err)
		}
		if !has(es, step.key, step.value) {
			t.Fatalf("%s: %s = %s not read: %v", step.name, step.key, step.value, es)
		}
		if _, err := withoutGit(); err != nil {
			t.Fatalf("%s: the read after it is not recalled: %v", step.name, err)
		}
	}

	// A file changed too close to its read is not trusted to show it.
	memoRacy, memoRacyLocal = time.Hour, time.Hour
	appendTo(filepath.Join(dir, ".git", "config"), "[core]\n\tfsmonitor = planted-4\n")
	if _, err := configOf(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if _, err := withoutGit(); err == nil {
		t.Fatal("a read of a file changed just before it was kept")
	}
}

// A local file system's files are trusted a tick after they change, any
// other's (here /proc's, standing for NFS, FAT, FUSE) only seconds after.
func TestRacyMarginFollowsTheFileSystem(t *testing.T) {
	if got := racyMargin(t.TempDir()); got != memoRacyLocal {
		var fs syscall.Statfs_t
		_ = syscall.Statfs(t.TempDir(), &fs)
		t.Errorf("racyMargin of a temporary directory (file system %#x) = %v, want %v", fs.Type, got, memoRacyLocal)
	}
	for _, p := range []string{"/proc/self/status", filepath.Join(t.TempDir(), "missing")} {
		if got := racyMargin(p); got != memoRacy {
			t.Errorf("racyMargin(%s) = %v, want %v", p, got, memoRacy)
		}
	}
}
