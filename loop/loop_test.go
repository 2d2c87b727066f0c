package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/proc"
	"github.com/wiggum-dev/wiggum/internal/termtext"
)

// TestMain lets the test binary act as wiggum's supervisor.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == proc.SuperviseArg {
		os.Exit(proc.Supervise(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func TestRenderIsLiteral(t *testing.T) {
	got := Render("[{{STORY_ID}}] {{STORY}} #{{ITERATION}} {{UNKNOWN}} {{FAILURE_CONTEXT}}", Vars{
		StoryID: "US-1", Story: "uses {{ITERATION}} and $(rm -rf /) and \\1 and $1", Iteration: 7,
	})
	want := "[US-1] uses {{ITERATION}} and $(rm -rf /) and \\1 and $1 #7 {{UNKNOWN}} "
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for _, ph := range []string{"{{STORY_ID}}", "{{STORY_TITLE}}", "{{STORY}}", "{{PLAN_PATH}}", "{{PROGRESS_PATH}}", "{{ITERATION}}", "{{FAILURE_CONTEXT}}"} {
		if !strings.Contains(DefaultPrompt, ph) {
			t.Errorf("default prompt lacks %s", ph)
		}
	}
}

func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@e", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// newRepo makes a repository whose plan has n stories.
func newRepo(t testing.TB, n int) (*checkpoint.State, plan.Plan) {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q")
	gitT(t, dir, "config", "user.name", "T")
	gitT(t, dir, "config", "user.email", "t@e")
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] US-%d: story %d\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "init")
	st, err := checkpoint.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Resolve(st.Repo.Root, dir, plan.Source{File: "plan.md"})
	if err != nil {
		t.Fatal(err)
	}
	return st, p
}

func opts(p plan.Plan, script string) Options {
	prof, _ := agent.Custom(script)
	return Options{Plan: p, Agent: prof, Retries: 1, MaxIter: 50, NoProgress: 5}
}

