package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLockOnATerminal runs `wiggum lock` on a pseudo-terminal (through
// util-linux script): an interactive command under the lock must be able to
// read the terminal (its process group is made the foreground one, or the
// first read stops it with SIGTTIN and everything hangs), and wiggum must
// not write terminal queries (colour or cursor reports) into the session.
func TestLockOnATerminal(t *testing.T) {
	script := needTool(t, "script", "util-linux")
	dir := newRepo(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	inner := wiggumBin + ` lock -- sh -c 'read line; echo "got:$line"'; echo "exit:$?"`
	cmd := exec.CommandContext(ctx, script, "-qec", inner, "/dev/null")
	cmd.Dir = dir
	cmd.Env = baseEnv
	cmd.Stdin = strings.NewReader("typed on the terminal\n")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("wiggum lock hung on a terminal; output so far: %q", out)
	}
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "got:typed on the terminal") || !strings.Contains(s, "exit:0") {
		t.Fatalf("the command did not read the terminal: %q", s)
	}
	if strings.Contains(s, "\x1b]1") || strings.Contains(s, "\x1b[6n") {
		t.Fatalf("wiggum wrote terminal queries into the session: %q", s)
	}
}

// TestRunStatusLineOnATerminal runs `wiggum run` in tmux, 80 columns wide,
// with an agent whose latest line - the status line's activity - holds
// tabs (a go test result), then CJK text and emoji (two cells each), and
// then, the window narrowed to 50 columns, plain ASCII: each time the
// status line, redrawn every second, stays one line on the screen. A status
// line that wraps cannot be taken back by its redraw, and left a copy of
// itself every second. Escape sequences in the agent's output do not
// reach the terminal either: the window title stays wiggum's.
func TestRunStatusLineOnATerminal(t *testing.T) {
	dir := planRepo(t, 1)
	ctl := t.TempDir()
	agent := filepath.Join(ctl, "agent.sh")
	body := `cat >/dev/null
step() { touch "` + ctl + `/$1"; while [ ! -e "` + ctl + `/go-$1" ]; do sleep 0.05; done; }
printf '{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"\\u001b]0;PWNED-TITLE\\u0007\\u001b]2;PWNED-TITLE\\u0007 title"}]}}\n'
printf 'TAB ok  \tgithub.com/wiggum-dev/wiggum/internal/report\t0.456s\n'
step tab
printf 'CJK ✅ 已完成：添加了报告测试，所有测试都通过了，并且更新了文档和示例代码\n'
step cjk
printf 'ASCII narrowed window: this line is far longer than fifty columns, so it must be cut\n'
step narrow
echo done > file.txt
`
	if err := os.WriteFile(agent, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	tm := newTmuxSized(t, dir, 80, 30, wiggumBin+" run --plan plan.md --agent-cmd 'sh "+agent+"'")
	tm.run("set-option", "-g", "set-titles", "off")

	// statusLines waits until the status line naming marker was redrawn
	// twice (its elapsed seconds moved on by 2), and returns the screen's
	// lines holding it.
	elapsed := regexp.MustCompile(`⏵ US-1 \(iteration 1\) · (?:(\d+)m)?(\d+)s`)
	statusLines := func(marker string) []string {
		t.Helper()
		first := -1
		deadline := patienceDeadline()
		for {
			screen := tm.screen()
			var lines []string
			last := -1
			for _, l := range strings.Split(screen, "\n") {
				if strings.Contains(l, "⏵") && strings.Contains(l, marker) {
					lines = append(lines, l)
					if m := elapsed.FindStringSubmatch(l); m != nil {
						mins, _ := strconv.Atoi(m[1])
						secs, _ := strconv.Atoi(m[2])
						last = 60*mins + secs
					}
				}
			}
			if last >= 0 && first < 0 {
				first = last
			}
			if first >= 0 && last >= first+2 {
				return lines
			}
			if deadline() {
				t.Fatalf("the status line with %q was not redrawn; last screen:\n%s", marker, screen)
			}
		}
	}
	check := func(step, marker string) {
		t.Helper()
		waitFile(t, filepath.Join(ctl, step))
		lines := statusLines(marker)
		screen := tm.screen()
		saveCapture(t, "run-status-"+step+".txt", screen)
		if len(lines) != 1 {
			t.Errorf("%s: the status line is on the screen %d times, not once:\n%s", step, len(lines), screen)
		}
		if err := os.WriteFile(filepath.Join(ctl, "go-"+step), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check("tab", "TAB ok")
	check("cjk", "CJK ✅")
	tm.run("resize-window", "-x", "50")
	check("narrow", "ASCII narr")
	tm.waitScreen("the story done", "US-1 done", "watch exited 0")
	if title := tm.run("display-message", "-p", "#{pane_title}"); strings.Contains(title, "PWNED") {
		t.Errorf("the agent's output set the window title: %q", title)
	}
}
