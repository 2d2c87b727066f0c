package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
)

// BenchmarkCheckpointRollback measures checkpoint + rollback (each under
// the agent lock, as the CLI runs them) against git's own floor for the
// same job, on the same repository in the same run, and reports the
// ratio. Each round: a dirty tree is recorded, an agent iteration commits
// and adds and edits files, and the tree returns to the checkpoint. Only
// record and return are timed. The floor is not a copy of wiggum's method:
// `git stash create` plus hashing the untracked files to record, and
// `git reset --hard` plus `git restore --worktree` of the checkpoint's own
// uncommitted paths to return (the agent's new files are removed after the
// timing). wiggum also takes the lock, checks the rollback is safe, saves
// a backup of everything it discards and removes the new files.
func BenchmarkCheckpointRollback(b *testing.B) {
	ctx := context.Background()
	dir := benchRepo(b)
	st, err := checkpoint.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	base := benchGit(b, dir, nil, "rev-parse", "HEAD")
	var wig, raw time.Duration
	rounds := 0
	for b.Loop() {
		rounds++
		benchDirty(b, dir, base)
		t0 := time.Now()
		err := st.WithLock(ctx, []string{"bench"}, func(session string) error {
			_, err := st.Save(ctx, session, checkpoint.SaveOptions{})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		wig += time.Since(t0)
		benchIteration(b, dir, rounds)
		t0 = time.Now()
		err = st.WithLock(ctx, []string{"bench"}, func(session string) error {
			_, err := st.Rollback(ctx, checkpoint.RollbackOptions{Session: session, Reason: "bench"})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		wig += time.Since(t0)
		benchCheckRestored(b, dir, base)

		benchDirty(b, dir, base)
		t0 = time.Now()
		snap := floorCheckpoint(b, dir)
		raw += time.Since(t0)
		benchIteration(b, dir, rounds)
		t0 = time.Now()
		floorRollback(b, dir, base, snap)
		raw += time.Since(t0)
		os.RemoveAll(filepath.Join(dir, "src", "new"))
		os.Remove(filepath.Join(dir, "src", "b.txt"))
		benchCheckRestored(b, dir, base)
	}
	b.ReportMetric(float64(wig.Nanoseconds())/float64(rounds), "wiggum-ns/op")
	b.ReportMetric(float64(raw.Nanoseconds())/float64(rounds), "floor-ns/op")
	b.ReportMetric(float64(wig)/float64(raw), "ratio")
}

// floorCheckpoint is git's floor for recording the point: the tracked
// changes through the index, and what untracked files need.
func floorCheckpoint(b *testing.B, dir string) string {
	snap := benchGit(b, dir, nil, "stash", "create")
	untracked := benchGit(b, dir, nil, "ls-files", "-z", "-o", "--exclude-standard")
	cmd := exec.Command("git", "hash-object", "-w", "--stdin-paths")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(strings.ReplaceAll(untracked, "\x00", "\n"))
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("hash-object: %v\n%s", err, out)
	}
	return snap
}

// floorRollback is git's floor for returning: reset --hard to the
// checkpoint, then the checkpoint's own uncommitted files back (untracked
// ones survive a reset).
func floorRollback(b *testing.B, dir, base, snap string) {
	benchGit(b, dir, nil, "reset", "-q", "--hard", base)
	paths := strings.Fields(benchGit(b, dir, nil, "diff", "--name-only", base, snap))
	benchGit(b, dir, nil, append([]string{"restore", "--source=" + snap, "--worktree", "--"}, paths...)...)
}

// benchRepo is a repository of 200 files of 50 lines.
func benchRepo(b *testing.B) string {
	dir := b.TempDir()
	benchGit(b, dir, nil, "init", "-q")
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		b.Fatal(err)
	}
	var body strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&body, "line %d\n", i)
	}
	for i := 1; i <= 200; i++ {
		benchWrite(b, filepath.Join(dir, "src", fmt.Sprintf("file%d.txt", i)), body.String())
	}
	benchGit(b, dir, nil, "add", "-A")
	benchGit(b, dir, nil, "commit", "-q", "-m", "init")
	return dir
}

// benchDirty resets to base and leaves a modified and an untracked file.
func benchDirty(b *testing.B, dir, base string) {
	benchGit(b, dir, nil, "reset", "-q", "--hard", base)
	benchGit(b, dir, nil, "clean", "-qfd")
	benchAppend(b, filepath.Join(dir, "src", "file1.txt"), "pre-existing edit\n")
	benchWrite(b, filepath.Join(dir, "notes.txt"), "notes\n")
}

// benchIteration is the agent's work: a commit, new files, an edit.
func benchIteration(b *testing.B, dir string, round int) {
	benchAppend(b, filepath.Join(dir, "src", "file2.txt"), fmt.Sprintf("agent change %d\n", round))
	benchGit(b, dir, nil, "add", "src/file2.txt")
	benchGit(b, dir, nil, "commit", "-q", "-m", "agent")
	if err := os.MkdirAll(filepath.Join(dir, "src", "new"), 0o755); err != nil {
		b.Fatal(err)
	}
	benchWrite(b, filepath.Join(dir, "src", "new", "a.txt"), "new\n")
	benchWrite(b, filepath.Join(dir, "src", "b.txt"), "new\n")
	benchAppend(b, filepath.Join(dir, "src", "file3.txt"), "edit\n")
}

func benchCheckRestored(b *testing.B, dir, base string) {
	if head := benchGit(b, dir, nil, "rev-parse", "HEAD"); head != base {
		b.Fatalf("HEAD %s, want %s", head, base)
	}
	if got := benchGit(b, dir, nil, "status", "--porcelain", "--untracked-files=all"); got != "M src/file1.txt\n?? notes.txt" {
		b.Fatalf("tree not restored to the checkpoint:\n%s", got)
	}
}

func benchGit(b *testing.B, dir string, env []string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

func benchWrite(b *testing.B, path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}

func benchAppend(b *testing.B, path, content string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		b.Fatal(err)
	}
}
