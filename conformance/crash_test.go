package conformance

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/conformance/fakemodel"
	"github.com/wiggum-dev/wiggum/internal/sandboxdirs"
)

// A run killed in the middle of an attempt - wiggum alone SIGKILLed (the
// OOM killer, a `kill -9`), or every process of the run at once (a power
// loss, a reboot) - with the real client still running a tool command that
// left its process group and its session (setsid) and writes into the
// tree: once wiggum is gone, nothing of the attempt may go on running or
// writing, the lock is free, and the next `wiggum run` saves the unfinished
// attempt under refs/wiggum/backup/, puts the tree back and does the story.
func TestCrashMidAttempt(t *testing.T) {
	for _, how := range []string{"wiggum", "everything", "parallel"} {
		t.Run(how, func(t *testing.T) {
			forEachClient(t, func(t *testing.T, c client) {
				var extra []string
				if how == "parallel" {
					extra = []string{"--workers", "2"}
				}
				w, marker := tickingWorld(t, c)
				run := w.start(w.runArgs(extra...)...)
				w.waitTicking()
				w.mountsInside(marker)
				switch how {
				case "wiggum", "parallel":
					_ = run.Process.Kill()
				case "everything":
					killTree(t, run.Process.Pid, marker)
				}
				_, _ = run.Process.Wait()
				w.waitFor("every process of the attempt to end", func() bool { return len(withMarker(marker)) == 0 })
				w.tickerStopped()
				w.resumes(extra...)
			})
		})
	}
}

// Ctrl-C in the terminal (SIGINT to the foreground group: wiggum, not the
// agent, whose group is its own) and SIGTERM (systemd stopping a unit,
// kill) stop the run with 130 and 143. By the time wiggum exits, nothing
// of the attempt runs any more - not even the tool command that left its
// group and session - and the attempt is rolled back and saved; the next
// run resumes the plan and does the story.
func TestInterruptMidAttempt(t *testing.T) {
	for _, how := range []string{"ctrl-c", "sigterm"} {
		t.Run(how, func(t *testing.T) {
			forEachClient(t, func(t *testing.T, c client) {
				w, marker := tickingWorld(t, c)
				var code int
				switch how {
				case "ctrl-c":
					tm := newTerminal(t, w, w.runArgs())
					w.waitTicking()
					w.mountsInside(marker)
					tm.keys("C-c")
					code = tm.exitCode()
					if s := tm.screen(); !strings.Contains(s, "interrupted; rolled back the unfinished iteration, its work is saved in refs/wiggum/backup/") ||
						!strings.Contains(s, "resume with: wiggum run --plan plan.md") {
						t.Fatalf("the terminal does not say what became of the attempt and how to resume:\n%s", s)
					}
				case "sigterm":
					run := w.start(w.runArgs()...)
					w.waitTicking()
					w.mountsInside(marker)
					_ = run.Process.Signal(syscall.SIGTERM)
					if err := run.Wait(); err != nil {
						code = run.ProcessState.ExitCode()
					}
				}
				want := map[string]int{"ctrl-c": 130, "sigterm": 143}[how]
				if code != want {
					t.Fatalf("wiggum exited %d, want %d", code, want)
				}
				if left := withMarker(marker); len(left) != 0 {
					t.Fatalf("wiggum exited with processes of the attempt still running: %v", left)
				}
				w.tickerStopped()
				for _, f := range []string{"partial.txt", "ticker.log"} {
					if _, err := os.Stat(filepath.Join(w.dir, f)); err == nil {
						t.Fatalf("%s of the interrupted attempt is still in the tree", f)
					}
				}
				if len(w.backups()) == 0 {
					t.Fatal("the interrupted attempt was not saved under refs/wiggum/backup/")
				}
				w.resumes()
			})
		})
	}
}

// tickingWorld is a world whose model asks for one tool command that
// writes partial.txt, starts a ticker that leaves the tool's process group
// and session - as a dev server or a watcher started by an agent does -
// appending to ticker.log ten times a second, and then sleeps. Every
// process of it has the returned marker in its command line.
//
// The tool command is killed, and codex's sandbox with it: codex is told
// to leave /tmp out of the roots the command may write (mountsInside says
// why), so that its temporary files go to TMPDIR, the world's own.
func tickingWorld(t *testing.T, c client) (*world, string) {
	marker := fmt.Sprintf("wiggum-crash-%d", time.Now().UnixNano())
	tool := fmt.Sprintf(`echo partial > partial.txt && (setsid sh -c 'while :; do echo %s >> ticker.log; sleep 0.1; done' </dev/null >/dev/null 2>&1 &) && sleep 300`, marker)
	w := newWorld(t, c, fakemodel.Turn{Shell: tool}, fakemodel.Turn{Text: "done"})
	if c.name == "codex" {
		var config string
		for _, kv := range w.env {
			if home, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
				config = filepath.Join(home, "config.toml")
			}
		}
		data, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, config, string(data)+"\n[sandbox_workspace_write]\nexclude_slash_tmp = true\n")
	}
	return w, marker
}

