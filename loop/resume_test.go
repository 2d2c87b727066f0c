package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// costLine is a stream-json result line reporting cost.
func costLine(usd string, ok bool) string {
	isErr := "true"
	if ok {
		isErr = "false"
	}
	return `echo '{"type":"result","subtype":"success","is_error":` + isErr + `,"result":"r","total_cost_usd":` + usd + `,"usage":{"input_tokens":10,"output_tokens":5}}'`
}

const limitLine = `echo '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":'$(( $(date +%s) + 3600 ))',"rateLimitType":"five_hour"}}'`

func journalPath(t *testing.T, dir string) string {
	return filepath.Join(dir, ".ralph/wiggum", JournalFile)
}

// A run stopped by a usage limit stays open; the next run resumes it with
// the failed attempt counted, its failure in the prompt, and its spending.
func TestResumeKeepsAttemptsFailuresAndSpending(t *testing.T) {
	st, p := newRepo(t, 1)
	dir := t.TempDir()
	// Attempt 1 fails (costing $0.25), attempt 2 hits the limit.
	script := `n=$(cat "` + dir + `/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "` + dir + `/n"
cat > "` + dir + `/prompt-$n"
case $n in
1) echo BROKEN-BUILD-OUTPUT; ` + costLine("0.25", false) + `; exit 1 ;;
2) ` + limitLine + `; exit 1 ;;
*) echo ok > done.txt; ` + costLine("0.5", true) + ` ;;
esac`
	o := opts(p, script)
	o.Retries = 2
	var out bytes.Buffer
	o.Out = &out
	_, err := Run(context.Background(), st, o)
	var lim *limitStop
	if !errors.As(err, &lim) || !isStop(err) {
		t.Fatalf("first run: %v\n%s", err, out.String())
	}
	rs, err := ReadRunState(journalPath(t, st.Repo.Root))
	if err != nil || rs == nil || !rs.Open || rs.Failed != 1 || rs.SpentUSD != 0.25 {
		t.Fatalf("run state after the limit stop: %+v, %v", rs, err)
	}
	out.Reset()
	sum, err := Run(context.Background(), st, o)
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out.String())
	}
	if !sum.Resumed || sum.Spent != 0.75 {
		t.Errorf("summary %+v, want resumed with $0.75 spent", sum)
	}
	if !strings.Contains(out.String(), "(attempt 2 of 3)") {
		t.Errorf("the resumed run did not carry the failed attempt over:\n%s", out.String())
	}
	prompt, _ := os.ReadFile(filepath.Join(dir, "prompt-3"))
	if !strings.Contains(string(prompt), "BROKEN-BUILD-OUTPUT") {
		t.Errorf("the resumed run's prompt lacks the earlier failure:\n%s", prompt)
	}
	rs, err = ReadRunState(journalPath(t, st.Repo.Root))
	if err != nil || rs == nil || rs.Open {
		t.Errorf("a finished run's journal should be closed: %+v, %v", rs, err)
	}
}

// --max-cost stops dispatch with exit 5 saying what was spent; the next
// run of a killed one keeps the budget and the spending.
func TestBudgets(t *testing.T) {
	st, p := newRepo(t, 3)
	o := opts(p, `cat >/dev/null; echo x > "f-$WIGGUM_STORY"; `+costLine("0.4", true))
	o.MaxCost = 0.7
	var out bytes.Buffer
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	var se *StopError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	for _, want := range []string{"the run spent $0.80, reaching --max-cost $0.70", "1 story(ies) left"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("stop message %q lacks %q", err, want)
		}
	}
	if len(sum.Completed) != 2 {
		t.Errorf("completed %v, want 2 stories before the budget", sum.Completed)
	}

	// Per story: a story that keeps failing is given up at its budget.
	st2, p2 := newRepo(t, 2)
	o = opts(p2, `cat >/dev/null; if [ "$WIGGUM_STORY" = US-1 ]; then `+costLine("0.3", false)+`; exit 1; fi; echo x > f; `+costLine("0.1", true))
	o.Retries, o.MaxStoryCost = 10, 0.5
	sum, err = Run(context.Background(), st2, o)
	if !isStop(err) || len(sum.Skipped) != 1 || sum.Skipped[0] != "US-1" || len(sum.Completed) != 1 {
		t.Fatalf("story budget: %v, %+v", err, sum)
	}
	if sum.Iterations != 3 {
		t.Errorf("%d iterations, want 2 at US-1 (then over budget) and 1 at US-2", sum.Iterations)
	}
}

