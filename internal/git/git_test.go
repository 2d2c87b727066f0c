package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var ctx = context.Background()

// testRepo makes a real repository with one commit (a.txt, b.txt) and an
// ignore rule for *.log.
func testRepo(t *testing.T) string {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, kv := range []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"} {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	// Refs in files whatever the git's default (reftable in git 3): the
	// tests here read git's files; git 2.39 ignores the setting.
	gitT(t, dir, "-c", "init.defaultRefFormat=files", "init", "-q", "-b", "main")
	write(t, dir, "a.txt", "a\n")
	write(t, dir, "b.txt", "b\n")
	write(t, dir, ".gitignore", "*.log\n")
	gitT(t, dir, "add", ".")
	gitT(t, dir, "commit", "-q", "-m", "init")
	return dir
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A ref lock another git holds for a moment is waited for, not a failure:
// git gives up on it after 100 ms by default, and a landing, a checkpoint
// or a rollback would fail for a user's git, a detached maintenance run
// or - in a reftable repository, one lock for all refs - a worker's
// commit. A lease on a ref that moved still fails at once.
func TestRefLockHeldForAMomentIsWaitedFor(t *testing.T) {
	dir := testRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	head := gitT(t, dir, "rev-parse", "HEAD")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "next")
	next := gitT(t, dir, "rev-parse", "HEAD")
	lock := filepath.Join(r.CommonDir, "refs", "heads", "main.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(600 * time.Millisecond)
		os.Remove(lock)
		close(released)
	}()
	if _, err := r.Run(ctx, "update-ref", "refs/heads/main", head, next); err != nil {
		t.Fatalf("update-ref while another git held the ref's lock for a moment: %v", err)
	}
	<-released
	if got := gitT(t, dir, "rev-parse", "refs/heads/main"); got != head {
		t.Fatalf("main is %s, want %s", got, head)
	}
	if _, err := r.Run(ctx, "update-ref", "refs/heads/main", next, next); err == nil {
		t.Fatal("a lease on a ref that moved succeeded")
	}
}

// The waits are added after any config the user passes the same way.
func TestCleanEnvKeepsTheUsersConfig(t *testing.T) {
	dir := testRepo(t)
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "wiggum.test")
	t.Setenv("GIT_CONFIG_VALUE_0", "kept")
	for _, key := range []string{"wiggum.test", "core.filesRefLockTimeout"} {
		cmd := exec.Command("git", "config", "--get", key)
		cmd.Dir, cmd.Env = dir, CleanEnv()
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			t.Fatalf("%s: %q %v", key, out, err)
		}
	}
}

// Every git wiggum starts names its starter (OwnerEnv), whatever the
// environment wiggum itself was given, and Owner reads it back from a
// running process.
func TestGitsNameTheirOwner(t *testing.T) {
	dir := testRepo(t)
	t.Setenv(OwnerEnv, "1") // inherited from a git that ran wiggum as a hook
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Line(ctx, "-c", "alias.owner=!echo $"+OwnerEnv, "owner")
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(os.Getpid()); out != want {
		t.Fatalf("a git wiggum started names %q as its owner, want %s", out, want)
	}
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), OwnerEnv+"=4242")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	owner := Owner(cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); owner != 4242 && time.Now().Before(deadline); owner = Owner(cmd.Process.Pid) {
		time.Sleep(time.Millisecond) // the environment shows once the exec is done
	}
	if owner != 4242 {
		t.Fatalf("Owner = %d, want 4242", owner)
	}
	if got := Owner(1 << 30); got != 0 {
		t.Fatalf("Owner of no process = %d", got)
	}
}

// The git wiggum runs is looked up once per PATH: a git that appears
// later in a directory ahead on PATH (the run's .ralph/wiggum/bin, which
// an agent could write to) is not picked up.
func TestBinaryPinnedForAPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	first := Binary()
	if !filepath.IsAbs(first) || filepath.Dir(first) == dir {
		t.Fatalf("Binary() = %q", first)
	}
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Binary(); got != first {
		t.Fatalf("after a git appeared ahead on PATH, Binary() = %q, want %q", got, first)
	}
}

// Replace refs do not steer the git wiggum runs: a graft planted in the
// repository (git replace --graft, by an agent, say) would otherwise make
// rev-parse, rev-list and merge-base answer for a history that is not the
// one a checkpoint's ancestry checks must see.
func TestReplaceRefsAreNotHonoured(t *testing.T) {
	dir := testRepo(t)
	first := gitT(t, dir, "rev-parse", "HEAD")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "second")
	second := gitT(t, dir, "rev-parse", "HEAD")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "third")
	gitT(t, dir, "replace", "--graft", "HEAD", first)
	if got := gitT(t, dir, "rev-parse", "HEAD^"); got != first {
		t.Fatalf("the planted graft does not show in the test's own git: HEAD^ = %s, want %s", got, first)
	}
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Line(ctx, "rev-parse", "HEAD^"); err != nil || got != second {
		t.Fatalf("wiggum's git: HEAD^ = %q (%v), want %s, the real parent", got, err, second)
	}
	if in, err := r.OK(ctx, "merge-base", "--is-ancestor", second, "HEAD"); err != nil || !in {
		t.Fatalf("wiggum's git: %s is an ancestor of HEAD = %v (%v), want true", second, in, err)
	}
}
