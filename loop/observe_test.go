package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/agent"
)

// What watch reads: iteration_start with the attempt and its output log,
// throttled tool events with tokens so far, the plan's size at run_start,
// and the agent's output in its per-attempt log.
func TestRunRecordsWhatWatchReads(t *testing.T) {
	st, p := newRepo(t, 2)
	var out bytes.Buffer
	// Three tool calls at once: the throttle sends the first at once and
	// the last at the end of the attempt, never the middle one.
	o := opts(p, `cat >/dev/null
echo plain line from $WIGGUM_STORY
for n in 1 2 3; do
  echo '{"type":"assistant","message":{"id":"m'$n'","usage":{"input_tokens":10,"output_tokens":2},"content":[{"type":"tool_use","name":"Bash","input":{"command":"step '$n'"}}]}}'
done
echo x > "f-$WIGGUM_STORY"`)
	o.Out = &out
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	data, err := os.ReadFile(st.Path(".ralph/wiggum/events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var starts, tools []map[string]any
	var runStart map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		switch e["event"] {
		case "run_start":
			runStart = e
		case "iteration_start":
			starts = append(starts, e)
		case "tool":
			tools = append(tools, e)
		}
	}
	if runStart["stories"] != 2.0 || runStart["done"] != 0.0 {
		t.Errorf("run_start = %v, want stories 2 done 0", runStart)
	}
	if len(starts) != 2 || starts[0]["story"] != "US-1" || starts[0]["attempt"] != 1.0 || starts[0]["attempts"] != 2.0 || starts[0]["output"] != AgentLog(1) {
		t.Errorf("iteration_start events = %v", starts)
	}
	var got []string
	for _, e := range tools {
		got = append(got, e["story"].(string)+" "+e["tool"].(string))
	}
	want := "US-1 Bash: step 1|US-1 Bash: step 3|US-2 Bash: step 1|US-2 Bash: step 3"
	if strings.Join(got, "|") != want {
		t.Errorf("tool events = %q, want %q", got, want)
	}
	if last := tools[1]; last["input_tokens"] != 30.0 || last["output_tokens"] != 6.0 {
		t.Errorf("tokens so far = %v in / %v out, want 30 / 6", last["input_tokens"], last["output_tokens"])
	}
	log, err := os.ReadFile(st.Path(AgentLog(2)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "plain line from US-2") || !strings.Contains(string(log), "▸ tool: Bash: step 2") {
		t.Errorf("agent log of iteration 2:\n%s", log)
	}
}

func TestAgentLogsBounded(t *testing.T) {
	st, _ := newRepo(t, 1)
	dir := st.Path(AgentLogDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= keepAgentLogs+10; i++ {
		if err := os.WriteFile(st.Path(AgentLog(i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := &executor{run: &run{st: st}, disp: newDisplay(&bytes.Buffer{}, false, true, nil)}
	// Pruning comes with the first attempt and every pruneEvery after.
	iter := (keepAgentLogs/pruneEvery+1)*pruneEvery + 1
	o := e.observe(iter, "US-1")
	big := strings.Repeat("y", 1<<20)
	for range 6 {
		o.line(big)
	}
	o.close()
	ents, _ := os.ReadDir(dir)
	if len(ents) != keepAgentLogs {
		t.Errorf("%d logs kept, want %d", len(ents), keepAgentLogs)
	}
	fi, err := os.Stat(st.Path(AgentLog(iter)))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxAgentLog+200 {
		t.Errorf("log grew to %d bytes, bound %d", fi.Size(), maxAgentLog)
	}
}

// An attempt whose agent prints nothing leaves no log (watch says "no
// output yet") - and creates no file - and an earlier run's log of the same
// iteration does not pass for it; one that prints gets its log.
func TestSilentAttemptLeavesNoLog(t *testing.T) {
	st, p := newRepo(t, 2)
	if err := os.MkdirAll(st.Path(AgentLogDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.Path(AgentLog(1)), []byte("an earlier run's output\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := opts(p, `cat >/dev/null; [ "$WIGGUM_STORY" = US-1 ] || echo said something; echo x > "f-$WIGGUM_STORY"`)
	o.Out = &out
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if _, err := os.Stat(st.Path(AgentLog(1))); !os.IsNotExist(err) {
		t.Errorf("the silent attempt's log: %v, want none", err)
	}
	if log, err := os.ReadFile(st.Path(AgentLog(2))); err != nil || string(log) != "said something\n" {
		t.Errorf("the second attempt's log: %q, %v", log, err)
	}
}

// With the agent's hooks installed (VerifyHooks), an attempt whose shell
// commands the guard hook never marked seen ran unguarded: it is rolled
// back, saved, and stops the run with an UnusableError, in the main tree
// and in a parallel worktree alike. An attempt whose commands were seen
// (here the script removes the mark, as the hook does) goes on as usual.
func TestUnseenShellCommandsStopTheRun(t *testing.T) {
	const tool = `cat >/dev/null
echo '{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"echo x"}}]}}'
echo x > "f-$WIGGUM_STORY"
`
	for _, workers := range []int{1, 2} {
		st, p := newRepo(t, 2)
		var out bytes.Buffer
		o := opts(p, tool)
		o.Agent.Name, o.Agent.Events = "claude", true
		o.VerifyHooks, o.Workers, o.Out = true, workers, &out
		_, err := Run(context.Background(), st, o)
		if !agent.IsUnusable(err) || !strings.Contains(err.Error(), "it ran 1 shell command(s) and wiggum's guard hook saw none of them") {
			t.Fatalf("workers %d: err = %v\n%s", workers, err, out.String())
		}
		if _, err := os.Stat(st.Path("f-US-1")); err == nil {
			t.Errorf("workers %d: the unguarded attempt's file is in the main tree", workers)
		}
		if data, _ := os.ReadFile(st.Path("plan.md")); strings.Contains(string(data), "[x]") {
			t.Errorf("workers %d: a story was ticked:\n%s", workers, data)
		}
		if !strings.Contains(out.String(), "refs/wiggum/backup/") {
			t.Errorf("workers %d: no backup named:\n%s", workers, out.String())
		}
		// The stop is no failed attempt of the story: the journal ends it
		// as "hooks", with no failure record.
		journal, err := os.ReadFile(journalPath(t, st.Repo.Root))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(journal), `"outcome":"hooks"`) || strings.Contains(string(journal), `"t":"fail"`) {
			t.Errorf("workers %d: the journal counts the stop as a failure:\n%s", workers, journal)
		}
		// Once the hooks run, the next run does the story, and the stop is
		// no failure context in the agent's prompt.
		prompts := t.TempDir()
		out.Reset()
		o = opts(p, `cat > "`+prompts+`/$WIGGUM_STORY"; rm -f "$WIGGUM_GUARD_UNSEEN"; echo x > "f-$WIGGUM_STORY"`)
		o.Agent.Name, o.Agent.Events = "claude", true
		o.VerifyHooks, o.Workers, o.Out, o.Retries = true, workers, &out, 0
		if sum, err := Run(context.Background(), st, o); err != nil || len(sum.Completed) != 2 {
			t.Fatalf("workers %d, the run after the fix: %+v, %v\n%s", workers, sum, err, out.String())
		}
		if prompt, _ := os.ReadFile(filepath.Join(prompts, "US-1")); strings.Contains(string(prompt), "guard hook") || len(prompt) == 0 {
			t.Errorf("workers %d: the next prompt carries the stop as a failure:\n%s", workers, prompt)
		}

		// With the command's result in the stream, the hook has had its
		// turn: the agent is stopped there, not at the end of its attempt.
		st, p = newRepo(t, 2)
		out.Reset()
		after := filepath.Join(t.TempDir(), "after")
		o = opts(p, tool+`echo '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":""}]}}'
sleep 30
touch `+after)
		o.Agent.Name, o.Agent.Events = "claude", true
		o.VerifyHooks, o.Workers, o.Out, o.Grace = true, workers, &out, time.Second
		_, err = Run(context.Background(), st, o)
		if !agent.IsUnusable(err) || !strings.Contains(err.Error(), "did not see its first shell command, so wiggum stopped it there") {
			t.Fatalf("workers %d, result in the stream: err = %v\n%s", workers, err, out.String())
		}
		if _, err := os.Stat(after); err == nil {
			t.Errorf("workers %d: the agent ran on after its unseen command's result", workers)
		}

		st, p = newRepo(t, 2)
		out.Reset()
		o = opts(p, tool+`rm -f "$WIGGUM_GUARD_UNSEEN"`)
		o.Agent.Name, o.Agent.Events = "claude", true
		o.VerifyHooks, o.Workers, o.Out = true, workers, &out
		if sum, err := Run(context.Background(), st, o); err != nil || len(sum.Completed) != 2 {
			t.Fatalf("workers %d, commands seen: %+v, %v\n%s", workers, sum, err, out.String())
		}
	}
}