func TestRuntimeStateNeverCommitted(t *testing.T) {
	st, p := newRepo(t, 2)
	var out bytes.Buffer
	o := opts(p, `cat >/dev/null; echo x > "f-$WIGGUM_STORY"`)
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(sum.Completed) != 2 || sum.Left != 0 {
		t.Errorf("summary %+v", sum)
	}
	files := gitT(t, st.Repo.Root, "log", "--name-only", "--format=")
	if strings.Contains(files, ".ralph") {
		t.Errorf("runtime state committed:\n%s", files)
	}
	for _, f := range []string{layout.LockFile, layout.RuntimeDir + "/" + ProgressFile, layout.RuntimeDir + "/events.jsonl"} {
		if _, err := os.Stat(st.Path(f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if s := gitT(t, st.Repo.Root, "status", "--porcelain"); s != "" {
		t.Errorf("tree not clean:\n%s", s)
	}
}

func TestLockHeldExits3(t *testing.T) {
	st, p := newRepo(t, 1)
	l, err := st.Acquire(context.Background(), layout.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = Run(context.Background(), st, opts(p, "true"))
	var he *layout.HeldError
	if !errors.As(err, &he) {
		t.Errorf("err = %v, want a HeldError", err)
	}
	if log := gitT(t, st.Repo.Root, "log", "--format=%s"); log != "init\n" {
		t.Errorf("history changed while locked:\n%s", log)
	}
}

func TestValidate(t *testing.T) {
	st, p := newRepo(t, 1)
	for name, mod := range map[string]func(*Options){
		"negative iterations": func(o *Options) { o.MaxIter = -1 },
		"too many":            func(o *Options) { o.MaxIter = MaxIterationsLimit + 1 },
		"negative retry":      func(o *Options) { o.Retries = -1 },
		"no breaker":          func(o *Options) { o.NoProgress = 0 },
	} {
		o := opts(p, "true")
		mod(&o)
		if _, err := Run(context.Background(), st, o); !badinput.Is(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestStopErrorWhenWorkLeft(t *testing.T) {
	st, p := newRepo(t, 3)
	o := opts(p, "cat >/dev/null; exit 1")
	o.Retries, o.NoProgress = 0, 10
	sum, err := Run(context.Background(), st, o)
	var se *StopError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v", err)
	}
	if len(sum.Skipped) != 3 || sum.Iterations != 3 {
		t.Errorf("summary %+v", sum)
	}
}

func TestDisplayLive(t *testing.T) {
	var b bytes.Buffer
	width := 40
	d := newDisplay(&b, true, false, func() int { return width })
	d.begin("US-1 (iteration 1)")
	d.line("hello")
	d.event(agent.Event{Kind: "tool", Text: "Bash: go test"})
	d.line("ok  \tgithub.com/wiggum-dev/wiggum/internal/report\t0.456s")
	d.line("✅ 已完成：添加了报告测试，所有测试都通过了，并且更新了文档")
	width = 24 // the window is narrowed mid-attempt
	d.event(agent.Event{Kind: "text", Text: "narrowed: plain ASCII that would wrap a 24-column window"})
	d.end()
	out := b.String()
	for _, want := range []string{"  │ hello\n", "  ▸ tool: Bash: go test\n", "⏵ US-1 (iteration 1)", "\r\x1b[K", "  │ ok  \tgithub.com/"} {
		if !strings.Contains(out, want) {
			t.Errorf("live output lacks %q:\n%q", want, out)
		}
	}
	cols := 40
	for _, seg := range strings.Split(out, "\r\x1b[K") {
		lines := strings.Split(seg, "\n")
		// The status line is the text after the last newline of a segment.
		status := lines[len(lines)-1]
		if strings.Contains(status, "narrowed") {
			cols = 24
		}
		if strings.Contains(status, "\t") || termtext.Width(status) >= cols {
			t.Errorf("a status line of %d cells would wrap a %d-column terminal: %q", termtext.Width(status), cols, status)
		}
	}
	b.Reset()
	d = newDisplay(&b, false, true, nil)
	d.begin("US-2")
	d.line("hidden")
	d.printf("shown")
	d.end()
	if b.String() != "shown\n" {
		t.Errorf("plain quiet output = %q", b.String())
	}
}

// The status line is cut by terminal cells, not runes: a tab (every go
// test result line), CJK text or an emoji takes more than one, and a line
// that wraps leaves a copy of itself at each redraw.
func TestStatusLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		cols int
		want string
	}{
		{"⏵ US-1 · 3s · ok  \tpkg\t0.4s", 80, "⏵ US-1 · 3s · ok   pkg 0.4s"},
		{"⏵ US-1 · 3s · 已完成：添加了报告测试", 20, "⏵ US-1 · 3s · 已完…"},
		{"⏵ US-1 · 3s · ✅✅✅✅✅✅", 20, "⏵ US-1 · 3s · ✅✅…"},
		{"⏵ US-1 · 3s · text: two\nlines", 80, "⏵ US-1 · 3s · text: two lines"},
		{"⏵ US-1 · 3s · \x1b]0;PWNED\x07\x1b[2Jhi", 80, "⏵ US-1 · 3s · hi"},
		{strings.Repeat("x", 100), 0, strings.Repeat("x", 78) + "…"},
		{"⏵ US-1", 1, "…"},
	} {
		got := statusLine(c.in, c.cols)
		if got != c.want {
			t.Errorf("statusLine(%q, %d) = %q, want %q", c.in, c.cols, got, c.want)
		}
		if cols := max(c.cols, 2); c.cols != 0 && termtext.Width(got) >= cols {
			t.Errorf("statusLine(%q, %d) takes %d cells: it wraps", c.in, c.cols, termtext.Width(got))
		}
	}
}

func TestRetryPromptCarriesOnlyThisRunsFailure(t *testing.T) {
	st, p := newRepo(t, 1)
	dir := t.TempDir()
	// First run: every attempt fails, leaving failures in the log.
	o := opts(p, `cat > "`+dir+`/old-$WIGGUM_ITERATION"; echo OLD-RUN-OUTPUT; exit 1`)
	o.Retries = 0
	if _, err := Run(context.Background(), st, o); !errors.As(err, new(*StopError)) {
		t.Fatalf("first run: %v", err)
	}
	// Second run: the first attempt must not see the old run's failure,
	// the retry must see this run's.
	o = opts(p, `cat > "`+dir+`/new-$WIGGUM_ITERATION"; [ "$WIGGUM_ITERATION" = 2 ] && exit 0; echo NEW-RUN-OUTPUT; exit 1`)
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("second run: %v", err)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "new-1"))
	second, _ := os.ReadFile(filepath.Join(dir, "new-2"))
	if strings.Contains(string(first), "previous attempt") {
		t.Errorf("first attempt of a new run got an old failure:\n%s", first)
	}
	if !strings.Contains(string(second), "NEW-RUN-OUTPUT") || strings.Contains(string(second), "OLD-RUN-OUTPUT") {
		t.Errorf("retry prompt:\n%s", second)
	}
}

// The agent's git starts no automatic maintenance (git 2.5x runs it
// detached after a commit and it packs refs; killed with the agent's
// process group it can leave packed-refs.new behind, and every ref
// deletion after it fails), and config the user passes through the
// environment still reaches it.
func TestAgentGitRunsNoAutoMaintenance(t *testing.T) {
	st, p := newRepo(t, 1)
	dir := t.TempDir()
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "wiggum.mine")
	t.Setenv("GIT_CONFIG_VALUE_0", "kept")
	o := opts(p, `cat >/dev/null; for k in maintenance.auto gc.auto wiggum.mine; do git config --get $k >> "`+dir+`/config"; done; echo x > "f-$WIGGUM_STORY"`)
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "config"))
	if string(got) != "false\n0\nkept\n" {
		t.Fatalf("the agent's git config: %q", got)
	}
}

