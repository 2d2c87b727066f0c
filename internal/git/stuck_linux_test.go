package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stuckRepo is testRepo with a new directory whose .gitignore (which git
// status opens) is a FIFO, and StuckTick made short.
func stuckRepo(t *testing.T) (dir, fifo string) {
	t.Helper()
	dir = testRepo(t)
	dir, _ = filepath.EvalSymlinks(dir)
	write(t, dir, "new/n.txt", "n\n")
	fifo = filepath.Join(dir, "new", ".gitignore")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	shortTick(t, 50*time.Millisecond)
	return dir, fifo
}

// stuckStatus runs git status in dir, bounded by a minute (without the
// watch it would wait for ever), and returns what stopped it.
func stuckStatus(t *testing.T, dir string) (*Stuck, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = repo.Run(ctx, "status", "--porcelain")
	if ctx.Err() != nil {
		t.Fatalf("git status blocked on the FIFO until its context ended: %v", err)
	}
	var ge *Error
	if !errors.As(err, &ge) || ge.Stuck == nil {
		t.Fatalf("git status on a repository whose .gitignore is a FIFO: got %v, want it stopped as stuck", err)
	}
	return ge.Stuck, err
}

// A FIFO planted where git opens a file (mkfifo .gitignore) makes git
// status wait for a writer that never comes. The command is stopped and
// says which file and what to do; git took its index.lock away, so git
// works again once the FIFO is gone.
func TestGitStoppedWaitingToOpenAFIFO(t *testing.T) {
	dir, fifo := stuckRepo(t)
	s, err := stuckStatus(t, dir)
	if s.Path != fifo || s.Op != "opening" {
		t.Errorf("stuck on %s %q, want opening %q", s.Op, s.Path, fifo)
	}
	for _, want := range []string{"git status --porcelain", "opening " + fifo, "FIFO", "rm " + `"` + fifo + `"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); !os.IsNotExist(err) {
		t.Errorf("git left its index.lock behind: %v", err)
	}
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if out := gitT(t, dir, "status", "--porcelain"); out != "?? new/" {
		t.Errorf("git status after the FIFO is gone: %q", out)
	}
}

// A FIFO that something holds open for writing, and writes nothing to,
// lets git open it and then wait reading it: an include of git's config
// that names one (git checks what .gitignore is once it has it open, but
// reads a config file as it comes).
func TestGitStoppedWaitingToReadAFIFO(t *testing.T) {
	dir, _ := stuckRepo(t)
	fifo := filepath.Join(dir, ".git", "more")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "config", "include.path", "more")
	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that never writes
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo := &Repo{Root: dir}
	_, err = repo.Run(ctx, "config", "--list")
	var ge *Error
	if ctx.Err() != nil || !errors.As(err, &ge) || ge.Stuck == nil {
		t.Fatalf("git config --list with an include of a FIFO: got %v, want it stopped as stuck", err)
	}
	if s := ge.Stuck; s.Path != fifo || s.Op != "reading" {
		t.Errorf("stuck on %s %q, want reading %q", s.Op, s.Path, fifo)
	}
}

// The git that waits may be one git started: git status asks a
// submodule's own git about its changes.
func TestGitStoppedWhenAGitItStartedWaits(t *testing.T) {
	dir := testRepo(t)
	dir, _ = filepath.EvalSymlinks(dir)
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, sub, "init", "-q", "-b", "main")
	write(t, sub, "s.txt", "s\n")
	gitT(t, sub, "add", ".")
	gitT(t, sub, "commit", "-q", "-m", "s")
	gitT(t, dir, "add", "sub")
	gitT(t, dir, "commit", "-q", "-m", "sub")
	fifo := filepath.Join(sub, ".gitignore")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	shortTick(t, 50*time.Millisecond)
	s, _ := stuckStatus(t, dir)
	if s.Path != fifo || !strings.Contains(s.Cmd, "status") {
		t.Errorf("stuck: %+v, want the submodule's git status on %s", s, fifo)
	}
}

// What git reads through a pipe wiggum feeds it (stdin) is no FIFO:
// a command that takes a while reading its input is left alone.
func TestGitReadingItsInputIsNotStuck(t *testing.T) {
	dir := testRepo(t)
	shortTick(t, 20*time.Millisecond)
	repo, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond) // many ticks with git waiting on its stdin
		pw.WriteString("a.txt\n")
		pw.Close()
	}()
	cmd := command(ctx, repo.Root, nil, "hash-object", "--stdin")
	cmd.Stdin = pr
	out, err := runCmd(cmd, nil, cmd.Args[1:])
	pr.Close()
	if err != nil || len(strings.TrimSpace(string(out))) != 40 {
		t.Fatalf("git reading its stdin: %q, %v", out, err)
	}
}

// A hook git runs is the person's code, which may read a FIFO that
// another process writes to slowly (a progress pipe): it is no git
// opening a file by name, and is left to run.
func TestHookReadingASlowFIFOIsLeftAlone(t *testing.T) {
	dir := testRepo(t)
	shortTick(t, 20*time.Millisecond)
	fifo := filepath.Join(t.TempDir(), "progress")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, dir, ".git/hooks/pre-commit", "#!/bin/sh\ncat "+fifo+" >/dev/null\n")
	if err := os.Chmod(filepath.Join(dir, ".git/hooks/pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond) // many ticks with the hook waiting
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			time.Sleep(300 * time.Millisecond)
			w.WriteString("50%\n")
			w.Close()
		}
	}()
	repo, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "c.txt", "c\n")
	if _, err := repo.Run(ctx, "add", "c.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Run(ctx, "commit", "-q", "-m", "c"); err != nil {
		t.Fatalf("a commit whose hook reads a slow FIFO was stopped: %v", err)
	}
}

// shortTick makes StuckTick d for the test.
func shortTick(t *testing.T, d time.Duration) {
	old := StuckTick
	StuckTick = d
	t.Cleanup(func() { StuckTick = old })
}
