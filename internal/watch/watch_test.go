package watch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/termtext"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// ev builds an event as the loop writes it, through JSON, so the test
// reads the same shape as the log.
func ev(t *testing.T, sec int, name string, fields map[string]any) Event {
	t.Helper()
	rec := map[string]any{"time": t0.Add(time.Duration(sec) * time.Second).Format(time.RFC3339Nano), "event": name, "session": "s1"}
	for k, v := range fields {
		rec[k] = v
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return e
}

// A parallel run as the loop and hooks record it.
func parallelRun(t *testing.T) []Event {
	return []Event{
		ev(t, 0, "run_start", map[string]any{"plan": "plan.md", "pid": 4242, "workers": 2, "stories": 4, "done": 1}),
		ev(t, 1, "iteration_start", map[string]any{"iteration": 1, "story": "US-2", "title": "login form", "attempt": 1, "attempts": 3, "worker": 1, "output": ".ralph/wiggum/agent/1.log"}),
		ev(t, 1, "iteration_start", map[string]any{"iteration": 2, "story": "US-3", "title": "logout", "attempt": 1, "attempts": 3, "worker": 2, "output": ".ralph/wiggum/agent/2.log"}),
		ev(t, 5, "tool", map[string]any{"story": "US-2", "iteration": 1, "worker": 1, "tool": "Bash: go test ./...", "input_tokens": 12300, "output_tokens": 450}),
		ev(t, 6, "tool", map[string]any{"story": "US-3", "iteration": 2, "worker": 2, "tool": "Read: logout.go", "input_tokens": 900, "output_tokens": 80}),
		ev(t, 7, "iteration_end", map[string]any{"iteration": 2, "story": "US-3", "attempt": 1, "worker": 2, "outcome": "failed (gate)", "duration_ms": 6000, "backup": "refs/wiggum/backup/20261123T120007Z-1", "cost_usd": 0.25, "input_tokens": 1000, "output_tokens": 100}),
		ev(t, 8, "iteration_start", map[string]any{"iteration": 3, "story": "US-3", "title": "logout", "attempt": 2, "attempts": 3, "worker": 2, "output": ".ralph/wiggum/agent/3.log"}),
		ev(t, 9, "tool", map[string]any{"story": "US-3", "iteration": 3, "worker": 2, "tool": "Edit: logout.go", "input_tokens": 300, "output_tokens": 20}),
		ev(t, 9, "test-failure", map[string]any{"story": "US-2", "runner": "go test", "rollback": "refs/wiggum/backup/x"}),
		ev(t, 10, "guard_denied", map[string]any{"story": "US-2", "decision": "deny", "command": "git push --force", "reason": "pushing is not allowed during a session"}),
		ev(t, 11, "usage_limit", map[string]any{"story": "US-3", "message": "usage limit reached (five_hour)", "reset": "2026-11-23T17:00:00Z"}),
		ev(t, 12, "iteration_end", map[string]any{"iteration": 1, "story": "US-2", "attempt": 1, "worker": 1, "outcome": "done", "duration_ms": 11000, "commit": "abc1234", "cost_usd": 0.5}),
		ev(t, 13, "merged", map[string]any{"story": "US-2", "commit": "abc1234def5678", "branch": "refs/heads/wiggum/US-2"}),
		ev(t, 14, "merge_failed", map[string]any{"story": "US-4", "branch": "refs/heads/wiggum/US-4", "error": "conflict", "paths": []string{"a.go"}}),
	}
}

func TestStateFoldsRun(t *testing.T) {
	var s State
	for _, e := range parallelRun(t) {
		s.Apply(e)
	}
	if s.Total != 4 || s.Done != 2 || s.Iterations != 3 {
		t.Errorf("progress %d/%d, iteration %d; want 2/4, 3", s.Done, s.Total, s.Iterations)
	}
	if s.Cost != 0.75 {
		t.Errorf("cost %v, want 0.75", s.Cost)
	}
	if len(s.Slots) != 2 {
		t.Fatalf("slots %+v", s.Slots)
	}
	w2 := s.Slots[1]
	if w2.Story != "US-3" || w2.Attempt != 2 || !w2.Busy || w2.Cost != 0.25 || w2.Output != ".ralph/wiggum/agent/3.log" {
		t.Errorf("worker 2 = %+v", w2)
	}
	kinds := ""
	for _, n := range s.Notices {
		kinds += n.Kind + " "
	}
	if kinds != "rollback rollback denied limit done merged conflict " {
		t.Errorf("notice kinds = %q", kinds)
	}
	if !s.Live(func(int) bool { return true }) || s.Live(func(int) bool { return false }) {
		t.Error("a started run is live exactly while its pid is alive")
	}
	s.Apply(ev(t, 20, "run_end", map[string]any{"completed": []string{"US-2"}}))
	if s.Live(func(int) bool { return true }) {
		t.Error("an ended run is not live")
	}
	// A new run starts afresh.
	s.Apply(ev(t, 30, "run_start", map[string]any{"plan": "other.md", "branch": "ralph/x", "stories": 9, "done": 0}))
	if s.Plan != "other.md" || s.Branch != "ralph/x" || len(s.Slots) != 0 || len(s.Notices) != 0 || s.Cost != 0 {
		t.Errorf("new run kept old state: %+v", s)
	}
	m := NewModel(nil, 0, func(int) bool { return true })
	m.st = s
	if h := m.header(); !strings.HasPrefix(h, "wiggum watch · other.md → ralph/x · ") {
		t.Errorf("the header does not name the run's branch: %q", h)
	}
}

func newTestModel(evs []Event) *Model {
	m := NewModel(nil, 0, func(int) bool { return true })
	m.now = func() time.Time { return t0.Add(20 * time.Second) }
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(EventsMsg(evs))
	return m
}

func TestModelView(t *testing.T) {
	m := newTestModel(parallelRun(t))
	v := m.Render()
	for _, want := range []string{
		"wiggum watch · plan.md · live · 20s · 2 workers · $0.7500",
		"2/4 stories done · iteration 3",
		"US-2 login form", "merged", // worker 1's story landed
		"US-3 logout", "2/3", "12s", "Edit: logout.go", "$0.2500", // worker 2 is on its second attempt
		"merge conflict in a.go; branch wiggum/US-4 kept",
		`guard denied "git push --force": pushing is not allowed`,
		"usage limit: usage limit reached (five_hour)",
		"attempt 1 failed (gate); rolled back, saved in refs/wiggum/backup/20261123T120007Z-1",
		"? help · q quit",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	// Newest notice first.
	if strings.Index(v, "merge conflict") > strings.Index(v, "usage limit:") {
		t.Errorf("recent events not newest first:\n%s", v)
	}
}

func key(m *Model, k string) tea.Cmd {
	var msg tea.KeyPressMsg
	switch k {
	case "up":
		msg = tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		msg = tea.KeyPressMsg{Code: tea.KeyDown}
	case "enter":
		msg = tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		msg = tea.KeyPressMsg{Code: tea.KeyEscape}
	case "ctrl+c":
		msg = tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	default:
		msg = tea.KeyPressMsg{Code: []rune(k)[0], Text: k}
	}
	_, cmd := m.Update(msg)
	return cmd
}

func TestModelKeys(t *testing.T) {
	m := newTestModel(parallelRun(t))
	if !strings.Contains(m.Render(), "▸ 1 ") {
		t.Fatalf("worker 1 not selected at first:\n%s", m.Render())
	}
	key(m, "down")
	if !strings.Contains(m.Render(), "▸ 2 ") {
		t.Errorf("down did not select worker 2:\n%s", m.Render())
	}
	key(m, "down") // past the last: stays
	key(m, "1")
	if !strings.Contains(m.Render(), "▸ 1 ") {
		t.Errorf("1 did not select worker 1")
	}
	key(m, "?")
	if v := m.Render(); !strings.Contains(v, "follow the selected worker's agent output") {
		t.Errorf("? shows no help:\n%s", v)
	}
	key(m, "x") // any key closes help
	if strings.Contains(m.Render(), "any key closes it") {
		t.Error("help still shown")
	}
	for _, k := range []string{"q", "ctrl+c"} {
		cmd := key(m, k)
		if cmd == nil {
			t.Fatalf("%s returned no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s does not quit", k)
		}
	}
}

func TestModelFollowsOutput(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, filepath.FromSlash(AgentLogDir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&out, "agent line %d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "3.log"), []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hostile log naming a file outside the agent logs is not read.
	if err := os.WriteFile(filepath.Join(root, "secret"), []byte("TOPSECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	evs := parallelRun(t)
	evs = append(evs, ev(t, 15, "iteration_start", map[string]any{"iteration": 9, "story": "US-9", "attempt": 1, "attempts": 1, "worker": 3, "output": ".ralph/wiggum/agent/../../../secret"}))
	m := newTestModel(evs)
	m.src = NewSource(root)
	key(m, "2")
	key(m, "enter")
	v := m.Render()
	if !strings.Contains(v, "following worker 2 · US-3 logout · attempt 2/3") || !strings.Contains(v, "agent line 100") || strings.Contains(v, "agent line 1\n") {
		t.Errorf("follow view of worker 2:\n%s", v)
	}
	key(m, "3")
	if v := m.Render(); strings.Contains(v, "TOPSECRET") || !strings.Contains(v, "(no output yet)") {
		t.Errorf("followed a path outside the agent logs:\n%s", v)
	}
	key(m, "esc")
	if strings.Contains(m.Render(), "following") {
		t.Error("esc did not leave the follow view")
	}
}

// On a terminal too short for the whole frame, the follow view shows the
// newest output and the key hints, and the overview its footer: the
// header is what goes.
func TestModelFitsShortTerminals(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, filepath.FromSlash(AgentLogDir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&out, "tick %d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "3.log"), []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, height := range []int{8, 5, 2} {
		m := newTestModel(parallelRun(t))
		m.src = NewSource(root)
		m.Update(tea.WindowSizeMsg{Width: 60, Height: height})
		key(m, "2")
		key(m, "enter")
		v := m.Render()
		lines := strings.Split(strings.TrimSuffix(v, "\n"), "\n")
		if len(lines) > height || !strings.Contains(v, "tick 8") && height > 2 || !strings.Contains(lines[len(lines)-1], "q quit") {
			t.Errorf("follow view at height %d (%d lines):\n%s", height, len(lines), v)
		}
		key(m, "esc")
		m.src.Bad = 1
		v = m.Render()
		lines = strings.Split(strings.TrimSuffix(v, "\n"), "\n")
		if len(lines) > height || !strings.Contains(lines[len(lines)-1], "1 unreadable log line(s) skipped") {
			t.Errorf("overview at height %d (%d lines):\n%s", height, len(lines), v)
		}
	}
}

// A progress line the agent rewrote with carriage returns is followed as
// a terminal shows it last, not with each \r as �.
func TestModelFollowsRewrittenLines(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, filepath.FromSlash(AgentLogDir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "3.log"), []byte("downloading 10%\rdownloading 50%\rdownloading 100%\ncrlf\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newTestModel(parallelRun(t))
	m.src = NewSource(root)
	key(m, "2")
	key(m, "enter")
	if v := m.Render(); !strings.Contains(v, "downloading 100%\ncrlf\n") || strings.Contains(v, "10%") || strings.Contains(v, "\ufffd") {
		t.Errorf("follow view of a rewritten line:\n%s", v)
	}
}

func TestModelNoRun(t *testing.T) {
	m := newTestModel(nil)
	if v := m.Render(); !strings.Contains(v, "no run yet") {
		t.Errorf("view without a run:\n%s", v)
	}
}

func TestModelEndedRun(t *testing.T) {
	evs := append(parallelRun(t), ev(t, 16, "run_end", map[string]any{"completed": []string{"US-2"}, "error": "1 branch(es) could not be merged"}))
	m := newTestModel(evs)
	v := m.Render()
	if !strings.Contains(v, "· ended (1 branch(es) could not be merged) · 16s") || !strings.Contains(v, "run ended") {
		t.Errorf("ended run:\n%s", v)
	}
	m.alive = func(int) bool { return false }
	m.st.Ended = false
	if v := m.Render(); !strings.Contains(v, "stopped (pid 4242 gone, no end logged)") {
		t.Errorf("crashed run:\n%s", v)
	}
}

// The source reads only complete lines, counts corrupt ones, starts at the
// newest run, and starts over on a file that was replaced by a shorter one.
func TestSourceTails(t *testing.T) {
	root := t.TempDir()
	logPath := filepath.Join(root, filepath.FromSlash(EventLog))
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, s string, flag int) {
		t.Helper()
		f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	write(logPath, `{"event":"run_start","plan":"old.md","time":"2026-11-23T11:00:00Z"}
{"event":"iteration_start","story":"OLD-1","time":"2026-11-23T11:00:01Z"}
{"event":"run_start","plan":"new.md","time":"2026-11-23T12:00:00Z"}
not json
{"event":"iteration_start","story":"US-1","worker":1,"time":"2026-11-23T12:00:01Z"}
{"event":"tool","story":"US-1","to`, os.O_TRUNC)
	src := NewSource(root)
	evs, err := src.Poll()
	if err != nil {
		t.Fatal(err)
	}
	if names(evs) != "run_start:new.md iteration_start:US-1" || src.Bad != 1 {
		t.Errorf("first poll = %s, bad %d", names(evs), src.Bad)
	}
	write(logPath, `ol":"Bash","time":"2026-11-23T12:00:03Z"}
`, os.O_APPEND)
	evs, _ = src.Poll()
	if names(evs) != "tool:US-1" {
		t.Errorf("second poll = %s", names(evs))
	}
	if evs, _ = src.Poll(); len(evs) != 0 {
		t.Errorf("nothing new, got %s", names(evs))
	}
	write(logPath, `{"event":"run_start","plan":"again.md","time":"2026-11-23T13:00:00Z"}
`, os.O_TRUNC)
	if evs, _ = src.Poll(); names(evs) != "run_start:again.md" {
		t.Errorf("after the log was replaced: %s", names(evs))
	}
}

func names(evs []Event) string {
	var s []string
	for _, e := range evs {
		what := e.Story
		if e.Plan != "" {
			what = e.Plan
		}
		s = append(s, e.Name+":"+what)
	}
	return strings.Join(s, " ")
}

func TestLine(t *testing.T) {
	for _, c := range []struct {
		e    Event
		want string
	}{
		{ev(t, 0, "run_start", map[string]any{"plan": "plan.md", "workers": 8, "stories": 10, "done": 2, "pid": 7}), "run started: plan plan.md, 8 workers, 2/10 stories done, pid 7"},
		{ev(t, 0, "run_start", map[string]any{"plan": "prd.json", "branch": "ralph/x", "pid": 7}), "run started: plan prd.json on branch ralph/x, pid 7"},
		{ev(t, 0, "iteration_start", map[string]any{"story": "US-1", "worker": 3, "iteration": 4, "attempt": 2, "attempts": 3, "title": "a\nb"}), "[w3] US-1 iteration 4, attempt 2/3: a b"},
		{ev(t, 0, "merge_failed", map[string]any{"story": "US-4", "branch": "refs/heads/wiggum/US-4", "paths": []string{"x"}}), "US-4 merge conflict in x; branch wiggum/US-4 kept"},
		{ev(t, 0, "something_new", map[string]any{"message": "hello"}), "something_new: hello"},
		// What an agent or a plan put in the log is shown, never
		// interpreted by the terminal.
		{ev(t, 0, "tool", map[string]any{"story": "US-1", "tool": "Bash: echo \x1b]0;PWNED\x07\x1b]52;c;eA==\x07\x1b[2J\x1b[31mred\u009b2J\tx\ry"}), "US-1 tool Bash: echo red x�y"},
		{ev(t, 0, "iteration_start", map[string]any{"story": "US-1", "iteration": 1, "attempt": 1, "attempts": 1, "title": "first \x1b]8;;http://evil/\x1b\\story\u009d0;T\u009c"}), "US-1 iteration 1, attempt 1/1: first story"},
		{ev(t, 0, "run_end", map[string]any{"error": "boom \x1b]0;T\x07\x1bc"}), "run ended: 0 done, 0 open: boom "},
	} {
		if got := Line(c.e); !strings.HasSuffix(got, c.want) {
			t.Errorf("Line = %q, want suffix %q", got, c.want)
		}
	}
}

// A story title in CJK takes two cells a character: its column is cut
// and padded by cells, so the columns after it stay under their headings.
func TestModelWideTitle(t *testing.T) {
	m := newTestModel([]Event{
		ev(t, 0, "run_start", map[string]any{"plan": "plan.md", "pid": 4242, "workers": 2, "stories": 2}),
		ev(t, 1, "iteration_start", map[string]any{"iteration": 1, "story": "US-1", "title": "添加报告测试并更新所有文档", "attempt": 1, "attempts": 3, "worker": 1}),
		ev(t, 1, "iteration_start", map[string]any{"iteration": 2, "story": "US-2", "title": "短", "attempt": 1, "attempts": 3, "worker": 2}),
		ev(t, 2, "tool", map[string]any{"story": "US-1", "iteration": 1, "worker": 1, "tool": "Bash: go test ./...", "input_tokens": 12300, "output_tokens": 450}),
	})
	cells := func(s string) int { return termtext.Width(s) }
	var head string
	var rows []string
	for _, l := range strings.Split(m.Render(), "\n") {
		switch {
		case strings.Contains(l, "LAST TOOL CALL"):
			head = l
		case strings.Contains(l, "US-1 ") || strings.Contains(l, "US-2 "):
			if strings.Contains(l, "1/3") {
				rows = append(rows, l)
			}
		}
	}
	if head == "" || len(rows) != 2 {
		t.Fatalf("no header or worker rows:\n%s", m.Render())
	}
	want := cells(head[:strings.Index(head, "ATTEMPT")])
	for _, r := range rows {
		if got := cells(r[:strings.Index(r, "1/3")]); got != want {
			t.Errorf("the ATTEMPT column is at cell %d, its heading at %d:\n%s\n%s", got, want, head, r)
		}
		if !strings.Contains(r, "Bash: go test") && strings.Contains(r, "US-1") {
			t.Errorf("the last tool call is pushed off the row: %q", r)
		}
	}
}

// The first poll finds the newest run by its mark, across read blocks and
// with lines of other runs before it.
func TestLastRunStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	var b strings.Builder
	for i := range 3 {
		fmt.Fprintf(&b, `{"event":"run_start","plan":"run%d.md","time":"2026-11-23T12:00:00Z"}`+"\n", i)
		for j := range 4000 { // 4000 lines of ~120 bytes: runs span blocks
			fmt.Fprintf(&b, `{"event":"tool","story":"US-%d","tool":"Bash: %s","time":"2026-11-23T12:00:01Z"}`+"\n", j, strings.Repeat("x", 40))
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	off, err := lastRunStart(path)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if want := strings.LastIndex(string(data), `{"event":"run_start"`); off != int64(want) {
		t.Errorf("offset %d, want %d", off, want)
	}
	if off, _ := lastRunStart(filepath.Join(dir, "missing")); off != 0 {
		t.Errorf("missing log: offset %d", off)
	}
}

// A shared run lands on a remote, and a usage limit pauses every worker:
// both show.
func TestModelRemoteAndLimitWait(t *testing.T) {
	evs := []Event{
		ev(t, 0, "run_start", map[string]any{"plan": "plan.md", "pid": 1, "workers": 2, "stories": 2, "done": 0}),
		ev(t, 1, "iteration_start", map[string]any{"iteration": 1, "story": "US-1", "attempt": 1, "attempts": 1, "worker": 1}),
		ev(t, 2, "landed", map[string]any{"story": "US-1", "commit": "0123456789abcdef", "branch": "refs/heads/wiggum/US-1"}),
		ev(t, 3, "limit_wait_start", map[string]any{"message": "limit", "until": "2026-11-23T17:00:00Z"}),
	}
	m := newTestModel(evs)
	v := m.Render()
	local := time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC).Local().Format("15:04")
	for _, want := range []string{"1/2 stories done", "landed on the remote as 0123456789ab", "paused for the usage limit until " + local} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	m.Update(EventsMsg{ev(t, 9, "limit_wait_end", map[string]any{})})
	if strings.Contains(m.Render(), "paused") {
		t.Errorf("still paused after limit_wait_end:\n%s", m.Render())
	}
}

// A story another machine landed while this one worked on it, when this
// attempt added nothing, counts as done and says so - not as a failure.
func TestModelLandedElsewhere(t *testing.T) {
	evs := []Event{
		ev(t, 0, "run_start", map[string]any{"plan": "plan.md", "pid": 1, "workers": 2, "stories": 2, "done": 0}),
		ev(t, 1, "iteration_start", map[string]any{"iteration": 1, "story": "US-3", "attempt": 1, "attempts": 1, "worker": 1}),
		ev(t, 2, "landed_elsewhere", map[string]any{"story": "US-3", "branch": "refs/heads/wiggum/US-3",
			"error": "US-3 was already done on the target branch (landed by another machine meanwhile)"}),
	}
	v := newTestModel(evs).Render()
	for _, want := range []string{"1/2 stories done", "landed by another machine meanwhile; this attempt added nothing"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	for _, bad := range []string{"kept", "conflict", "failed"} {
		if strings.Contains(v, bad) {
			t.Errorf("view says %q:\n%s", bad, v)
		}
	}
}

// The notices of this session's events: an outage is told apart from a
// usage limit, and stories an agent ticked itself are named.
func TestDescribeOutagesAndAgentTicks(t *testing.T) {
	until := time.Date(2026, 11, 28, 4, 30, 0, 0, time.Local)
	for _, tc := range []struct {
		e         Event
		kind, has string
	}{
		{Event{Name: "usage_limit", Outage: true, Message: "the model service is unavailable (API Error: 529 Overloaded)"}, "limit", "the model service is unavailable (API Error: 529 Overloaded)"},
		{Event{Name: "limit_wait_start", Outage: true, Until: until}, "limit", "all workers wait for the model service; trying again at 04:30"},
		{Event{Name: "usage_limit_end", Outage: true}, "limit", "trying the model service again"},
		{Event{Name: "ticked_by_agent", Story: "US-1", Ticked: []string{"US-3", "US-4"}}, "done", "the agent also ticked US-3, US-4 in the plan"},
		{Event{Name: "iteration_end", Story: "US-2", Attempt: 1, Outcome: "done", Commit: "abc1234", Empty: true}, "done", "attempt 1 done in 0s, commit abc1234; the agent changed nothing"},
	} {
		kind, text := Describe(tc.e)
		if kind != tc.kind || !strings.Contains(text, tc.has) {
			t.Errorf("%s: %q %q, want %q containing %q", tc.e.Name, kind, text, tc.kind, tc.has)
		}
	}
}

// What wiggum did about what an agent left in git - a branch it left, an
// operation half done, commits made before its attempt that it rewrote,
// tags a failed attempt made - is a notice of its own, naming the story
// and where the work is saved; so is a rollback that failed.
func TestGitInterventionsAreNotices(t *testing.T) {
	var s State
	s.Apply(ev(t, 0, "run_start", map[string]any{"plan": "plan.md", "stories": 2}))
	for _, e := range []Event{
		ev(t, 1, "branch_left", map[string]any{"story": "US-1", "from": "main", "to": "branch feature", "backup": "refs/wiggum/backup/a"}),
		ev(t, 2, "operation_aborted", map[string]any{"story": "US-1", "operation": "rebase", "conflicts": []string{"a.go"}, "backup": "refs/wiggum/backup/b"}),
		ev(t, 3, "history_rewritten", map[string]any{"story": "US-2", "branch": "main", "commits": 1, "own": true, "backup": "refs/wiggum/backup/c"}),
		ev(t, 4, "history_rewritten", map[string]any{"story": "US-2", "branch": "main", "commits": 2}),
		ev(t, 5, "refs_restored", map[string]any{"story": "US-2", "backup": "refs/wiggum/backup/d", "refs": []string{"refs/tags/v1.0", "refs/heads/release"}}),
		ev(t, 6, "rollback_failed", map[string]any{"story": "US-2", "error": "no space left on device"}),
		ev(t, 7, "commit_unsigned", map[string]any{"story": "US-3", "error": "Load key \"k\": incorrect passphrase"}),
		ev(t, 8, "commit_message_refused", map[string]any{"story": "US-4", "message": "feat: Add It", "error": "subject-case"}),
		ev(t, 9, "file_left_out", map[string]any{"story": "US-5", "paths": []string{"model.bin"}, "bytes": 214000000}),
		ev(t, 10, "worktree_set_aside", map[string]any{"story": "US-6", "reason": "the checkpoint is no longer an ancestor of HEAD", "backup": "refs/wiggum/backup/e", "backups": []string{"refs/wiggum/backup/e"}}),
		ev(t, 11, "commit_branch_refused", map[string]any{"story": "US-7", "hook": "no-commit-to-branch", "backup": "refs/wiggum/backup/f"}),
		ev(t, 12, "git_lock_removed", map[string]any{"story": "US-8", "paths": []string{"/r/.git/index.lock", "/r/.git/HEAD.lock"}}),
		ev(t, 13, "state_put_back", map[string]any{"story": "US-8", "paths": []string{".ralph/.agent-lock", ".ralph/wiggum/checkpoint.json"}}),
		ev(t, 14, "git_config_restored", map[string]any{"story": "US-9", "settings": []string{"commit.gpgsign = true (was unset)"}}),
		ev(t, 15, "nested_repo", map[string]any{"story": "US-10", "paths": []string{"app"}, "aside": "/r/.git/wiggum-nested/1-app.git"}),
		ev(t, 16, "nested_repo", map[string]any{"story": "US-10", "paths": []string{"vendor/lib"}, "url": "https://example.com/lib.git"}),
		ev(t, 17, "nested_repo", map[string]any{"story": "US-11", "paths": []string{"gen"}, "aside": "/r/.git/wiggum-nested/2-gen.git", "backup": "refs/wiggum/backup/g"}),
		ev(t, 18, "worktree_made", map[string]any{"story": "US-12", "paths": []string{"../wt"}, "branch": "feature", "commits": 2}),
		ev(t, 19, "tick_uncommitted", map[string]any{"story": "US-13", "commit": "0123456789abcdef0123", "error": "markdownlint: plan.md:1 MD004"}),
		ev(t, 21, "merge_failed", map[string]any{"story": "US-15", "branch": "refs/heads/wiggum/US-15", "paths": []string{"a.go"}, "retry": true}),
		ev(t, 20, "dir_left_out", map[string]any{"story": "US-14", "paths": []string{"node_modules"}, "what": "installed packages (npm, yarn, pnpm)", "rule": "/node_modules/"}),
		ev(t, 21, "dir_left_out", map[string]any{"story": "US-14", "paths": []string{".env"}, "what": "an environment file, where secrets live (.env)", "rule": "/.env", "file": true}),
		ev(t, 22, "history_cleaned", map[string]any{"story": "US-16", "paths": []string{"node_modules/", "app.bin"}, "commits": 2, "dropped": 1, "backup": "refs/wiggum/backup/h"}),
		ev(t, 24, "tests_deleted", map[string]any{"story": "US-17", "paths": []string{"calc_test.go"}, "commit": "0123456789abcdef"}),
		ev(t, 23, "history_kept", map[string]any{"story": "US-16", "paths": []string{".venv/"}, "reason": "refs/tags/v1 holds them too"}),
		ev(t, 25, "tests_skipped", map[string]any{"story": "US-18", "paths": []string{"calc_test.go"}, "reason": "calc_test.go (t.Skip added)", "commit": "0123456789abcdef"}),
		ev(t, 26, "tests_skipped", map[string]any{"story": "US-18", "paths": []string{"a.test.js"}, "reason": "a.test.js (2 tests fewer)", "refused": true}),
		ev(t, 27, "removed_by_agent", map[string]any{"story": "US-19", "removed": []string{"US-20", "US-21"}}),
	} {
		s.Apply(e)
	}
	want := []string{
		"git US-1 the agent left main for branch feature; its work cannot land, saved in refs/wiggum/backup/a",
		"git US-1 the agent left a rebase half done; aborted, saved in refs/wiggum/backup/b",
		"git US-2 the agent rewrote 1 commit(s) of main made before its attempt; put back, its rewrite saved in refs/wiggum/backup/c",
		"git US-2 the agent rewrote 2 commit(s) of main made before its attempt onto others' commits; the attempt fails",
		"git US-2 the failed attempt's v1.0, release taken back; its work is in refs/wiggum/backup/d",
		"stopped US-2 rollback failed: no space left on device",
		"stopped US-3 passed, but git could not sign its commit: Load key \"k\": incorrect passphrase; its work is left uncommitted for the next run",
		"stopped US-4 passed, but the commit-msg hook refused its message \"feat: Add It\"; its work is left uncommitted for the next run",
		"git US-5 model.bin left out of the commit: a new file over --max-file-size",
		"rollback US-6 its rollback was refused (the checkpoint is no longer an ancestor of HEAD); the worktree, the run's own, is set aside: saved in refs/wiggum/backup/e, the next attempt in a new one",
		"stopped US-7 passed, but the pre-commit hook no-commit-to-branch refuses every commit on this branch; saved in refs/wiggum/backup/f; run on a branch of its own (--branch)",
		"git US-8 removed git's lock /r/.git/index.lock, /r/.git/HEAD.lock: left by a git killed mid-command, which no longer runs",
		"git US-8 wiggum's .ralph/.agent-lock, .ralph/wiggum/checkpoint.json deleted during the attempt (an rm -rf .ralph?); put back",
		"git US-9 the agent changed git settings wiggum relies on (commit.gpgsign = true (was unset)); put back",
		"git US-10 app/ was a git repository of its own (a git init): its files committed, its .git kept in /r/.git/wiggum-nested/1-app.git",
		"git US-10 vendor/lib/ is a clone of https://example.com/lib.git: left out of the commit",
		"rollback US-11 gen/, a git repository of its own the attempt made, removed: its files saved in refs/wiggum/backup/g, its .git kept in /r/.git/wiggum-nested/2-gen.git",
		"git US-12 the agent made a worktree of its own, ../wt (feature), holding 2 commit(s) the attempt's branch does not have; left as it is",
		"stopped US-13 landed (0123456789ab), but git would not commit its tick in the plan: markdownlint: plan.md:1 MD004; the tick is left in the plan for the next run to commit",
		"conflict US-15 merge conflict in a.go; branch wiggum/US-15 kept, and the story gets another attempt to merge it in",
		"git US-14 node_modules/ is installed packages (npm, yarn, pnpm): left out of every commit (/node_modules/ in .git/info/exclude)",
		"git US-14 .env is an environment file, where secrets live (.env): left out of every commit (/.env in .git/info/exclude)",
		"git US-16 the agent's commits put node_modules/, app.bin in the history: made its 2 commit(s) again without them, 1 left empty and dropped; as it made them, saved in refs/wiggum/backup/h",
		"tests US-17 its commit 0123456789ab deletes 1 test file(s): calc_test.go - look at it",
		"git US-16 the commits made during the attempt put .venv/ in the history, and stay as they are: refs/tags/v1 holds them too",
		"tests US-18 its commit 0123456789ab switches tests off: calc_test.go (t.Skip added) - look at it",
		"tests US-18 the attempt switched tests off: a.test.js (2 tests fewer) - failed (--keep-tests)",
		"git US-19 the agent took US-20, US-21, open, out of the plan: not run",
	}
	if len(s.Notices) != len(want) {
		t.Fatalf("notices %+v", s.Notices)
	}
	for i, n := range s.Notices {
		if got := n.Kind + " " + n.Story + " " + n.Text; got != want[i] {
			t.Errorf("notice %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
}

// A worker number past the most a run has (a crafted or corrupt line)
// sizes nothing: the reader refuses such a line, and an Event that comes
// some other way still gives at most MaxWorkers slots.
func TestHugeWorkerNumberAllocatesNothing(t *testing.T) {
	var s State
	s.Apply(ev(t, 0, "run_start", map[string]any{"plan": "plan.md", "workers": 2}))
	s.Apply(ev(t, 1, "iteration_start", map[string]any{"iteration": 1, "story": "US-1", "worker": 1_000_000}))
	s.Apply(ev(t, 2, "tool", map[string]any{"story": "US-1", "iteration": 1, "worker": 1_000_000, "tool": "Read: a"}))
	if len(s.Slots) > events.MaxWorkers {
		t.Fatalf("%d worker slots for one crafted worker number", len(s.Slots))
	}
}

// watch --plain prints an attempt's start on one line: a long title is
// cut to termtext.TitleWidth cells there.
func TestLineCutsLongTitle(t *testing.T) {
	title := strings.Repeat("make the 报告 page faster ", 200)
	got := Line(ev(t, 0, "iteration_start", map[string]any{"story": "US-1", "iteration": 1, "attempt": 1, "attempts": 2, "title": title}))
	_, shown, ok := strings.Cut(got, "iteration 1, attempt 1/2: ")
	if !ok || termtext.Width(shown) > termtext.TitleWidth || !strings.HasSuffix(shown, "…") || !strings.HasPrefix(shown, "make the 报告") {
		t.Errorf("Line = %.300q (%d cells)", got, termtext.Width(got))
	}
}