// A damaged journal is an error naming it, and the run changes nothing; a
// torn last record (a crash mid-append) is dropped.
func TestJournalDamage(t *testing.T) {
	st, p := newRepo(t, 1)
	path := journalPath(t, st.Repo.Root)
	good, err := encodeRec(journalRec{T: "run", Plan: "plan.md", Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	start, _ := encodeRec(journalRec{T: "start", Story: "US-1", Attempt: 1})
	for name, content := range map[string]string{
		"empty":          "",
		"garbage":        "not a journal\n",
		"bad checksum":   strings.Replace(string(good), "plan.md", "plan.mx", 1) + string(start),
		"no run record":  string(start),
		"damaged middle": string(good) + "{\"t\":\"start\"}\t00000000\n" + string(start),
	} {
		if err := statefile.Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		before := gitT(t, st.Repo.Root, "log", "--format=%H")
		_, err := Run(context.Background(), st, opts(p, "true"))
		var ce *statefile.CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), JournalFile) {
			t.Errorf("%s: err = %v, want a corrupt-journal error naming the file", name, err)
		}
		if after := gitT(t, st.Repo.Root, "log", "--format=%H"); after != before {
			t.Errorf("%s: history changed", name)
		}
		if data, _ := os.ReadFile(path); string(data) != content {
			t.Errorf("%s: the journal was changed", name)
		}
	}
	// Torn: the last record has no newline, or the file system padded it.
	for name, tail := range map[string]string{"cut short": `{"t":"end","sto`, "zero padded": "\x00\x00\x00\x00\n"} {
		recs, n, torn, err := func() ([]journalRec, int64, bool, error) {
			if err := os.WriteFile(path, append(append([]byte{}, good...), tail...), 0o644); err != nil {
				t.Fatal(err)
			}
			return readJournal(path)
		}()
		if err != nil || !torn || len(recs) != 1 || n != int64(len(good)) {
			t.Errorf("%s: %d records, %d good bytes, torn %v, %v", name, len(recs), n, torn, err)
		}
	}
}

