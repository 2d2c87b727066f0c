package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// wiggumBin is the binary under test, built once by TestMain.
var wiggumBin string

// baseEnv is the environment of every process the tests start: the built
// wiggum first on PATH (scripts under the lock call it by name), a private
// HOME and a fixed git identity.
var baseEnv []string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "wiggum-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "bin")
	wiggumBin = filepath.Join(bin, "wiggum")
	args := []string{"build", "-o", wiggumBin}
	if raceBuild {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/wiggum-dev/wiggum/cmd/wiggum")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build wiggum:", err)
		return 1
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// safe.bareRepository: git 3 refuses git run inside a bare repository
	// without --git-dir, and the tests look into their servers that way.
	// core.filesRefLockTimeout: after a test SIGKILLs wiggum, a git it had
	// started may still be dying (its SIGTERM comes with wiggum's death)
	// and hold a ref's lock for a moment; the tests' own git commands wait
	// for it as wiggum's do, instead of failing at once (CI33 failed
	// TestKilledWhileMakingAhead on refs/heads/wiggum/US-1.lock so).
	gitconfig := "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n[safe]\n\tbareRepository = all\n" +
		"[core]\n\tfilesRefLockTimeout = 10000\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GIT_") || strings.HasPrefix(name, "WIGGUM_") || name == "HOME" || name == "PATH" || name == "GORACE" {
			continue
		}
		baseEnv = append(baseEnv, kv)
	}
	// git by its full path, for an agent that goes round wiggum's git
	// shim.
	realGit, err := exec.LookPath("git")
	if err != nil {
		fmt.Fprintln(os.Stderr, "no git on PATH:", err)
		return 1
	}
	baseEnv = append(baseEnv,
		"REAL_GIT="+realGit,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		// A race-built wiggum would sleep a second at every exit; a race it
		// finds still fails the test through exit code 66.
		"GORACE=atexit_sleep_ms=0",
	)
	return m.Run()
}

// needTool is the program name on PATH; without it the test fails under
// CI (.ci/run installs it) and is skipped elsewhere.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed; .ci/run installs %s", name, pkg)
		}
		t.Skipf("%s is not installed (apt-get install %s)", name, pkg)
	}
	return p
}

// patience bounds every wait for another process; it is generous because
// the tests must pass on a loaded two-core machine, and no test asserts how
// long anything took.
const patience = 60 * time.Second

// newRepo makes a git repository with one commit.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustRun(t, dir, "git", "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "git", "add", "a.txt")
	mustRun(t, dir, "git", "commit", "-q", "-m", "init")
	return dir
}

// mustRun runs a command to completion and fails the test unless it exits 0.
func mustRun(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	r := run(t, dir, nil, name, args...)
	if r.code != 0 {
		t.Fatalf("%s %s: exit %d\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs a command to completion with extra environment variables.
func run(t *testing.T, dir string, env []string, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, baseEnv...), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A leaked grandchild holding the pipes must fail the test, not hang it.
	cmd.WaitDelay = patience
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s: %v", name, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// wiggum runs the binary under test in dir.
func wiggum(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	return run(t, dir, env, wiggumBin, args...)
}

// bg is a process the test started and waits for later. Its output goes to
// files, so a stray descendant keeping them open cannot block the test.
type bg struct {
	cmd        *exec.Cmd
	out, errf  string
	done       chan struct{}
	exitStatus syscall.WaitStatus
}

func start(t *testing.T, dir string, env []string, stdin string, name string, args ...string) *bg {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, baseEnv...), env...)
	logs := t.TempDir()
	b := &bg{cmd: cmd, out: filepath.Join(logs, "stdout"), errf: filepath.Join(logs, "stderr"), done: make(chan struct{})}
	stdout, err := os.Create(b.out)
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(b.errf)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = cmd.Wait()
		b.exitStatus = cmd.ProcessState.Sys().(syscall.WaitStatus)
		close(b.done)
	}()
	t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			_ = cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

func startWiggum(t *testing.T, dir string, env []string, args ...string) *bg {
	t.Helper()
	return start(t, dir, env, "", wiggumBin, args...)
}

func (b *bg) pid() int { return b.cmd.Process.Pid }

// wait waits for the process to exit and returns its exit code (128+signal
// when a signal killed it).
func (b *bg) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(patience):
		t.Fatalf("pid %d (%s) did not exit within %s\nstderr: %s", b.pid(), strings.Join(b.cmd.Args, " "), patience, b.stderr())
	}
	if b.exitStatus.Signaled() {
		return 128 + int(b.exitStatus.Signal())
	}
	return b.exitStatus.ExitStatus()
}

func (b *bg) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

func (b *bg) stdout() string { data, _ := os.ReadFile(b.out); return string(data) }
func (b *bg) stderr() string { data, _ := os.ReadFile(b.errf); return string(data) }

// eventually polls cond until it holds, failing the test after patience.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", patience, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFile waits until path exists and returns its content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	eventually(t, path+" to appear", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// readPID reads a pid a script wrote with `echo $$ > file`.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, "a pid in "+path, func() bool {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0
	})
	return pid
}

// alive reports whether pid is a running process. A zombie counts as dead:
// it runs no code, and the init of a container may never reap it.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may hold spaces.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}

// withMarker lists the live processes whose command line contains marker.
func withMarker(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) || !alive(pid) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// uniqueSleep is a sleep duration argument that no other process on the
// machine has in its command line, so /proc shows exactly our sleepers.
func uniqueSleep() string {
	sleeps.Add(1)
	return fmt.Sprintf("300.%d%d%d", os.Getpid(), time.Now().UnixNano()%1000, sleeps.Load())
}

var sleeps atomic.Int64

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
