package e2e

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/watch"
)

// artifactDir keeps what the terminal tests saw, for people to look at
// (git-ignored: e2e/.gitignore).
const artifactDir = "artifacts"

// scriptedAgent writes an agent that announces itself, reports one tool
// call in claude's stream-json, and waits for the test to release it
// before it writes its file: the test, not a clock, decides when each
// story ends.
func scriptedAgent(t *testing.T, ctl string) string {
	t.Helper()
	script := filepath.Join(ctl, "agent.sh")
	body := `#!/bin/sh
cat >/dev/null
echo "agent output for $WIGGUM_STORY"
printf '{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":1200,"output_tokens":34},"content":[{"type":"tool_use","name":"Bash","input":{"command":"go test ./%s"}}]}}\n' "$WIGGUM_STORY"
touch "` + ctl + `/started-$WIGGUM_STORY"
while [ ! -e "` + ctl + `/release-$WIGGUM_STORY" ]; do sleep 0.05; done
echo done > "file-$WIGGUM_STORY.txt"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// planRepo is a repository with a plan of n stories.
func planRepo(t *testing.T, n int) string {
	t.Helper()
	dir := newRepo(t)
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] US-%d: story number %d\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "git", "add", "plan.md")
	mustRun(t, dir, "git", "commit", "-q", "-m", "plan")
	return dir
}

// tmuxSession is `wiggum watch` in a real terminal: a tmux server of its
// own (private socket) with one 120x40 pane.
type tmuxSession struct {
	t      *testing.T
	socket string
}

func newTmux(t *testing.T, dir string, command string) *tmuxSession {
	t.Helper()
	return newTmuxSized(t, dir, 120, 40, command)
}

// newTmuxSized is newTmux with a pane of cols x rows.
func newTmuxSized(t *testing.T, dir string, cols, rows int, command string) *tmuxSession {
	t.Helper()
	needTool(t, "tmux", "tmux")
	s := &tmuxSession{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	// The pane's shell runs the command and then reports how it exited.
	s.run("new-session", "-d", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), "-c", dir, "sh", "-c", command+`; echo "watch exited $?"; sleep 600`)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...)
	cmd.Env = baseEnv
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (s *tmuxSession) screen() string { return s.run("capture-pane", "-p") }

func (s *tmuxSession) keys(keys ...string) { s.run(append([]string{"send-keys"}, keys...)...) }

// waitScreen polls the pane until it shows every one of want.
func (s *tmuxSession) waitScreen(what string, want ...string) string {
	s.t.Helper()
	var screen string
	ok := func() bool {
		screen = s.screen()
		for _, w := range want {
			if !strings.Contains(screen, w) {
				return false
			}
		}
		return true
	}
	deadline := patienceDeadline()
	for !ok() {
		if deadline() {
			s.t.Fatalf("the terminal never showed %s (%q); last screen:\n%s", what, want, screen)
		}
	}
	return screen
}

// saveCapture keeps a screen as an artifact and logs where.
func saveCapture(t *testing.T, name, screen string) {
	t.Helper()
	if err := os.MkdirAll(artifactDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path, _ := filepath.Abs(filepath.Join(artifactDir, name))
	if err := os.WriteFile(path, []byte(strings.TrimRight(screen, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("terminal capture saved in %s:\n%s", path, screen)
}

// TestWatchTerminal drives `wiggum watch` in tmux against a live
// `wiggum run --workers 2` of scripted agents: the screen shows both
// workers' stories and tool calls, follows one agent's output, then shows
// the finished plan; q quits. A plain `wiggum watch` (not a terminal)
// started at the same time follows the run to its end.
func TestWatchTerminal(t *testing.T) {
	dir := planRepo(t, 4)
	ctl := t.TempDir()
	agentCmd := scriptedAgent(t, ctl)
	run := startWiggum(t, dir, nil, "run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", agentCmd)
	waitFile(t, filepath.Join(ctl, "started-US-1"))
	waitFile(t, filepath.Join(ctl, "started-US-2"))

	plain := startWiggum(t, dir, nil, "watch")
	tm := newTmux(t, dir, wiggumBin+" watch --interval 50ms")
	screen := tm.waitScreen("both workers at work",
		"wiggum watch · plan.md → ", " · live", "2 workers", "0/4 stories done",
		"US-1 story number 1", "US-2 story number 2", "Bash: go test ./US-1", "Bash: go test ./US-2", "1.2k in / 34 out")
	saveCapture(t, "watch-live.txt", screen)
	savePNG(t, "watch-live.png", tm.run("capture-pane", "-p", "-e"))

	tm.keys("2")
	tm.keys("Enter")
	tm.waitScreen("worker 2's agent output", "following worker 2", "agent output for US-")
	tm.keys("Escape")
	tm.waitScreen("the overview again", "LAST TOOL CALL")

	for _, s := range []string{"US-1", "US-2", "US-3", "US-4"} {
		if err := os.WriteFile(filepath.Join(ctl, "release-"+s), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code := run.wait(t); code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", code, run.stdout(), run.stderr())
	}
	screen = tm.waitScreen("the finished plan", "4/4 stories done", "· ended ·", "merged", "run ended")
	saveCapture(t, "watch-ended.txt", screen)
	savePNG(t, "watch-ended.png", tm.run("capture-pane", "-p", "-e"))

	tm.keys("q")
	tm.waitScreen("watch to quit", "watch exited 0")

	if code := plain.wait(t); code != 0 {
		t.Fatalf("plain watch exited %d: %s", code, plain.stderr())
	}
	out := plain.stdout()
	for _, want := range []string{"run started: plan plan.md on branch ", ", 2 workers, 0/4 stories done", "[w1]", "[w2]", "tool Bash: go test ./US-3", "US-4 merged as", "run ended: 4 done, 0 open"} {
		if !strings.Contains(out, want) {
			t.Errorf("plain watch output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("plain output has escape sequences:\n%q", out)
	}
}

// TestWatchOnlyReads: while `wiggum watch` shows a run and follows an
// agent's output, no file in the repository (.git included) is created,
// changed or removed, and a new `wiggum run` takes the agent lock as if
// watch were not there.
func TestWatchOnlyReads(t *testing.T) {
	dir := planRepo(t, 2)
	ctl := t.TempDir()
	agentCmd := scriptedAgent(t, ctl)
	for _, s := range []string{"US-1", "US-2", "US-3"} {
		if err := os.WriteFile(filepath.Join(ctl, "release-"+s), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, dir, wiggumBin, "run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", agentCmd)

	tm := newTmux(t, dir, wiggumBin+" watch --interval 10ms")
	tm.waitScreen("the finished run", "2/2 stories done", "· ended ·")
	// An event the test appends: once the screen shows it, watch has
	// polled since the snapshot.
	f, err := os.OpenFile(filepath.Join(dir, ".ralph", "wiggum", "events.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"event":"merge_failed","story":"US-MARK","branch":"refs/heads/wiggum/US-MARK","error":"test","paths":["marker.txt"],"time":"2026-11-23T12:00:00Z"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := snapshot(t, dir)
	tm.waitScreen("the appended event", "merge conflict in marker.txt")
	tm.keys("Enter")
	tm.waitScreen("an agent's output", "following worker 1", "agent output for US-")
	tm.keys("Escape")
	tm.waitScreen("the overview", "LAST TOOL CALL")
	if after := snapshot(t, dir); after != before {
		t.Fatalf("the repository changed while watch ran:\n%s", diffLines(before, after))
	}

	// A new run takes the lock while watch runs, and watch shows it.
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte("- [x] US-1: story number 1\n- [x] US-2: story number 2\n- [ ] US-3: story number 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "git", "commit", "-q", "-am", "one more story")
	mustRun(t, dir, wiggumBin, "run", "--plan", "plan.md", "--agent-cmd", agentCmd)
	tm.waitScreen("the second run", "3/3 stories done", "US-3 story number 3")
	tm.keys("C-c")
	tm.waitScreen("watch to quit on ctrl-c", "watch exited 0")
}

// snapshot lists every file under dir with its mode, size, modification
// time and content hash.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == filepath.Join(".git", "objects", "maintenance.lock") {
			// git 2.5x leaves a `git maintenance run --auto --detach`
			// running after a commit (the test's own setup commits): it
			// takes and drops this lock whenever it runs.
			return nil
		}
		line := fmt.Sprintf("%s %v %d %d", rel, info.Mode(), info.Size(), info.ModTime().UnixNano())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func diffLines(a, b string) string {
	in := map[string]bool{}
	for _, l := range strings.Split(a, "\n") {
		in[l] = true
	}
	var out []string
	for _, l := range strings.Split(b, "\n") {
		if !in[l] {
			out = append(out, "+ "+l)
		}
		delete(in, l)
	}
	for l := range in {
		out = append(out, "- "+l)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// patienceDeadline returns a check that pauses briefly and reports whether
// patience has run out, for polling loops.
func patienceDeadline() func() bool {
	end := time.Now().Add(patience)
	return func() bool {
		time.Sleep(50 * time.Millisecond)
		return time.Now().After(end)
	}
}

// savePNG renders a captured screen (with its colours: capture-pane -e)
// as HTML and has headless Chromium take a screenshot of it - a picture of
// the terminal for people, kept beside the text capture. Best effort: the
// text capture is the artifact the test stands on.
func savePNG(t *testing.T, name, ansi string) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Logf("no chromium: %s not rendered", name)
		return
	}
	dir, _ := filepath.Abs(artifactDir)
	page := filepath.Join(t.TempDir(), "screen.html")
	if err := os.WriteFile(page, []byte(ansiHTML(ansi)), 0o644); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, name)
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--window-size=1000,700", "--screenshot="+png, "file://"+page)
	cmd.Env = baseEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("chromium could not render %s: %v\n%s", name, err, out)
		return
	}
	t.Logf("terminal screenshot saved in %s", png)
}

var sgrColours = []string{"#2e3436", "#cc0000", "#4e9a06", "#c4a000", "#3465a4", "#75507b", "#06989a", "#d3d7cf"}

// ansiHTML turns a screen with SGR escapes (bold, faint, reverse, the 8
// colours) into a page that shows it as a terminal would.
func ansiHTML(s string) string {
	var b strings.Builder
	b.WriteString(`<html><body style="margin:0;background:#1e1e1e"><pre style="margin:0;padding:12px;font:13px/1.25 'DejaVu Sans Mono',monospace;color:#e0e0e0">`)
	open := false
	for len(s) > 0 {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			b.WriteString(htmlEscape(s))
			break
		}
		b.WriteString(htmlEscape(s[:i]))
		s = s[i+2:]
		j := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != ';' })
		if j < 0 {
			break
		}
		params, final := s[:j], s[j]
		s = s[j+1:]
		if final != 'm' {
			continue
		}
		if open {
			b.WriteString("</span>")
			open = false
		}
		var style []string
		for _, p := range strings.Split(params, ";") {
			switch {
			case p == "1":
				style = append(style, "font-weight:bold")
			case p == "2":
				style = append(style, "opacity:0.6")
			case p == "7":
				style = append(style, "background:#e0e0e0;color:#1e1e1e")
			case len(p) == 2 && p[0] == '3' && p[1] >= '0' && p[1] <= '7':
				style = append(style, "color:"+sgrColours[p[1]-'0'])
			}
		}
		if len(style) > 0 {
			b.WriteString(`<span style="` + strings.Join(style, ";") + `">`)
			open = true
		}
	}
	if open {
		b.WriteString("</span>")
	}
	b.WriteString("</pre></body></html>")
	return b.String()
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// TestDeadRunShownDeadWhateverItsPIDNames: a run killed without logging
// its end is dead to wiggum report and wiggum watch even when the pid its
// run_start recorded names a live process now (a run in a container's PID
// namespace is pid 1 there; after a reboot the pid is anyone's). Only the
// agent lock, as wiggum status reads it, says a run is at work. (Before,
// report said "running" and watch followed the dead run forever.)
func TestDeadRunShownDeadWhateverItsPIDNames(t *testing.T) {
	sleep := uniqueSleep()
	dir, marks, agent := scriptRepo(t, "", 2, `cat > /dev/null
touch "$MARKS/ready"; exec sleep `+sleep+`
`)
	p := startWiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--workers", "2", "-q", "--agent-cmd", "sh "+agent)
	waitFile(t, filepath.Join(marks, "ready"))
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	for _, pid := range withMarker(sleep) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	events := filepath.Join(dir, ".ralph", "wiggum", "events.jsonl")
	data := readFile(t, events)
	live := fmt.Sprintf(`"pid":%d`, os.Getpid()) // this test's own process: alive
	data = regexp.MustCompile(`"pid":[0-9]+`).ReplaceAllString(data, live)
	writeFile(t, events, data)
	rep := wiggum(t, dir, nil, "report")
	if rep.code != 0 || !strings.Contains(rep.stdout, "unfinished") {
		t.Errorf("report of the killed run: exit %d, want it unfinished\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
	w := startWiggum(t, dir, nil, "watch", "--plain")
	if code := w.wait(t); !strings.Contains(w.stdout()+w.stderr(), "logged no end") {
		t.Errorf("watch of the killed run: exit %d, want it to end saying the run logged no end\n%s%s", code, w.stdout(), w.stderr())
	}
}

// TestWatchCountsStoriesQueuedDuringTheRun: an agent that adds stories to
// the plan grows the total watch shows, so it never says "4/2 stories
// done".
func TestWatchCountsStoriesQueuedDuringTheRun(t *testing.T) {
	dir, _, agent := scriptRepo(t, "", 2, `cat > /dev/null
if [ "$WIGGUM_STORY" = US-1 ]; then printf -- '- [ ] US-3: story 3\n- [ ] US-4: story 4\n' >> plan.md; fi
echo done > "done-$WIGGUM_STORY.txt"
`)
	if r := wiggum(t, dir, nil, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent); r.code != 0 || !strings.Contains(r.stdout, "4 story(ies) done") {
		t.Fatalf("run: exit %d, want 4 stories done\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	src := watch.NewSource(dir)
	defer src.Close()
	var st watch.State
	if err := src.Each(st.Apply); err != nil {
		t.Fatal(err)
	}
	if st.Done != 4 || st.Total != 4 {
		t.Errorf("watch: %d/%d stories done, want 4/4", st.Done, st.Total)
	}
}