func (w *world) runArgs(extra ...string) []string {
	return append([]string{"run", "--agent", w.c.name, "--plan", "plan.md", "--retries", "0", "--timeout", "10m", "--grace", "2s"}, extra...)
}

// waitTicking waits until the ticker has written three lines, in the tree
// or in the worker's worktree.
func (w *world) waitTicking() {
	w.t.Helper()
	w.waitFor("the tool command to start ticking", func() bool {
		w.ticker = w.find("ticker.log")
		return lines(w.ticker) >= 3
	})
}

// mountsInside fails the test if the tool command's processes see a
// mount named .git, .agents, .codex or .aws that this process does not
// see, outside the world's directory. Codex's Linux sandbox mounts an
// empty read-only directory over each of these missing in a root it lets
// the command write, making it on the machine first, and removes it when
// the command ends under it; killed with the command (a power loss), it
// leaves it there, and no later run takes it back. An empty /tmp/.git
// fails go build (error obtaining VCS status) in every checkout under /tmp.
func (w *world) mountsInside(marker string) {
	w.t.Helper()
	own := sandboxdirs.MountPoints(os.Getpid())
	base, err := filepath.EvalSymlinks(filepath.Dir(w.dir))
	if err != nil {
		w.t.Fatal(err)
	}
	var outside []string
	for _, pid := range withMarker(marker) {
		for _, p := range slices.Sorted(maps.Keys(sandboxdirs.MountPoints(pid))) {
			switch filepath.Base(p) {
			case ".git", ".agents", ".codex", ".aws":
			default:
				continue
			}
			if !own[p] && p != base && !strings.HasPrefix(p, base+"/") && !slices.Contains(outside, p) {
				outside = append(outside, p)
			}
		}
	}
	if len(outside) != 0 {
		w.t.Fatalf("the tool command's sandbox mounts over %s, outside the test's directory %s: killed with the command, it leaves them on the machine", strings.Join(outside, ", "), base)
	}
}

// tickerStopped fails the test if ticker.log still grows.
func (w *world) tickerStopped() {
	w.t.Helper()
	n := lines(w.ticker)
	time.Sleep(500 * time.Millisecond)
	if m := lines(w.ticker); m != n {
		w.t.Fatalf("ticker.log still grows after the attempt's processes are gone (%d -> %d lines)", n, m)
	}
}

// resumes checks that status calls the run interrupted and that the next
// run says it resumes it, saves what the stopped attempt left, and does
// the story with a fresh script.
func (w *world) resumes(extra ...string) {
	t := w.t
	t.Helper()
	if st := w.wiggum(0, "status"); !strings.Contains(st, "interrupted") {
		t.Fatalf("status does not say the run was interrupted:\n%s", st)
	}
	w.srv.Script(fakemodel.Turn{Shell: "echo two > two.txt"}, fakemodel.Turn{Text: "done"})
	out := w.run(0, extra...)
	if !strings.Contains(out, "resuming the interrupted run") {
		t.Fatalf("the next run does not say it resumes the interrupted one:\n%s", out)
	}
	for _, f := range []string{"partial.txt", "ticker.log"} {
		if _, err := os.Stat(filepath.Join(w.dir, f)); err == nil {
			t.Fatalf("%s of the stopped attempt is still in the tree:\n%s", f, out)
		}
	}
	b := w.backups()
	if len(b) == 0 {
		t.Fatalf("the stopped attempt was not saved under refs/wiggum/backup/:\n%s", out)
	}
	if got := w.git("show", b[0]+":partial.txt"); got != "partial\n" {
		t.Fatalf("the backup %s does not hold the stopped attempt: %q", b[0], got)
	}
	if got := w.git("show", "HEAD:two.txt"); got != "two\n" {
		t.Fatalf("the story was not done after the stop: %q\n%s", got, out)
	}
	if st := w.git("status", "--porcelain"); st != "" {
		t.Fatalf("tree left dirty:\n%s", st)
	}
	if wt := strings.Count(w.git("worktree", "list", "--porcelain"), "worktree "); wt != 1 {
		t.Fatalf("%d worktrees left, want the main tree alone:\n%s", wt, w.git("worktree", "list"))
	}
}