// A journal of another plan is refused with the reason (exit 2, nothing
// changed) unless --fresh; stories removed from the plan are dropped.
func TestPlanChangedBetweenRuns(t *testing.T) {
	st, p := newRepo(t, 3)
	o := opts(p, `cat >/dev/null; `+limitLine+`; exit 1`)
	if _, err := Run(context.Background(), st, o); !isStop(err) {
		t.Fatalf("limit stop: %v", err)
	}
	other := filepath.Join(st.Repo.Root, "other.md")
	if err := os.WriteFile(other, []byte("- [ ] X-1: other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, st.Repo.Root, "add", "other.md")
	gitT(t, st.Repo.Root, "commit", "-qm", "other plan")
	op, err := plan.Resolve(st.Repo.Root, st.Repo.Root, plan.Source{File: "other.md"})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(journalPath(t, st.Repo.Root))
	_, err = Run(context.Background(), st, opts(op, "true"))
	if !badinput.Is(err) || !strings.Contains(err.Error(), "interrupted run of the plan plan.md") || !strings.Contains(err.Error(), "--fresh") {
		t.Fatalf("another plan: %v", err)
	}
	if after, _ := os.ReadFile(journalPath(t, st.Repo.Root)); !bytes.Equal(before, after) {
		t.Error("a refused run changed the journal")
	}

	// US-2 leaves the plan (US-1 was attempted and is journaled): dropped.
	if err := os.WriteFile(p.Path(), []byte("- [ ] US-3: story 3\n- [ ] US-4: new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, st.Repo.Root, "commit", "-qam", "edit plan")
	var out bytes.Buffer
	o = opts(p, `cat >/dev/null; echo x > "f-$WIGGUM_STORY"`)
	o.Out = &out
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("resume after the plan changed: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "US-1 is no longer in the plan: dropped") {
		t.Errorf("no note about the dropped story:\n%s", out.String())
	}
	rs, _ := ReadRunState(journalPath(t, st.Repo.Root))
	if rs == nil || rs.Open || strings.Join(rs.Done, ",") != "US-3,US-4" {
		t.Errorf("run state %+v", rs)
	}

	// --fresh starts over with the other plan.
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatal(err)
	}
	o2 := opts(op, `cat >/dev/null; `+limitLine+`; exit 1`)
	if _, err := Run(context.Background(), st, o2); !isStop(err) {
		t.Fatal(err)
	}
	o3 := opts(p, "true")
	o3.Fresh = true
	if _, err := Run(context.Background(), st, o3); err != nil {
		t.Errorf("--fresh: %v", err)
	}
}

// Account conditions no wait fixes stop the run (exit 1); a plain-text 429
// (Codex, Gemini) is a usage limit that does not count as a failed attempt.
func TestFinalConditionAndPlainLimit(t *testing.T) {
	st, p := newRepo(t, 1)
	o := opts(p, `cat >/dev/null; echo partial > p.txt; echo "Error: Your credit balance is too low to access the API"; exit 1`)
	_, err := Run(context.Background(), st, o)
	var fe *FinalError
	if !errors.As(err, &fe) || isStop(err) || badinput.Is(err) || !strings.Contains(err.Error(), "credit balance is too low") {
		t.Fatalf("final condition: %v", err)
	}
	if _, err := os.Stat(filepath.Join(st.Repo.Root, "p.txt")); err == nil {
		t.Error("the attempt was not rolled back")
	}

	st, p = newRepo(t, 1)
	dir := t.TempDir()
	o = opts(p, `cat >/dev/null; if [ ! -e "`+dir+`/once" ]; then touch "`+dir+`/once"; echo "stream error: unexpected status 429 Too Many Requests: Rate limit reached. Please try again in 1s."; exit 1; fi; echo ok > ok.txt`)
	o.WaitOnLimit, o.Retries = true, 0
	var out bytes.Buffer
	o.Out = &out
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("a 429 with --wait-on-limit and no retries left must still retry: %v\n%s", err, out.String())
	}
	events, _ := os.ReadFile(filepath.Join(st.Repo.Root, ".ralph/wiggum/events.jsonl"))
	for _, ev := range []string{`"event":"limit_wait_start"`, `"event":"limit_wait_end"`} {
		if !bytes.Contains(events, []byte(ev)) {
			t.Errorf("no %s event", ev)
		}
	}
}

// A failing test about an expired token or an invalid API key - the
// project's own auth tests, in --test-cmd's output - is a failed attempt,
// retried, never the agent's account: it stopped the whole run (exit 1)
// with "fix the agent's account" after one attempt.
func TestAuthWordsInTestOutputAreNoAccountCondition(t *testing.T) {
	st, p := newRepo(t, 2)
	dir := t.TempDir()
	o := opts(p, `cat >/dev/null; echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY"`)
	o.TestCmd = `if [ ! -e "` + dir + `/once" ]; then touch "` + dir + `/once"; echo "not ok 1 - login is refused when the session token is expired"; echo "invalid api key rejected: got 200"; exit 1; fi`
	var out bytes.Buffer
	o.Out = &out
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("the run stopped on a failing test's words: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "2 story(ies) done") {
		t.Fatalf("the stories were not retried and done:\n%s", out.String())
	}
}

// --max-iterations defaults to every open story's attempts: a 60-story plan
// is not cut short at an old fixed default.
func TestMaxIterationsFollowsThePlan(t *testing.T) {
	st, p := newRepo(t, 60)
	o := opts(p, `cat >/dev/null; echo x > "f-$WIGGUM_STORY"`)
	o.MaxIter = 0
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != 60 {
		t.Fatalf("%v, %d completed", err, len(sum.Completed))
	}
	// One commit per story: the work and the tick together.
	if n := strings.Count(gitT(t, st.Repo.Root, "log", "--format=%s"), "\n"); n != 61 {
		t.Errorf("%d commits, want 60 stories + init", n)
	}
	if files := gitT(t, st.Repo.Root, "show", "--name-only", "--format=", "HEAD"); files != "f-US-60\nplan.md\n" {
		t.Errorf("last commit holds %q, want the story's file and the plan", files)
	}
}

func isStop(err error) bool {
	var se *StopError
	return errors.As(err, &se)
}

// With --workers, a usage limit seen by one worker pauses them all: the
// wait is logged once as limit_wait_start/limit_wait_end, no attempt starts
// inside it, and the limited story is retried without counting a failure.
func TestParallelLimitPausesEveryWorker(t *testing.T) {
	st, p := newRepo(t, 4)
	dir := t.TempDir()
	o := opts(p, `cat >/dev/null; date +%s%N >> "`+dir+`/starts"
if [ "$WIGGUM_STORY" = US-1 ] && [ ! -e "`+dir+`/limited" ]; then
  touch "`+dir+`/limited"
  echo '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":'$(( $(date +%s) + 2 ))',"rateLimitType":"five_hour"}}'
  exit 1
fi
sleep 0.2; echo x > "f-$WIGGUM_STORY"`)
	o.Workers, o.Retries, o.WaitOnLimit = 2, 0, true
	var out bytes.Buffer
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != 4 {
		t.Fatalf("%v, %+v\n%s", err, sum, out.String())
	}
	events, err := os.ReadFile(filepath.Join(st.Repo.Root, ".ralph/wiggum/events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var waitStart, waitEnd time.Time
	for _, line := range strings.Split(string(events), "\n") {
		var ev struct {
			Event string    `json:"event"`
			Time  time.Time `json:"time"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch ev.Event {
		case "limit_wait_start":
			if !waitStart.IsZero() {
				t.Error("two waits for one limit")
			}
			waitStart = ev.Time
		case "limit_wait_end":
			waitEnd = ev.Time
		}
	}
	if waitStart.IsZero() || waitEnd.IsZero() {
		t.Fatalf("no limit wait in the events:\n%s", events)
	}
	// An attempt that passed the gate just before the limit closed it may
	// still be starting its agent when the wait begins - at most one per
	// other worker. Without the shared gate the other worker would run the
	// three remaining 0.2 s stories inside the 2 s wait.
	starts, _ := os.ReadFile(filepath.Join(dir, "starts"))
	var inside []time.Time
	for _, f := range strings.Fields(string(starts)) {
		ns, _ := strconv.ParseInt(f, 10, 64)
		if at := time.Unix(0, ns); at.After(waitStart) && at.Before(waitEnd) {
			inside = append(inside, at)
		}
	}
	if len(inside) > o.Workers-1 {
		t.Errorf("%d agents started inside the wait %s..%s: %v", len(inside), waitStart, waitEnd, inside)
	}
}

// The journal says a worker's story is finished, and where, only while a
// done attempt in a worktree is its last record: a new attempt, a landing,
// a later interrupted end or a drop takes that back, and a done attempt
// that recorded no branch tip (an older journal) never says it.
func TestLedgerFinishedAt(t *testing.T) {
	const tip = "0123456789abcdef0123456789abcdef01234567"
	start := journalRec{T: "start", Story: "US-1", Attempt: 1, Worktree: "/w/US-1", Branch: "refs/heads/wiggum/US-1"}
	done := journalRec{T: "end", Story: "US-1", Attempt: 1, Outcome: "done", Head: tip}
	want := finishedAt{Branch: "refs/heads/wiggum/US-1", Head: tip}
	for _, c := range []struct {
		name string
		recs []journalRec
		ok   bool
	}{
		{"done in a worktree", []journalRec{start, done}, true},
		{"done, no tip recorded", []journalRec{start, {T: "end", Story: "US-1", Outcome: "done"}}, false},
		{"done in the main tree", []journalRec{{T: "start", Story: "US-1"}, done}, false},
		{"started again", []journalRec{start, done, start}, false},
		{"landed", []journalRec{start, done, {T: "merge", Story: "US-1", Commit: tip}}, false},
		{"saved and interrupted on resume", []journalRec{start, done, {T: "end", Story: "US-1", Outcome: "interrupted", Source: "crash"}}, false},
		{"dropped", []journalRec{start, done, {T: "drop", Story: "US-1"}}, false},
		{"failed", []journalRec{start, {T: "end", Story: "US-1", Outcome: "failed", Head: tip}}, false},
		{"another story", []journalRec{start, done, {T: "start", Story: "US-2", Worktree: "/w/US-2"}}, true},
	} {
		l := newLedger()
		for _, r := range c.recs {
			l.replay(r)
		}
		got, ok := l.finishedAt("US-1")
		if ok != c.ok || ok && got != want {
			t.Errorf("%s: finishedAt = %+v, %v; want %v", c.name, got, ok, c.ok)
		}
	}
}

// A git the killed run started and that did not exit on the SIGTERM of
// that run's death (git 2.39 was seen spinning in its own signal handler
// for good, holding the branch's .lock) would make every resume fail. The
// resumed run kills it - only a git whose starter is dead - removes the
// lock it left, says so, and goes on.
func TestResumeKillsGitLeftByKilledRun(t *testing.T) {
	st, p := newRepo(t, 1)
	marks := t.TempDir()
	o := opts(p, `cat >/dev/null; touch "`+marks+`/started"; sleep 30`)
	o.Grace = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(marks, "started")); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	if _, err := Run(ctx, st, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: err = %v", err)
	}
	// The killed run's git: its starter is dead, it ignores SIGTERM, its
	// working directory is the repository, and the branch's lock is there.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(t.TempDir(), "git")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 0.1; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	branch := strings.TrimSpace(gitT(t, st.Repo.Root, "symbolic-ref", "--short", "HEAD"))
	lock := filepath.Join(st.Repo.CommonDir, "refs", "heads", branch+".lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command(fake)
	orphan.Dir = st.Repo.Root
	orphan.Env = append(os.Environ(), fmt.Sprintf("%s=%d", git.OwnerEnv, dead.Process.Pid))
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- orphan.Wait() }()
	defer func() { _ = orphan.Process.Kill() }()

	var out bytes.Buffer
	o = opts(p, `cat >/dev/null; echo x > "f-$WIGGUM_STORY"`)
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != 1 {
		t.Fatalf("resumed run: %+v, %v\n%s", sum, err, out.String())
	}
	if want := fmt.Sprintf("killed git (pid %d: /bin/sh %s", orphan.Process.Pid, fake); !strings.Contains(out.String(), want) {
		t.Errorf("the run does not say it killed the git (%q):\n%s", want, out.String())
	}
	if !strings.Contains(out.String(), "removed "+lock) {
		t.Errorf("the run does not say it removed the lock:\n%s", out.String())
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Error("the killed run's git is still running")
	}
}

// The model service failing (claude's "API Error: 529 Overloaded" after its
// own retries) is not the agent failing: without --wait-on-limit the run
// stops (exit 5) with the attempt rolled back, saved and not counted, and
// the next run resumes the story at the same attempt; with it, the run
// backs off and tries again, each outage in a row waiting longer.
func TestModelOutageIsWaitedOutNotCounted(t *testing.T) {
	outage := `echo '{"type":"result","subtype":"success","is_error":true,"result":"API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment.","terminal_reason":"api_error"}'; exit 1`
	st, p := newRepo(t, 1)
	dir := t.TempDir()
	o := opts(p, `cat >/dev/null; echo partial > p.txt; n=$(cat "`+dir+`/n" 2>/dev/null || echo 0); echo $((n+1)) > "`+dir+`/n"
if [ "$n" -lt 3 ]; then `+outage+`; fi
echo ok > ok.txt`)
	o.Retries = 0
	var out bytes.Buffer
	o.Out = &out
	_, err := Run(context.Background(), st, o)
	if !isStop(err) || !strings.Contains(err.Error(), "the model service is unavailable (API Error: 529 Overloaded") ||
		!strings.Contains(err.Error(), "--wait-on-limit") {
		t.Fatalf("want a stop naming the outage, got %v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(st.Repo.Root, "p.txt")); err == nil {
		t.Error("the attempt was not rolled back")
	}
	if refs := gitT(t, st.Repo.Root, "for-each-ref", "refs/wiggum/backup/"); refs == "" {
		t.Error("the attempt was not saved")
	}
	if rs, err := ReadRunState(journalPath(t, st.Repo.Root)); err != nil || rs.Failed != 0 || !strings.Contains(rs.Waiting, "529 Overloaded") {
		t.Errorf("the journal should hold no failure and the outage as what the run waits for: %+v, %v", rs, err)
	}

	// Resumed with --wait-on-limit and no retries: two more outages are
	// waited out, and the story is still on its first attempt.
	saved := outageBase
	outageBase = 20 * time.Millisecond
	defer func() { outageBase = saved }()
	o.WaitOnLimit = true
	out.Reset()
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != 1 {
		t.Fatalf("an outage with --wait-on-limit and no retries left must be waited out: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "waiting") || !strings.Contains(out.String(), "before trying again") {
		t.Errorf("the wait is not shown:\n%s", out.String())
	}
	var outages, waits int
	evs := readEvents(t, st)
	for _, ev := range evs {
		switch {
		case ev.Name == "usage_limit" && ev.Outage:
			outages++
		case ev.Name == "limit_wait_start" && ev.Outage:
			waits++
		case ev.Name == "iteration_start" && ev.Attempt != 1:
			t.Errorf("an outage counted as a failed attempt: %+v", ev)
		}
	}
	if rs, err := ReadRunState(journalPath(t, st.Repo.Root)); err != nil || rs.Waiting != "" {
		t.Errorf("after the story was done the run waits for nothing: %+v, %v", rs, err)
	}
	if outages != 3 || waits != 2 {
		t.Errorf("%d outage events and %d waits, want 3 and 2:\n%+v", outages, waits, evs)
	}
	for n, want := range []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond, 320 * time.Millisecond} {
		if got := outageWait(n + 1); got != want {
			t.Errorf("outage %d in a row waits %v, want %v", n+1, got, want)
		}
	}
}

// Workers whose attempts fail in the same outage join the wait the first
// one began; only an outage after the gate opened again waits longer.
func TestOutageBackoffCountsWaitsNotWorkers(t *testing.T) {
	var g gate
	var n atomic.Int32
	first := g.backoff(&n)
	until, _ := g.pause(first)
	for range 3 { // three more workers, the same outage
		if got := g.backoff(&n); !got.Equal(until) {
			t.Fatalf("a worker in the same outage waits until %v, not the gate's %v", got, until)
		}
	}
	if n.Load() != 1 {
		t.Fatalf("%d outages counted for one wait", n.Load())
	}
	g.mu.Lock()
	g.until = time.Time{} // the wait is over
	g.mu.Unlock()
	g.backoff(&n)
	if n.Load() != 2 {
		t.Fatalf("the next outage is number %d, want 2", n.Load())
	}
}

// A usage limit whose reset is already past when the attempt began (a
// skewed clock, a limit not lifted at its time) is still in force: the
// run waits as for a reset not given, and says the reset has passed.
// Waiting "until" the past date was no wait: a new session a second.
func TestPastLimitResetIsWaitedOut(t *testing.T) {
	saved := unknownResetWait
	unknownResetWait = 200 * time.Millisecond
	defer func() { unknownResetWait = saved }()
	st, p := newRepo(t, 1)
	dir := t.TempDir()
	o := opts(p, `cat >/dev/null; if [ ! -e "`+dir+`/once" ]; then touch "`+dir+`/once"; echo '{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1700000000"}'; exit 1; fi; echo ok > ok.txt`)
	o.WaitOnLimit, o.Retries = true, 0
	var out bytes.Buffer
	o.Out = &out
	began := time.Now()
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "has already passed); waiting until it resets at an unknown time") {
		t.Errorf("the wait does not say the reset has passed:\n%s", out.String())
	}
	events, _ := os.ReadFile(filepath.Join(st.Repo.Root, ".ralph/wiggum/events.jsonl"))
	var waited bool
	for _, line := range bytes.Split(events, []byte("\n")) {
		var ev struct{ Event, Until string }
		if json.Unmarshal(line, &ev) != nil || ev.Event != "limit_wait_start" {
			continue
		}
		until, err := time.Parse(time.RFC3339, ev.Until)
		if err != nil || until.Before(began.Truncate(time.Second)) {
			t.Errorf("the run waited until %s, before it began (%s)", ev.Until, began.UTC().Format(time.RFC3339))
		}
		waited = true
	}
	if !waited {
		t.Error("no limit_wait_start event")
	}
}

// An interrupted run shared through --remote is not resumed as a local
// run: that run would do its stories again here, next to the other
// machines, its claims left on the server. Refused (exit 2, nothing
// changed), naming the flag to resume it with.
func TestSharedRunResumedWithoutRemoteIsRefused(t *testing.T) {
	st, p := newRepo(t, 2)
	if _, err := Run(context.Background(), st, opts(p, `cat >/dev/null; `+limitLine+`; exit 1`)); !isStop(err) {
		t.Fatalf("limit stop: %v", err)
	}
	path := journalPath(t, st.Repo.Root)
	recs, _, _, err := readJournal(path)
	if err != nil || len(recs) == 0 || recs[0].T != "run" {
		t.Fatalf("journal: %v %+v", err, recs)
	}
	// The interrupted run was a shared one (its run record names the remote).
	recs[0].Remote = "origin"
	if _, err := rewriteJournal(path, recs); err != nil {
		t.Fatal(err)
	}
	shared, _ := os.ReadFile(path)
	_, err = Run(context.Background(), st, opts(p, "true"))
	if !badinput.Is(err) || !strings.Contains(err.Error(), "--remote origin") {
		t.Fatalf("resumed without --remote: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(shared, after) {
		t.Error("a refused run changed the journal")
	}
}

// A keptbranch record (a finished branch kept, not merged) changes what
// wiggum status counts and nothing a resume reads: the ledger replayed
// with it is the ledger replayed without it, but for the record itself.
func TestKeptBranchLeavesTheResumeAlone(t *testing.T) {
	const tip = "0123456789abcdef0123456789abcdef01234567"
	start := journalRec{T: "start", Story: "US-1", Attempt: 1, Iter: 1, Worktree: "/w/US-1", Branch: "refs/heads/wiggum/US-1"}
	done := journalRec{T: "end", Story: "US-1", Attempt: 1, Iter: 1, Outcome: "done", Head: tip, Cost: 0.5}
	kept := journalRec{T: "keptbranch", Story: "US-1", Branch: "refs/heads/wiggum/US-1"}
	other := journalRec{T: "start", Story: "US-2", Attempt: 1, Iter: 2, Worktree: "/w/US-2", Branch: "refs/heads/wiggum/US-2"}
	for _, c := range []struct {
		name   string
		before []journalRec // then kept, then after
		after  []journalRec
	}{
		{"kept at the run's end", []journalRec{{T: "run"}, start, done}, nil},
		{"killed after, resumed", []journalRec{{T: "run"}, start, done, other}, []journalRec{{T: "run"}, {T: "end", Story: "US-2", Iter: 2, Outcome: "interrupted"}}},
		{"retried after", []journalRec{{T: "run"}, start, done, {T: "unmerged", Story: "US-1", Branch: kept.Branch}}, []journalRec{{T: "start", Story: "US-1", Attempt: 2, Iter: 3, Worktree: "/w/US-1-2", Branch: "refs/heads/wiggum/US-1-2"}}},
		{"landed later", []journalRec{{T: "run"}, start, done}, []journalRec{{T: "run"}, {T: "merge", Story: "US-1", Commit: tip}}},
		{"dropped later", []journalRec{{T: "run"}, start, done}, []journalRec{{T: "drop", Story: "US-1"}}},
	} {
		with, without := newLedger(), newLedger()
		for _, r := range c.before {
			with.replay(r)
			without.replay(r)
		}
		with.replay(kept)
		for _, r := range c.after {
			with.replay(r)
			without.replay(r)
		}
		with.keptBranch = nil
		without.keptBranch = nil
		if !reflect.DeepEqual(with, without) {
			t.Errorf("%s: the record changed the ledger a resume reads:\nwith    %+v\nwithout %+v", c.name, with, without)
		}
	}

	// What status reads from it: done is what landed, kept what did not.
	path := filepath.Join(t.TempDir(), JournalFile)
	recs := []journalRec{{T: "run", Plan: "plan.md", Workers: 2}, start, done, kept, other,
		{T: "end", Story: "US-2", Attempt: 1, Iter: 2, Outcome: "done", Head: tip}, {T: "merge", Story: "US-2", Commit: tip},
		{T: "merge", Story: "US-3", Commit: tip}, {T: "close", Note: "1 branch(es) could not be merged"}}
	if _, err := rewriteJournal(path, recs); err != nil {
		t.Fatal(err)
	}
	rs, err := ReadRunState(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rs.Done, ",") != "US-2,US-3" || strings.Join(rs.Kept, ",") != "US-1" {
		t.Errorf("done %v, kept %v; want done US-2,US-3 (US-3 a branch an earlier run kept, landed by this one), kept US-1", rs.Done, rs.Kept)
	}
}