// writeCounter counts the writes made to it, keeping what they held.
type writeCounter struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.b.Write(p)
}

// An agent's output is echoed in batches: a chatty agent (a build log)
// costs a write per batch, not one per line - which at a write and a
// status-line redraw per line held the agent back to ~2 MB/s - and every
// line still comes out, in order.
func TestEchoIsBatched(t *testing.T) {
	const lines = 20000
	st, p := newRepo(t, 1)
	out := &writeCounter{}
	o := opts(p, `cat >/dev/null; seq `+strconv.Itoa(lines)+`; echo x > f`)
	o.Out, o.MaxIter = out, 1
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("%v\n%s", err, out.b.String())
	}
	var want strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "  │ %d\n", i)
	}
	if !strings.Contains(out.b.String(), want.String()) {
		t.Errorf("the agent's output is not all echoed in order:\n%.2000s", out.b.String())
	}
	if out.writes > lines/20 {
		t.Errorf("%d lines of output took %d writes: the echo is not batched", lines, out.writes)
	}

	// On a terminal the status line is redrawn per batch, not per line.
	live := &writeCounter{}
	d := newDisplay(live, true, false, func() int { return 80 })
	d.begin("US-1 (iteration 1)")
	for i := 1; i <= lines; i++ {
		d.line(strconv.Itoa(i))
	}
	d.end()
	s := live.b.String()
	if draws := strings.Count(s, "⏵"); draws > lines/20 {
		t.Errorf("%d lines redrew the status line %d times", lines, draws)
	}
	if live.writes > lines/20 {
		t.Errorf("%d lines took %d writes on a terminal", lines, live.writes)
	}
	var got strings.Builder
	for l := range strings.Lines(s) {
		if _, rest, ok := strings.Cut(l, "  │ "); ok {
			got.WriteString("  │ " + rest)
		}
	}
	if got.String() != want.String() {
		t.Errorf("on a terminal the output is not all echoed in order")
	}
	if !strings.HasSuffix(s, "\n") && !strings.HasSuffix(s, "\r\x1b[K") {
		t.Errorf("the status line is left behind after the attempt: %q", s[max(0, len(s)-200):])
	}
}

// The run's summary counts a skipped story once, as skipped, not again
// as open: three stories all skipped leave none open.
func TestSummaryCountsSkippedOnce(t *testing.T) {
	st, p := newRepo(t, 4)
	out := &writeCounter{}
	o := opts(p, `cat >/dev/null; case "$WIGGUM_STORY" in US-4) echo x > f;; *) exit 1;; esac`)
	o.Out, o.Retries, o.NoProgress = out, 0, 10
	sum, _ := Run(context.Background(), st, o)
	if len(sum.Skipped) != 3 || len(sum.Completed) != 1 {
		t.Fatalf("summary %+v\n%s", sum, out.b.String())
	}
	if !strings.Contains(out.b.String(), "1 story(ies) done, 3 skipped (US-1, US-2, US-3), 0 open") {
		t.Errorf("the summary counts skipped stories as open:\n%s", out.b.String())
	}
}

