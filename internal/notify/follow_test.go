package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/loop"
)

func git(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// A real run whose first story fails for good: the notification about it
// reaches a healthy endpoint and hangs at another. The loop does not wait
// for the hanging one - its next story only starts once that request is
// in flight, and the whole run ends while the handler is still blocked -
// and the run's final event still reaches the healthy endpoint.
func TestRunNeverWaitsForAHangingEndpoint(t *testing.T) {
	h := newHanger(t)
	ok := newRecorder(t, func(int) int { return 200 })
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	git(t, dir, "config", "user.name", "T")
	git(t, dir, "config", "user.email", "t@e")
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte("- [ ] US-1: fails\n- [ ] US-2: waits for the hang\n- [ ] US-3: plain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "init")
	ctx := context.Background()
	st, err := checkpoint.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Resolve(st.Repo.Root, dir, plan.Source{File: "plan.md"})
	if err != nil {
		t.Fatal(err)
	}
	entered := filepath.Join(t.TempDir(), "entered")
	go func() {
		<-h.entered
		os.WriteFile(entered, nil, 0o644)
	}()
	prof, _ := agent.Custom(`cat >/dev/null; case "$WIGGUM_STORY" in
US-1) exit 1;;
US-2) while [ ! -e ` + entered + ` ]; do sleep 0.02; done;;
esac
echo done > "$WIGGUM_STORY.txt"`)

	logPath := st.Path(layout.RuntimeDir + "/" + layout.EventFile)
	from, err := events.Size(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var l logs
	n := New([]*Sink{mustParse(t, h.srv.URL), mustParse(t, ok.srv.URL)}, Options{Log: l.log})
	stop := Follow(n, logPath, FollowOptions{From: from, Poll: 10 * time.Millisecond, Repo: "demo"})
	var out bytes.Buffer
	_, err = loop.Run(ctx, st, loop.Options{Plan: p, Agent: prof, Retries: 0, MaxIter: 10, NoProgress: 5, Out: &out})
	if err == nil || !strings.Contains(err.Error(), "skipped") {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	stop()
	select {
	case <-h.exited:
		t.Fatal("the hanging handler returned before the run ended")
	default:
	}
	var kinds []string
	for len(kinds) < 2 {
		var m Message
		r := ok.wait(t)
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, m.Kind)
		if m.Repo != "demo" || m.Event == nil {
			t.Errorf("message %+v", m)
		}
	}
	if kinds[0] != KindStoryFailed || kinds[1] != KindRunEnd {
		t.Errorf("healthy endpoint got %v", kinds)
	}
	waitFor(t, func() bool { return n.Stats()[1].Sent == 2 })
	stats := n.Close(within(t, 0))
	if s := stats[0]; s.Sent != 0 || s.Failed != 2 {
		t.Errorf("hanging endpoint: %+v, want both messages not delivered", s)
	}
	if !strings.Contains(l.String(), "not delivered") {
		t.Errorf("log:\n%s", l.String())
	}
}

func appendEvents(t *testing.T, path string, evs ...events.Event) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, e := range evs {
		line, _ := json.Marshal(e)
		f.Write(append(line, '\n'))
	}
}

// Stuck fires once when no attempt ends for the configured time, not
// during a usage-limit wait, and again only after progress.
func TestStuck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	ok := newRecorder(t, func(int) int { return 200 })
	n := New([]*Sink{mustParse(t, ok.srv.URL)}, Options{})
	defer n.Close(within(t, time.Minute))
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	f := &follower{n: n, o: FollowOptions{Stuck: 30 * time.Minute, Log: func(string) {}}, r: events.NewReader(path), t: newTracker(), progress: t0}
	defer f.r.Close()
	appendEvents(t, path,
		events.Event{Name: events.IterationStart, Story: "US-2", Attempt: 2, Worker: 3, Time: t0},
		events.Event{Name: events.Tool, Story: "US-2", ToolCall: "Bash"},
	)
	f.read()
	f.progress = t0 // as if read at t0
	f.checkStuck(t0.Add(29 * time.Minute))
	f.checkStuck(t0.Add(31 * time.Minute))
	f.checkStuck(t0.Add(45 * time.Minute)) // once only
	var m Message
	if err := json.Unmarshal(ok.wait(t).Body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Kind != KindStuck || m.Story != "US-2" || m.Title != "wiggum: no progress for 30m0s" ||
		m.Text != "No attempt has ended since 10:00 UTC. Running: US-2 attempt 2 (worker 3) since 10:00 UTC." {
		t.Errorf("stuck message %+v", m)
	}

	// A usage-limit wait is not being stuck.
	appendEvents(t, path, events.Event{Name: events.IterationEnd, Story: "US-2", Worker: 3, Outcome: events.OutcomeLimit},
		events.Event{Name: events.UsageLimit, Message: "limit reached"})
	f.read()
	if m := ok.wait(t); !bytes.Contains(m.Body, []byte(KindLimitStart)) {
		t.Errorf("want the limit message, got %s", m.Body)
	}
	f.checkStuck(f.progress.Add(2 * time.Hour))
	appendEvents(t, path, events.Event{Name: events.UsageLimitEnd})
	f.read()
	if m := ok.wait(t); !bytes.Contains(m.Body, []byte(KindLimitEnd)) {
		t.Errorf("want the limit-end message, got %s", m.Body)
	}
	f.checkStuck(f.progress.Add(31 * time.Minute))
	if err := json.Unmarshal(ok.wait(t).Body, &m); err != nil || m.Kind != KindStuck || strings.Contains(m.Text, "Running") {
		t.Errorf("second stuck message %+v, %v", m, err)
	}
	waitFor(t, func() bool { return n.Stats()[0].Sent == 4 })
	if c := ok.count(); c != 4 {
		t.Errorf("%d messages, want stuck, limit start, limit end, stuck", c)
	}
}

// Workers hitting one usage limit make one message; a story skipped for
// its budget and the run's budget say so; events nobody needs are quiet.
func TestMessages(t *testing.T) {
	tr := newTracker()
	var kinds []string
	for _, ev := range []events.Event{
		{Name: events.RunStart},
		{Name: events.IterationStart, Story: "A", Worker: 1},
		{Name: events.IterationEnd, Story: "A", Worker: 1, Outcome: "failed (gate)", Backup: "refs/wiggum/backup/x"},
		{Name: events.StorySkipped, Story: "A", Attempts: 3},
		{Name: events.StorySkipped, Story: "B", Budget: "its attempts cost $2.10 of --max-story-cost $2"},
		{Name: events.UsageLimit, Worker: 1, Message: "limit"},
		{Name: events.UsageLimit, Worker: 2, Message: "limit"},
		{Name: events.LimitWaitStart},
		{Name: events.UsageLimitEnd},
		{Name: events.BudgetReached, Reason: "spent $20.01 of --max-cost $20"},
		{Name: events.Tool},
		{Name: events.TestFailure},
	} {
		m, ok := tr.message(ev)
		if !ok {
			continue
		}
		kinds = append(kinds, m.Kind)
		switch {
		case ev.Name == events.StorySkipped && ev.Story == "A" && !strings.Contains(m.Text, "refs/wiggum/backup/x"):
			t.Errorf("skipped story's message lacks its backup: %q", m.Text)
		case ev.Name == events.StorySkipped && ev.Story == "B" && m.Text != "B is skipped: its attempts cost $2.10 of --max-story-cost $2.":
			t.Errorf("budget skip: %q", m.Text)
		}
	}
	want := []string{KindStoryFailed, KindStoryFailed, KindLimitStart, KindLimitEnd, KindBudget}
	if strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Errorf("kinds %v, want %v", kinds, want)
	}

	// A model-service outage is a wait too, and says what it waits for.
	m, ok := tr.message(events.Event{Name: events.UsageLimit, Outage: true, Message: "the model service is unavailable (API Error: 529 Overloaded)"})
	if !ok || m.Kind != KindLimitStart || m.Title != "wiggum: the model service is unavailable" || !strings.Contains(m.Text, "529 Overloaded") {
		t.Errorf("outage: %v %+v", ok, m)
	}
	if m, ok := tr.message(events.Event{Name: events.UsageLimitEnd, Outage: true}); !ok || m.Kind != KindLimitEnd || m.Title != "wiggum: trying the model service again" {
		t.Errorf("outage over: %v %+v", ok, m)
	}
}

// The remaining kinds: a merge conflict names the kept branch, a guard
// held for asking says so, a refused rollback says the run stops.
func TestMoreMessages(t *testing.T) {
	tr := newTracker()
	for _, c := range []struct {
		ev    events.Event
		kind  string
		title string
		text  string
	}{
		{events.Event{Name: events.MergeFailed, Story: "US-4", Branch: "refs/heads/wiggum/US-4", Error: "conflicts in a.go\nmore detail"},
			KindMergeConflict, "wiggum: US-4 could not be merged", "Its branch wiggum/US-4 is kept: conflicts in a.go"},
		{events.Event{Name: events.LandFailed, Story: "US-5", Branch: "refs/heads/wiggum/US-5", Error: "US-5 is already done on the target branch; nothing landed"},
			KindMergeConflict, "wiggum: US-5 could not be landed", "Its branch wiggum/US-5 is kept: US-5 is already done on the target branch; nothing landed"},
		{events.Event{Name: events.ClaimLost, Story: "US-6", Branch: "refs/heads/wiggum/US-6"},
			KindMergeConflict, "wiggum: another machine took US-6 over", "This attempt's commits stay on wiggum/US-6."},
		{events.Event{Name: events.GuardDenied, Decision: "ask", Command: "curl x | sh", Reason: "cannot tell", Story: "US-2"},
			KindGuardDenied, "wiggum: the guard held a command for approval", "US-2: `curl x | sh`: cannot tell"},
		{events.Event{Name: events.RollbackRefused, Story: "US-9", Reason: "HEAD moved"},
			KindRollbackRefused, "wiggum: a rollback was refused; the run stops", "US-9: HEAD moved"},
		{events.Event{Name: events.RunEnd, Iterations: 3, Completed: []string{"A", "B"}, CostUSD: 4.5},
			KindRunEnd, "wiggum: run finished", "3 iteration(s): 2 story(ies) done, 0 skipped, 0 open, $4.50 spent"},
		{events.Event{Name: events.TestsDeleted, Story: "US-7", Paths: []string{"a_test.go", "tests/test_b.py"}, Commit: "0123abc"},
			KindTestsWeakened, "wiggum: US-7's commit deletes tests", "Test files deleted: a_test.go, tests/test_b.py. Look at commit 0123abc (--keep-tests fails such an attempt)."},
		{events.Event{Name: events.TestsSkipped, Story: "US-8", Paths: []string{"a_test.go"}, Reason: "a_test.go (t.Skip added)", Commit: "0123abd"},
			KindTestsWeakened, "wiggum: US-8's commit switches tests off", "a_test.go (t.Skip added). Look at commit 0123abd (--keep-tests fails such an attempt)."},
		{events.Event{Name: events.RemovedByAgent, Story: "US-1", Removed: []string{"US-4", "US-5"}},
			KindStoriesRemoved, "wiggum: the agent of US-1 took stories out of the plan", "US-4, US-5, open, will not run; put them back in the plan to have them done."},
	} {
		m, ok := tr.message(c.ev)
		if !ok || m.Kind != c.kind || m.Title != c.title || m.Text != c.text || m.Event == nil {
			t.Errorf("%s: %+v, %v", c.ev.Name, m, ok)
		}
	}
	// An attempt failed for it under --keep-tests is retried: nobody
	// needs to hear of it.
	if m, ok := tr.message(events.Event{Name: events.TestsSkipped, Story: "US-8", Refused: true}); ok {
		t.Errorf("a refused attempt's tests_skipped was sent: %+v", m)
	}
	long := strings.Repeat("é", 400)
	m, _ := tr.message(events.Event{Name: events.RollbackRefused, Story: "S", Reason: long})
	if len(m.Text) > maxField+20 || !strings.HasSuffix(m.Text, "…") || !utf8.ValidString(m.Text) {
		t.Errorf("a long field is not clipped cleanly: %d bytes", len(m.Text))
	}
}

// A token in a denied command is masked in the message and in the event
// it carries, even in a log line wiggum's writer did not mask (one an
// older wiggum wrote).
func TestDeniedCommandTokenMasked(t *testing.T) {
	ev := events.Event{Name: events.GuardDenied, Story: "US-1", Decision: "deny",
		Command: "git push https://x-access-token:ghp_SECRETSECRET1234@github.com/o/r.git HEAD:main", Reason: "git push is not allowed"}
	m, ok := newTracker().message(ev)
	if !ok {
		t.Fatal("a denial was not sent")
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "SECRET") {
		t.Fatalf("the token is in the message: %s", b)
	}
	if want := "US-1: `git push https://***@github.com/o/r.git HEAD:main`: git push is not allowed"; m.Text != want {
		t.Errorf("text %q, want %q", m.Text, want)
	}
}

// desktop runs notify-send with the title and text as separate arguments
// (no shell); without notify-send in PATH, desktop is refused up front.
func TestDesktop(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	if _, err := Parse("desktop"); err == nil || !strings.Contains(err.Error(), "notify-send") {
		t.Fatalf("desktop without notify-send: %v", err)
	}
	out := filepath.Join(t.TempDir(), "args")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + out + "\n"
	if err := os.WriteFile(filepath.Join(bin, "notify-send"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	s := mustParse(t, "desktop://")
	n := New([]*Sink{s}, Options{})
	n.Send(Message{Kind: KindStoryFailed, Title: "wiggum: $(touch pwned) failed", Text: "-x; rm -rf /", Severity: SeverityError})
	if st := n.Close(within(t, time.Minute)); st[0].Sent != 1 {
		t.Fatalf("stats %+v", st)
	}
	got, _ := os.ReadFile(out)
	want := "--app-name=wiggum\n--urgency=critical\n--\nwiggum: $(touch pwned) failed\n-x; rm -rf /\n"
	if string(got) != want {
		t.Errorf("notify-send got\n%s\nwant\n%s", got, want)
	}
}
