package worktree

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// helperEnv selects what a re-executed test binary does instead of testing:
// "hold REPO STORY" creates a worktree and holds its lease until killed;
// "batch REPO STORY STORY" creates two worktrees in one CreateMany;
// "mutex REPO" holds the repository mutex until killed;
// "prune REPO" prunes once and prints what it did.
const helperEnv = "WIGGUM_WORKTREE_HELPER"

func TestMain(m *testing.M) {
	if args := os.Getenv(helperEnv); args != "" {
		os.Exit(helper(strings.Split(args, "\x1f")))
	}
	os.Exit(m.Run())
}

func helper(args []string) int {
	ctx := context.Background()
	repo, err := git.Open(ctx, args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch args[0] {
	case "hold":
		w, err := Create(ctx, repo, args[2], "refs/heads/main", nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ready", w.Path)
		for {
			time.Sleep(time.Hour)
		}
	case "batch":
		// Two worktrees in one CreateMany; a killpoint in the environment
		// kills it part way.
		_, errs := CreateMany(ctx, repo, []Request{{Story: args[2], Target: "refs/heads/main"}, {Story: args[3], Target: "refs/heads/main"}}, nil, nil)
		for _, err := range errs {
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return 0
	case "mutex":
		if _, err := LockRepo(ctx, repo); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ready")
		for {
			time.Sleep(time.Hour)
		}
	case "prune":
		res, err := Prune(ctx, repo, false)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, r := range res {
			fmt.Println(r.Name, r.Action)
		}
		return 0
	}
	return 2
}

// startHelper runs the test binary in helper mode.
func startHelper(t *testing.T, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	return startHelperEnv(t, nil, args...)
}

// startHelperEnv is startHelper with env added to the helper's environment.
func startHelperEnv(t *testing.T, env []string, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// A process group of its own, so a test can wait for the git
	// processes a killed helper leaves running (waitOrphans).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(append(gitEnv(), env...), helperEnv+"="+strings.Join(args, "\x1f"))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewReader(out)
}

// waitOrphans waits until no process is left in the process group of the
// helper cmd started (a killed helper's git children run on to their end).
func waitOrphans(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(-cmd.Process.Pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the killed helper's processes are still running after 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runPruner runs `wiggum worktree prune`'s helper process in root to its
// end: its whole output, and its exit.
func runPruner(t *testing.T, root string) (string, error) {
	t.Helper()
	cmd, out := startHelper(t, "prune", root)
	var b strings.Builder
	for {
		line, err := out.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			break
		}
	}
	return b.String(), cmd.Wait()
}

func gitEnv() []string {
	return append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=T",
		"GIT_COMMITTER_EMAIL=t@e", "GIT_CONFIG_NOSYSTEM=1", "HOME="+os.TempDir())
}

func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// newRepo makes a repository on branch main with one commit.
func newRepo(t testing.TB) *git.Repo {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	gitT(t, dir, "config", "user.name", "T")
	gitT(t, dir, "config", "user.email", "t@e")
	write(t, dir, "README", "hello\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "init")
	repo, err := git.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

func write(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func sleep() { time.Sleep(10 * time.Millisecond) }
