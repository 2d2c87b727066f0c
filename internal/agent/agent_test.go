package agent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/proc"
)

// TestMain lets the test binary act as wiggum's supervisor, as the real
// binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == proc.SuperviseArg {
		os.Exit(proc.Supervise(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func sh(t *testing.T, script string) Profile {
	t.Helper()
	p, err := Custom(script)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPromptOnStdinAndExitCode(t *testing.T) {
	var lines []string
	res, err := Run(context.Background(), sh(t, `cat; echo "env=$FOO" >&2; exit 3`), Options{
		Dir: t.TempDir(), Env: append(os.Environ(), "FOO=bar"), Prompt: "hello {{STORY}} $HOME\n",
		Line: func(s string) { lines = append(lines, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || res.Stopped != "" {
		t.Errorf("exit %d stopped %q", res.ExitCode, res.Stopped)
	}
	if strings.Join(lines, "|") != "hello {{STORY}} $HOME|env=bar" {
		t.Errorf("lines = %q", lines)
	}
	if !strings.Contains(res.Output, "env=bar") {
		t.Errorf("tail = %q", res.Output)
	}
}

func pidGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil {
		return true
	}
	// A zombie still answers kill(0); it is dead for our purpose.
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return strings.Contains(string(data), ") Z ")
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	for i := 0; i < 200; i++ {
		data, err := os.ReadFile(path)
		if err == nil && strings.TrimSpace(string(data)) != "" {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func TestTimeoutKillsTheWholeGroup(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "child.pid")
	// The child ignores SIGTERM, so only the SIGKILL after grace ends it. The
	// timeout leaves a loaded machine ample time to start the child first.
	res, err := Run(context.Background(), sh(t, `sh -c 'trap "" TERM; echo $$ > child.pid; while :; do sleep 1; done' & wait`), Options{
		Dir: dir, Timeout: 2 * time.Second, Grace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != StopTimeout {
		t.Errorf("stopped = %q, want timeout", res.Stopped)
	}
	pid := readPID(t, pidfile)
	if !pidGone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("agent's child %d outlived the timeout", pid)
	}
}

func TestIdleTimeout(t *testing.T) {
	res, err := Run(context.Background(), sh(t, `echo working; sleep 30`), Options{
		Dir: t.TempDir(), IdleTimeout: 200 * time.Millisecond, Grace: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != StopIdle || res.ExitCode == 0 {
		t.Errorf("stopped %q exit %d", res.Stopped, res.ExitCode)
	}
}

// An idle limit under 4ns (a quarter of it no interval) stops a silent
// agent as any other does; NewTicker panicked on it (hunt10 #7).
func TestIdleTimeoutOfNanoseconds(t *testing.T) {
	res, err := Run(context.Background(), sh(t, `sleep 30`), Options{
		Dir: t.TempDir(), IdleTimeout: 3 * time.Nanosecond, Grace: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != StopIdle {
		t.Errorf("stopped %q exit %d, want stopped as idle", res.Stopped, res.ExitCode)
	}
}

// An agent that keeps talking outlives an idle timeout shorter than its run.
// The gaps between lines (0.1 s) are 40 times shorter than the timeout, so a
// loaded machine does not make the test flaky.
func TestChattyAgentIsNotIdle(t *testing.T) {
	res, err := Run(context.Background(), sh(t, `i=0; while [ $i -lt 60 ]; do echo $i; sleep 0.1; i=$((i+1)); done`), Options{
		Dir: t.TempDir(), IdleTimeout: 4 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "" || res.ExitCode != 0 {
		t.Errorf("stopped %q exit %d", res.Stopped, res.ExitCode)
	}
}

func TestHugeOutputAndUnreadPrompt(t *testing.T) {
	n := 0
	// 8 MiB of output, one 2 MiB line, and a 4 MiB prompt nobody reads.
	res, err := Run(context.Background(), sh(t, `head -c 2097152 /dev/zero | tr '\0' x; echo; yes line | head -n 600000; echo end`), Options{
		Dir: t.TempDir(), Prompt: strings.Repeat("p", 4<<20),
		Line: func(string) { n++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Errorf("exit %d", res.ExitCode)
	}
	if n < 600002 {
		t.Errorf("lines = %d", n)
	}
	if len(res.Output) > tailBytes || !strings.HasSuffix(res.Output, "line\nend\n") {
		t.Errorf("tail of %d bytes ends %q", len(res.Output), res.Output[max(0, len(res.Output)-20):])
	}
}

func TestCancelStopsAgent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	res, err := Run(ctx, sh(t, `sleep 30`), Options{Dir: t.TempDir(), Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != StopInterrupted || res.ExitCode == 0 {
		t.Errorf("stopped %q exit %d", res.Stopped, res.ExitCode)
	}
}

const streamFixture = `{"type":"system","subtype":"init","cwd":"/x","session_id":"s","tools":["Bash"],"model":"claude-opus-4-6"}
{"type":"assistant","message":{"content":[{"type":"text","text":"I will add the file."},{"type":"tool_use","name":"Bash","input":{"command":"go test ./...\nmore"}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}
{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1774447200,"rateLimitType":"five_hour"}}
not json at all
{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"done","total_cost_usd":0.0123,"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":7}}
`

func TestStreamJSON(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "out.jsonl"), []byte(streamFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	var events []string
	var lines []string
	res, err := Run(context.Background(), sh(t, `cat out.jsonl`), Options{
		Dir:   dir,
		Event: func(e Event) { events = append(events, e.Kind+":"+e.Text) },
		Line:  func(s string) { lines = append(lines, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"init:session started (claude-opus-4-6)", "text:I will add the file.", "tool:Bash: go test ./...", "result:success"}
	if strings.Join(events, "|") != strings.Join(want, "|") {
		t.Errorf("events = %q", events)
	}
	if strings.Join(lines, "|") != "not json at all" {
		t.Errorf("lines = %q", lines)
	}
	if res.Usage != (Usage{CostUSD: 0.0123, InputTokens: 100, OutputTokens: 7, Turns: 3}) {
		t.Errorf("usage = %+v", res.Usage)
	}
	if res.Limit != nil {
		t.Errorf("limit = %+v on an allowed rate_limit_event", res.Limit)
	}
}

func TestUsageLimitDetection(t *testing.T) {
	now := time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		line  string
		reset time.Time
	}{
		"rejected event": {`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795300000,"rateLimitType":"five_hour"}}`, time.Unix(1795300000, 0)},
		"epoch result":   {`{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1795300000"}`, time.Unix(1795300000, 0)},
		"zone text":      {`{"type":"result","is_error":true,"result":"You've hit your limit · resets 1:30am (UTC)"}`, time.Date(2026, 11, 22, 1, 30, 0, 0, time.UTC)},
		"same day":       {`{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"5-hour limit reached ∙ resets 11pm"}]}}`, time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)},
		"dated":          {`{"type":"result","is_error":true,"result":"You've hit your limit · resets Dec 2 at 4pm (UTC)"}`, time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)},
		"no time":        {`{"type":"result","is_error":true,"result":"usage limit reached, resets soon"}`, time.Time{}},
	} {
		p := parser{now: func() time.Time { return now }}
		if _, ok := p.line([]byte(c.line)); !ok {
			t.Errorf("%s: not parsed", name)
			continue
		}
		if p.limit == nil {
			t.Errorf("%s: no limit detected", name)
			continue
		}
		if !p.limit.Reset.Equal(c.reset) {
			t.Errorf("%s: reset %v, want %v", name, p.limit.Reset, c.reset)
		}
	}
	// The model's own words about limits - a story about rate limiting,
	// its banner text, gRPC's RESOURCE_EXHAUSTED - in its messages and in
	// a result that is no error, are not the client's limit (hunt 13:
	// a finished story rolled back, the run stopped, waiting for nothing).
	for _, line := range []string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"the rate limiter resets the bucket"}]}}`,
		`{"type":"assistant","message":{"model":"claude-sonnet-4-5","content":[{"type":"text","text":"Done: the banner now reads \"You've hit your usage limit - resets 5pm\" when the API rejects a request."}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"Done: the client now retries gRPC calls that fail with RESOURCE_EXHAUSTED, with back-off."}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"Handled API Error: 429 in the retry loop; usage limit reached resets at 5pm is shown."}`,
		`{"type":"item.completed","item":{"type":"agent_message","text":"Added a test for \"You've hit your usage limit ... try again at 1:17 PM.\""}}`,
	} {
		p := parser{now: func() time.Time { return now }}
		p.line([]byte(line))
		if p.limit != nil {
			t.Errorf("the model's text taken for a limit: %s: %+v", line, p.limit)
		}
	}
}

func TestProfiles(t *testing.T) {
	for _, n := range Names() {
		p, err := Builtin(n)
		if err != nil || len(p.Argv) < 2 || p.Argv[0] != n {
			t.Errorf("%s: %+v %v", n, p, err)
		}
	}
	if _, err := Builtin("vim"); err == nil {
		t.Error("unknown agent accepted")
	}
	if _, err := Custom("  "); err == nil {
		t.Error("empty --agent-cmd accepted")
	}
	for cmd, want := range map[string]string{
		"my-agent --yes -m fast":   "my-agent|--yes|-m|fast",
		"./bin/agent.sh":           "./bin/agent.sh",
		"agent --model=x":          "agent|--model=x",
		"agent 'quoted arg'":       "sh|-c|agent 'quoted arg'",
		"agent $HOME":              "sh|-c|agent $HOME",
		"agent | tee log":          "sh|-c|agent | tee log",
		"FOO=1 agent":              "sh|-c|FOO=1 agent",
		"agent *.go":               "sh|-c|agent *.go",
		"agent ~/x":                "sh|-c|agent ~/x",
		"agent; rm -rf x":          "sh|-c|agent; rm -rf x",
		"agent\\ with\\ backslash": "sh|-c|agent\\ with\\ backslash",
	} {
		p, err := Custom(cmd)
		if err != nil || strings.Join(p.Argv, "|") != want {
			t.Errorf("Custom(%q) = %q, want %q", cmd, p.Argv, want)
		}
	}
}

// A tool event carries the tokens so far: each message counted once though
// claude repeats its usage on every content block.
func TestToolEventRunningTokens(t *testing.T) {
	p := parser{now: time.Now}
	lines := []string{
		`{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":3},"content":[{"type":"text","text":"hi"}]}}`,
		`{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":4},"content":[{"type":"tool_use","name":"Read","input":{"file_path":"a.go"}}]}}`,
		`{"type":"assistant","message":{"id":"m2","usage":{"input_tokens":20,"output_tokens":6},"content":[{"type":"tool_use","name":"Bash","input":{"command":"go test"}}]}}`,
	}
	var tools []Event
	for _, l := range lines {
		evs, ok := p.line([]byte(l))
		if !ok {
			t.Fatalf("not parsed: %s", l)
		}
		for _, e := range evs {
			if e.Kind == "tool" {
				tools = append(tools, e)
			}
		}
	}
	if len(tools) != 2 {
		t.Fatalf("tool events = %+v", tools)
	}
	// Read is no shell command: only Bash goes through the guard hook.
	if p.tools != 2 || p.shells != 1 {
		t.Errorf("%d tools, %d shell commands; want 2 and 1", p.tools, p.shells)
	}
	if got := tools[0].Usage; got.InputTokens != 15 || got.OutputTokens != 4 {
		t.Errorf("first tool usage = %+v, want 15 in / 4 out", got)
	}
	if got := tools[1].Usage; got.InputTokens != 35 || got.OutputTokens != 10 {
		t.Errorf("second tool usage = %+v, want 35 in / 10 out", got)
	}
}

// Agents whose start writes shared state (codex: its home directory) are
// started one at a time in a process: the next once the last printed its
// first line. Three started at once by parallel workers log their starts
// and first lines in turn - never two starts before a first line.
func TestStartAloneStartsOneAtATime(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	prof := sh(t, `echo "start $WHO" >> `+log+`; sleep 0.3; echo "printed $WHO" >> `+log+`; echo '{"type":"started"}'; sleep 0.3`)
	prof.Name, prof.StartAlone = "start-alone-test", true
	done := make(chan error, 3)
	for _, who := range []string{"a", "b", "c"} {
		go func() {
			_, err := Run(context.Background(), prof, Options{Dir: dir, Env: append(os.Environ(), "WHO="+who)})
			done <- err
		}()
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(strings.ReplaceAll(string(data), "\n", " "))
	if len(lines) != 12 {
		t.Fatalf("log:\n%s", data)
	}
	for i := 0; i < 12; i += 4 {
		if lines[i] != "start" || lines[i+2] != "printed" || lines[i+1] != lines[i+3] {
			t.Fatalf("an agent started before the last one's first line:\n%s", data)
		}
	}
}

// A claude event line over a megabyte (an Edit's tool_use_result holding a
// 2 MB file, a long final answer) is parsed whole: its cost and tokens
// count (--max-cost), and none of its raw JSON is printed. A line longer
// than maxLine, and a long line that is no event, are shown clipped.
func TestLongLinesParsedWholeAndClipped(t *testing.T) {
	defer func(n int) { maxLine = n }(maxLine)
	maxLine = 4 << 20
	big := strings.Repeat(`{\"id\": 1, \"name\": \"fixture row\"},\n`, 60000) // ~2.3 MB
	stream := `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"ok"}]},"tool_use_result":{"originalFile":"` + big + `"}}
not json ` + strings.Repeat("x", 2<<20) + `
{"huge":"` + strings.Repeat("y", 5<<20) + `"}
{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"` + big + `","total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":7}}
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "out.jsonl"), []byte(stream), 0o644); err != nil {
		t.Fatal(err)
	}
	var events, lines []string
	res, err := Run(context.Background(), sh(t, `cat out.jsonl`), Options{
		Dir:   dir,
		Event: func(e Event) { events = append(events, e.Kind+":"+e.Text[:min(len(e.Text), 40)]) },
		Line:  func(s string) { lines = append(lines, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.CostUSD != 0.5 || res.Usage.OutputTokens != 7 {
		t.Errorf("usage of the long result line lost: %+v", res.Usage)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines shown, want the 2 that are no event: %.300q", len(lines), lines)
	}
	for i, l := range lines {
		if len(l) > maxShown+100 || !strings.Contains(l, "more bytes of this line not shown") {
			t.Errorf("line %d shown with %d bytes: %.200q", i, len(l), l)
		}
	}
	if !strings.HasPrefix(lines[0], "not json xxx") || !strings.HasPrefix(lines[1], `{"huge":"yyy`) {
		t.Errorf("lines = %.200q", lines)
	}
}