// terminal is wiggum running in a real terminal: a tmux server of its own.
type terminal struct {
	t      *testing.T
	env    []string
	socket string
}

// newTerminal starts wiggum with args in a tmux pane in the tree; the pane
// prints wiggum's exit code when it ends.
func newTerminal(t *testing.T, w *world, args []string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed; .ci/run installs it")
		}
		t.Skip("tmux is not installed (apt-get install tmux)")
	}
	tm := &terminal{t: t, env: w.env, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	line := filepath.Join(wiggumDir, "wiggum") + " " + strings.Join(args, " ")
	// The pane's shell is in the foreground group with wiggum, so Ctrl-C
	// reaches it too: it traps SIGINT (a trap, not an ignore, which wiggum
	// would inherit) to live on and print the code.
	tm.run("new-session", "-d", "-x", "160", "-y", "50", "-c", w.dir, "sh", "-c", `trap true INT; `+line+`; echo "wiggum exited $?"; sleep 600`)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("terminal:\n%s", tm.screen())
		}
		_ = exec.Command("tmux", "-S", tm.socket, "kill-server").Run()
	})
	return tm
}

func (tm *terminal) run(args ...string) string {
	tm.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", tm.socket}, args...)...)
	cmd.Env = tm.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (tm *terminal) screen() string { return tm.run("capture-pane", "-p", "-J", "-S", "-200") }

func (tm *terminal) keys(keys ...string) { tm.run(append([]string{"send-keys"}, keys...)...) }

// exitCode waits for the pane to print wiggum's exit code.
func (tm *terminal) exitCode() int {
	tm.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		s := tm.screen()
		if i := strings.LastIndex(s, "wiggum exited "); i >= 0 {
			f := strings.Fields(s[i+len("wiggum exited "):])
			if len(f) > 0 {
				if code, err := strconv.Atoi(f[0]); err == nil {
					return code
				}
			}
		}
	}
	tm.t.Fatal("wiggum did not exit within a minute")
	return -1
}

// start starts wiggum in the tree without waiting for it; its output goes
// to a file (a pipe would be held open by whatever outlives it), shown if
// the test fails.
func (w *world) start(args ...string) *exec.Cmd {
	w.t.Helper()
	logPath := filepath.Join(w.t.TempDir(), "wiggum.out")
	f, err := os.Create(logPath)
	if err != nil {
		w.t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(wiggumDir, "wiggum"), args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = w.dir, w.env, f, f
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	f.Close()
	w.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		if w.t.Failed() {
			out, _ := os.ReadFile(logPath)
			w.t.Logf("wiggum %s:\n%s", strings.Join(args, " "), out)
		}
	})
	return cmd
}

// waitFor polls cond for up to a minute.
func (w *world) waitFor(what string, cond func() bool) {
	w.t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s\nrequests:\n%s", what, w.requestLog())
		}
	}
}

// find returns the path of the first file called name under the tree
// (worktrees included), or "" if there is none.
func (w *world) find(name string) string {
	found := ""
	_ = filepath.WalkDir(w.dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && found == "" && d.Name() == name && d.Type().IsRegular() {
			found = path
		}
		return nil
	})
	return found
}

func lines(path string) int {
	data, _ := os.ReadFile(path)
	return bytes.Count(data, []byte("\n"))
}

// withMarker lists the processes whose command line holds marker.
func withMarker(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmdline, []byte(marker)) && !zombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func zombie(pid int) bool {
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z'
}

// descendants lists pid's descendants by their parent links in /proc.
func descendants(pid int) []int {
	parent := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			parent[pp] = append(parent[pp], p)
		}
	}
	var out []int
	for todo := []int{pid}; len(todo) > 0; {
		p := todo[0]
		todo = append(todo[1:], parent[p]...)
		out = append(out, parent[p]...)
	}
	return out
}

// killTree stops wiggum, every descendant of it and every process holding
// the marker, then kills them all: none of them gets to clean up, as in a
// power loss.
func killTree(t *testing.T, pid int, marker string) {
	t.Helper()
	all := append([]int{pid}, descendants(pid)...)
	all = append(all, withMarker(marker)...)
	for _, p := range all {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	// What forked while the first ones were being stopped.
	for _, p := range append(descendants(pid), withMarker(marker)...) {
		_ = syscall.Kill(p, syscall.SIGSTOP)
		all = append(all, p)
	}
	for _, p := range all {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}