// A story title over what an argument can hold (128 KiB on Linux) is
// committed all the same (the message goes to git on stdin), and the
// events the run writes stay lines its own reader takes: the title in
// them is cut, saying so.
func TestHugeTitleCommitsAndStaysReadable(t *testing.T) {
	st, _ := newRepo(t, 0)
	title := strings.Repeat("T", 1<<20+10)
	if err := os.WriteFile(st.Path("plan.md"), []byte("- [ ] US-1: "+title+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, st.Repo.Root, "commit", "-qam", "huge title")
	p, err := plan.Resolve(st.Repo.Root, st.Repo.Root, plan.Source{File: "plan.md"})
	if err != nil {
		t.Fatal(err)
	}
	out := &writeCounter{}
	o := opts(p, `cat >/dev/null; echo x > f`)
	o.Out, o.MaxIter = out, 1
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != 1 {
		t.Fatalf("summary %+v, %v\n%.3000s", sum, err, out.b.String())
	}
	if msg := strings.TrimSpace(gitT(t, st.Repo.Root, "log", "-1", "--format=%s")); msg != "US-1: "+title {
		t.Errorf("the commit's subject is not the whole title (%d bytes): ...%q", len(msg), msg[max(0, len(msg)-40):])
	}
	var titles []string
	bad, err := events.Scan(st.Path(layout.RuntimeDir+"/events.jsonl"), func(ev events.Event) error {
		if ev.Title != "" {
			titles = append(titles, ev.Title)
		}
		return nil
	})
	if err != nil || bad.Lines != 0 || len(titles) != 2 {
		t.Fatalf("the run's events: %d unreadable line(s), %d title(s), %v", bad.Lines, len(titles), err)
	}
	for _, tt := range titles {
		if len(tt) > 8<<10 || !strings.HasPrefix(tt, "TTTT") || !strings.Contains(tt, "more bytes") {
			t.Errorf("a title in the events is not cut, saying so: %d bytes, ends %q", len(tt), tt[max(0, len(tt)-60):])
		}
	}
}

// A long story title is shortened in the lines that report progress - the
// "── iteration" line of each attempt, and the dry run's list of stories -
// to TitleWidth cells, measured as a terminal does (a CJK character takes
// two); the commit, the events and the prompt keep it whole.
func TestLongTitleIsShortInProgressLines(t *testing.T) {
	st, _ := newRepo(t, 0)
	title := strings.Repeat("add the 报告 to the plan ", 40) // 1,040 cells
	if err := os.WriteFile(st.Path("plan.md"), []byte("- [ ] US-1: "+title+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, st.Repo.Root, "commit", "-qam", "long title")
	p, err := plan.Resolve(st.Repo.Root, st.Repo.Root, plan.Source{File: "plan.md"})
	if err != nil {
		t.Fatal(err)
	}
	short := func(out, marker, end string) {
		t.Helper()
		for _, l := range strings.Split(out, "\n") {
			i := strings.Index(l, marker)
			if i < 0 {
				continue
			}
			shown, ok := strings.CutSuffix(l[i+len(marker):], end)
			if !ok || !strings.HasSuffix(shown, "…") || !strings.HasPrefix(title, strings.TrimSuffix(shown, "…")) || termtext.Width(shown) > termtext.TitleWidth {
				t.Errorf("the title in %q is not cut to %d cells (%d cells): %.300q", marker, termtext.TitleWidth, termtext.Width(l), l)
			}
			return
		}
		t.Errorf("no line with %q in:\n%.2000s", marker, out)
	}

	var dry bytes.Buffer
	o := opts(p, `cat >/dev/null; echo x > f`)
	o.Out, o.MaxIter = &dry, 1
	if err := DryRun(st.Repo.Root, o); err != nil {
		t.Fatal(err)
	}
	short(dry.String(), "  [ ] US-1: ", "")
	if !strings.Contains(dry.String(), strings.TrimSpace(title)) {
		t.Error("the dry run's prompt does not hold the whole title")
	}

	var out bytes.Buffer
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != 1 {
		t.Fatalf("summary %+v, %v\n%.3000s", sum, err, out.String())
	}
	short(out.String(), "── iteration 1 · US-1: ", " (attempt 1 of 2)")
	if msg := strings.TrimSpace(gitT(t, st.Repo.Root, "log", "-1", "--format=%s")); msg != "US-1: "+strings.TrimSpace(title) {
		t.Errorf("the commit's subject is not the whole title: %q", msg)
	}
	var titles []string
	if _, err := events.Scan(st.Path(layout.RuntimeDir+"/events.jsonl"), func(ev events.Event) error {
		if ev.Title != "" {
			titles = append(titles, ev.Title)
		}
		return nil
	}); err != nil || len(titles) == 0 {
		t.Fatalf("the run's events: %d title(s), %v", len(titles), err)
	}
	for _, tt := range titles {
		if tt != strings.TrimSpace(title) {
			t.Errorf("an event's title is not the whole title: %.100q", tt)
		}
	}
}
