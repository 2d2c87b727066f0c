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
// the agent lock, as the CLI runs them) against the raw git commands the
// same job needs, on the same repository in the same run, and reports the
// ratio. Each round: a dirty tree is recorded, an agent iteration commits
// and adds and edits files, and the tree returns to the checkpoint. Only
// record and return are timed.
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
		cp := rawCheckpoint(b, dir)
		raw += time.Since(t0)
		benchIteration(b, dir, rounds)
		t0 = time.Now()
		rawRollback(b, dir, cp, rounds)
		raw += time.Since(t0)
		benchCheckRestored(b, dir, base)
	}
	b.ReportMetric(float64(wig.Nanoseconds())/float64(rounds), "wiggum-ns/op")
	b.ReportMetric(float64(raw.Nanoseconds())/float64(rounds), "rawgit-ns/op")
	b.ReportMetric(float64(wig)/float64(raw), "ratio")
}

type rawPoint struct{ head, branch, snap, untracked string }

// rawCheckpoint is what a careful shell loop runs to record the same point.
func rawCheckpoint(b *testing.B, dir string) rawPoint {
	cp := rawPoint{head: benchGit(b, dir, nil, "rev-parse", "HEAD"), branch: benchGit(b, dir, nil, "symbolic-ref", "-q", "HEAD")}
	if benchGit(b, dir, nil, "status", "--porcelain", "-z", "--untracked-files=all") != "" {
		cp.snap = rawSnapshot(b, dir, cp.head)
		benchGit(b, dir, nil, "update-ref", "refs/bench/checkpoint", cp.snap)
	}
	cp.untracked = benchGit(b, dir, nil, "ls-files", "-z", "--others", "--exclude-standard")
	if err := os.WriteFile(filepath.Join(dir, ".git", "bench-checkpoint"), []byte(cp.head+" "+cp.branch+" "+cp.snap+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return cp
}

// rawRollback is what a careful shell loop runs to return to cp, saving
// what it discards first.
func rawRollback(b *testing.B, dir string, cp rawPoint, round int) {
	head := benchGit(b, dir, nil, "rev-parse", "HEAD")
	benchGit(b, dir, nil, "merge-base", "--is-ancestor", cp.head, head)
	benchGit(b, dir, nil, "rev-list", cp.head+".."+head)
	backup := rawSnapshot(b, dir, head)
	benchGit(b, dir, nil, "update-ref", fmt.Sprintf("refs/bench/backup/%d", round), backup, "")
	benchGit(b, dir, nil, "update-ref", cp.branch, cp.head, head)
	benchGit(b, dir, nil, "reset", "-q", "--hard")
	if cp.snap != "" {
		env := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, ".git", "bench-index")}
		benchGit(b, dir, env, "read-tree", cp.snap+"^{tree}")
		benchGit(b, dir, env, "checkout-index", "-a", "-f")
		os.Remove(filepath.Join(dir, ".git", "bench-index"))
	}
	keep := map[string]bool{}
	for _, f := range strings.Split(cp.untracked, "\x00") {
		keep[f] = true
	}
	for _, f := range strings.Split(benchGit(b, dir, nil, "ls-files", "-z", "--others", "--exclude-standard"), "\x00") {
		if f != "" && !keep[f] {
			os.Remove(filepath.Join(dir, f))
		}
	}
	os.Remove(filepath.Join(dir, "src", "new"))
}

func rawSnapshot(b *testing.B, dir, parent string) string {
	idx := filepath.Join(dir, ".git", "bench-index")
	os.Remove(idx)
	defer os.Remove(idx)
	env := []string{"GIT_INDEX_FILE=" + idx}
	benchGit(b, dir, env, "read-tree", parent)
	benchGit(b, dir, env, "add", "-A", "--", ".")
	tree := benchGit(b, dir, env, "write-tree")
	return benchGit(b, dir, nil, "commit-tree", tree, "-p", parent, "-m", "snapshot")
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
