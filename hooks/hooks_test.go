package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/session"
)

func payload(t testing.TB, name, cwd string) []byte {
	data, err := os.ReadFile(filepath.Join("testdata", "payloads", name))
	if err != nil {
		t.Fatal(err)
	}
	// A payload that names a transcript (codex's) has it beside it, as
	// the agent had written it when it ran the hook.
	transcript, _ := filepath.Abs(filepath.Join("testdata", "payloads", strings.TrimSuffix(name, ".json")+".rollout.jsonl"))
	data = bytes.ReplaceAll(data, []byte("{{TRANSCRIPT}}"), []byte(transcript))
	return bytes.ReplaceAll(data, []byte("{{CWD}}"), []byte(cwd))
}

// TestParsePayloads reads every agent's real payload shapes.
func TestParsePayloads(t *testing.T) {
	cases := []struct {
		file    string
		kind    Kind
		shell   bool
		command string
		exit    int
		output  string // a substring of the tool output
		path    string
	}{
		{"claude_pretooluse_bash.json", KindPreTool, true, "git push origin main", -1, "", ""},
		{"claude_pretooluse_edit.json", KindPreTool, false, "", -1, "", "/r/main.go"},
		{"claude_posttooluse_tee_fail.json", KindPostTool, true, "go test ./... 2>&1 | tee test.log", 0, "--- FAIL: TestAdd", ""},
		{"claude_posttooluse_pass.json", KindPostTool, true, "go test -v ./...", 0, "PASS", ""},
		{"claude_posttoolusefailure.json", KindPostFailure, true, "go test ./...", 1, "FAIL\tex", ""},
		{"claude_posttooluse_read.json", KindPostTool, false, "", -1, "", "/r/main.go"},
		{"claude_stop.json", KindStop, false, "", -1, "", ""},
		{"claude_sessionstart.json", KindReset, false, "", -1, "", ""},
		{"claude_userpromptsubmit.json", KindReset, false, "", -1, "", ""},
		{"claude_notification.json", KindUnknown, false, "", -1, "", ""},
		{"codex_pretooluse.json", KindPreTool, true, "bash -lc 'git reset --hard'", -1, "", ""},
		{"codex_posttooluse_fail.json", KindPostFailure, true, "cargo test", 101, "test result: FAILED", ""},
		// Codex 0.171 sends a failed command's output and no exit
		// status: unknown, not 0.
		{"codex_posttooluse_nosummary.json", KindPostTool, true, "echo attempt > attempt.txt && npm test", -1, "cannot build", ""},
		{"gemini_beforetool.json", KindPreTool, true, "git clean -fdx", -1, "", ""},
		{"gemini_aftertool_fail.json", KindPostFailure, true, "pytest -q", 1, "1 failed, 1 passed", ""},
		{"gemini_afteragent.json", KindStop, false, "", -1, "", ""},
		{"cursor_beforeshell.json", KindPreTool, true, "rm -rf .ralph", -1, "", ""},
		{"cursor_aftershell_fail.json", KindPostTool, true, "npx jest --ci", -1, "Tests:       1 failed", ""},
		{"cursor_stop.json", KindStop, false, "", -1, "", ""},
	}
	for _, c := range cases {
		agent, _, _ := strings.Cut(c.file, "_")
		ev, err := Adapters[agent].Parse(payload(t, c.file, "/r"))
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if ev.Kind != c.kind || ev.Shell != c.shell || ev.Command != c.command || ev.ExitCode != c.exit || ev.FilePath != c.path || ev.Cwd != "/r" {
			t.Errorf("%s: got kind %d shell %v command %q exit %d path %q cwd %q", c.file, ev.Kind, ev.Shell, ev.Command, ev.ExitCode, ev.FilePath, ev.Cwd)
		}
		if !strings.Contains(ev.Output, c.output) {
			t.Errorf("%s: output lacks %q: %.200q", c.file, c.output, ev.Output)
		}
	}
}

// TestParseReadsFieldsBesideWrongTypes: a field of an unexpected type reads
// as empty and the rest of the event is still read; numbers are read only
// when whole.
func TestParseReadsFieldsBesideWrongTypes(t *testing.T) {
	ev, err := claude{}.Parse([]byte(`{"hook_event_name":"PreToolUse","session_id":7,"tool_name":"Bash",` +
		`"tool_input":{"command":"git push","file_path":["x"]},"cwd":"/r","stop_hook_active":"yes"}`))
	if err != nil || ev.Kind != KindPreTool || ev.Command != "git push" || ev.Cwd != "/r" || ev.SessionID != "" ||
		ev.FilePath != "" || ev.StopHookActive || !ev.Shell {
		t.Errorf("claude: %+v, %v", ev, err)
	}
	cases := []struct {
		in   string
		kind Kind
		exit int
		cwd  string
		stop bool
	}{
		{`{"hook_event_name":"afterShellExecution","command":"make","exit_code":2,"workspace_roots":[3,"/w"]}`, KindPostFailure, 2, "/w", false},
		{`{"hook_event_name":"afterShellExecution","command":"make","exit_code":2.5,"cwd":"/c"}`, KindPostTool, -1, "/c", false},
		{`{"hook_event_name":"afterShellExecution","command":"make","exit_code":"2","cwd":"/c"}`, KindPostTool, -1, "/c", false},
		{`{"hook_event_name":"stop","loop_count":1,"cwd":"/c"}`, KindStop, -1, "/c", true},
		{`{"hook_event_name":"stop","loop_count":"1","cwd":"/c"}`, KindStop, -1, "/c", false},
	}
	for _, c := range cases {
		ev, err := cursor{}.Parse([]byte(c.in))
		if err != nil || ev.Kind != c.kind || ev.ExitCode != c.exit || ev.Cwd != c.cwd || ev.StopHookActive != c.stop {
			t.Errorf("cursor %s: kind %d exit %d cwd %q stop %v, %v", c.in, ev.Kind, ev.ExitCode, ev.Cwd, ev.StopHookActive, err)
		}
	}
}

// TestBadInputAlwaysValidOutput feeds hostile stdin to every adapter.
func TestBadInputAlwaysValidOutput(t *testing.T) {
	inputs := map[string][]byte{
		"empty":      nil,
		"spaces":     []byte("  \n\t"),
		"garbage":    []byte("not json at all"),
		"binary":     {0, 1, 2, 0xff, 0xfe, '{', 0x80},
		"array":      []byte(`[1,2,3]`),
		"truncated":  []byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git pu`),
		"wrongtypes": []byte(`{"hook_event_name":42,"tool_name":["Bash"],"tool_input":"{\"command\":7}","cwd":{}}`),
		"unknown":    []byte(`{"hook_event_name":"SomethingNew","cwd":"/"}`),
		"nested":     []byte(strings.Repeat("[", 100000)),
		"huge":       bytes.Repeat([]byte("x"), MaxPayload+10),
	}
	t.Chdir(t.TempDir())
	for agent := range Adapters {
		for name, in := range inputs {
			var out bytes.Buffer
			Run(context.Background(), agent, bytes.NewReader(in), &out, Options{Guard: GuardAlways})
			checkValidOutput(t, agent+"/"+name, out.Bytes())
		}
	}
}

func checkValidOutput(t testing.TB, what string, out []byte) {
	t.Helper()
	if len(bytes.TrimSpace(out)) == 0 {
		return
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Errorf("%s: output is not a JSON object: %v: %q", what, err, out)
	}
}

// repo makes a git repository with one commit. The hooks under test must
// not log into the event log of a run the tests themselves run under.
func repo(t *testing.T) string {
	t.Helper()
	t.Setenv(session.EventLogEnv, "")
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "config", "user.email", "t@example.com")
	git(t, dir, "config", "user.name", "T")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "init")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// inSession takes the agent lock and joins its session, as an agent started
// by `wiggum run` or `wiggum lock` would be.
func inSession(t *testing.T, dir string) *checkpoint.State {
	t.Helper()
	ctx := context.Background()
	st, err := checkpoint.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.Acquire(ctx, layout.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release() })
	t.Setenv(layout.SessionEnv, l.Holder.Session)
	return st
}

func hook(t *testing.T, agent, file, dir string, opts Options) []byte {
	t.Helper()
	var out bytes.Buffer
	Run(context.Background(), agent, bytes.NewReader(payload(t, file, dir)), &out, opts)
	checkValidOutput(t, file, out.Bytes())
	return out.Bytes()
}

func TestGuardOnlyInSession(t *testing.T) {
	dir := repo(t)
	t.Setenv(layout.SessionEnv, "")
	if out := hook(t, "claude", "claude_pretooluse_bash.json", dir, Options{Guard: GuardSession}); len(out) != 0 {
		t.Fatalf("outside a session the guard must be off: %s", out)
	}
	if out := hook(t, "claude", "claude_pretooluse_bash.json", dir, Options{Guard: GuardAlways}); !bytes.Contains(out, []byte(`"permissionDecision":"deny"`)) {
		t.Fatalf("--guard always must deny: %s", out)
	}
	inSession(t, dir)
	out := hook(t, "claude", "claude_pretooluse_bash.json", dir, Options{Guard: GuardSession})
	var r struct {
		HookSpecificOutput struct {
			HookEventName, PermissionDecision, PermissionDecisionReason string
		}
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.HookSpecificOutput.HookEventName != "PreToolUse" || r.HookSpecificOutput.PermissionDecision != "deny" || !strings.Contains(r.HookSpecificOutput.PermissionDecisionReason, "git push") {
		t.Fatalf("in a session git push must be denied: %s", out)
	}
	if out := hook(t, "claude", "claude_pretooluse_bash.json", dir, Options{Guard: GuardOff}); len(out) != 0 {
		t.Fatalf("--guard off: %s", out)
	}
}

func TestOtherAgentsDeny(t *testing.T) {
	dir := repo(t)
	inSession(t, dir)
	cases := map[string]string{
		"codex_pretooluse.json":   `"permissionDecision":"deny"`,
		"gemini_beforetool.json":  `"decision":"deny"`,
		"cursor_beforeshell.json": `"permission":"deny"`,
	}
	for file, want := range cases {
		agent, _, _ := strings.Cut(file, "_")
		out := hook(t, agent, file, dir, Options{})
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("%s: want %s in %s", file, want, out)
		}
		// The message the person sees names wiggum once.
		if bytes.Contains(out, []byte("wiggum: wiggum:")) {
			t.Errorf("%s: the reason says wiggum twice: %s", file, out)
		}
	}
}

// TestFailingTestsRollBackInSession: a test run piped through tee "succeeds",
// the hook still sees the failure and rolls back to the checkpoint, saving
// the attempt under refs/wiggum/backup/.
func TestFailingTestsRollBackInSession(t *testing.T) {
	for _, c := range []struct{ agent, file string }{
		{"claude", "claude_posttooluse_tee_fail.json"},
		{"claude", "claude_posttoolusefailure.json"},
		{"codex", "codex_posttooluse_fail.json"},
		// No summary in the output: the exit status is in codex's
		// transcript.
		{"codex", "codex_posttooluse_nosummary.json"},
		{"gemini", "gemini_aftertool_fail.json"},
		{"cursor", "cursor_aftershell_fail.json"},
	} {
		t.Run(c.file, func(t *testing.T) {
			dir := repo(t)
			st := inSession(t, dir)
			ctx := context.Background()
			cp, err := st.Save(ctx, os.Getenv(layout.SessionEnv), checkpoint.SaveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // broken\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			git(t, dir, "commit", "-qam", "attempt")
			out := hook(t, c.agent, c.file, dir, Options{})
			if head := git(t, dir, "rev-parse", "HEAD"); head != cp.Head {
				t.Fatalf("HEAD %s, want the checkpoint %s", head, cp.Head)
			}
			if refs := git(t, dir, "for-each-ref", "refs/wiggum/backup/"); refs == "" {
				t.Fatal("no backup ref")
			}
			if c.agent != "cursor" && !bytes.Contains(out, []byte("rolled back to checkpoint")) {
				t.Errorf("the agent is not told: %s", out)
			}
			fs, err := session.Failures(st, "")
			if err != nil || len(fs) != 1 || !strings.HasPrefix(fs[0].Rollback, "rolled back") || fs[0].Source != "test-hook" {
				t.Fatalf("failure log: %+v %v", fs, err)
			}
		})
	}
}

func TestRecordPolicyOnlyLogs(t *testing.T) {
	dir := repo(t)
	st := inSession(t, dir)
	ctx := context.Background()
	if _, err := st.Save(ctx, os.Getenv(layout.SessionEnv), checkpoint.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := session.WriteRun(st, session.Run{Session: os.Getenv(layout.SessionEnv), Story: "US-3", Iteration: 2, Policy: session.PolicyRecord}); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "attempt")
	head := git(t, dir, "rev-parse", "HEAD")
	out := hook(t, "claude", "claude_posttoolusefailure.json", dir, Options{})
	if got := git(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatal("record policy rolled back")
	}
	if !bytes.Contains(out, []byte("recorded")) {
		t.Errorf("context: %s", out)
	}
	fs, _ := session.Failures(st, "US-3")
	if len(fs) != 1 || fs[0].Iteration != 2 || !strings.Contains(fs[0].Output, "FAIL") {
		t.Fatalf("failure log: %+v", fs)
	}
	// The event goes to the run's log the environment names (a parallel
	// worker's main tree), the failure context stays with the tree.
	mainLog := filepath.Join(repo(t), layout.RuntimeDir, layout.EventFile)
	if err := os.MkdirAll(filepath.Dir(mainLog), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(session.EventLogEnv, mainLog)
	// Another call (one tool call is one failure, however many of
	// wiggum's hooks see it: TestOneToolCallTwoWiggumHooks).
	another := bytes.ReplaceAll(payload(t, "claude_posttoolusefailure.json", dir), []byte("toolu_01ABG"), []byte("toolu_01ABG2"))
	Run(context.Background(), "claude", bytes.NewReader(another), io.Discard, Options{})
	var got []string
	if _, err := events.Scan(mainLog, func(e events.Event) error { got = append(got, e.Name+" "+e.Story); return nil }); err != nil || len(got) != 1 || got[0] != events.TestFailure+" US-3" {
		t.Fatalf("main log: %v, %v", got, err)
	}
}

func TestRollbackRefusalIsReported(t *testing.T) {
	dir := repo(t)
	st := inSession(t, dir)
	// No checkpoint: rollback refuses, nothing changes, the agent is told.
	head := git(t, dir, "rev-parse", "HEAD")
	out := hook(t, "claude", "claude_posttoolusefailure.json", dir, Options{})
	if git(t, dir, "rev-parse", "HEAD") != head {
		t.Fatal("HEAD moved")
	}
	if !bytes.Contains(out, []byte("did not roll back")) {
		t.Errorf("context: %s", out)
	}
	fs, _ := session.Failures(st, "")
	if len(fs) != 1 || !strings.HasPrefix(fs[0].Rollback, "refused") {
		t.Fatalf("failure log: %+v", fs)
	}
}

func TestOutsideSessionRecordsOnly(t *testing.T) {
	dir := repo(t)
	wiggumRanHere(t, dir)
	t.Setenv(layout.SessionEnv, "")
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "two")
	head := git(t, dir, "rev-parse", "HEAD")
	status := git(t, dir, "status", "--porcelain")
	hook(t, "claude", "claude_posttoolusefailure.json", dir, Options{})
	if git(t, dir, "rev-parse", "HEAD") != head || git(t, dir, "status", "--porcelain") != status {
		t.Fatal("outside a session the hook changed the repository")
	}
	if refs := git(t, dir, "for-each-ref", "refs/wiggum/"); refs != "" {
		t.Fatalf("backup made outside a session: %s", refs)
	}
	st, _ := checkpoint.Open(context.Background(), dir)
	if fs, _ := session.Failures(st, ""); len(fs) != 1 {
		t.Fatalf("failure not recorded: %+v", fs)
	}
}

func TestPassingRunDoesNothing(t *testing.T) {
	dir := repo(t)
	inSession(t, dir)
	if out := hook(t, "claude", "claude_posttooluse_pass.json", dir, Options{}); len(out) != 0 {
		t.Fatalf("output for a passing run: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".ralph", "wiggum", layout.FailureFile)); err == nil {
		t.Fatal("a passing run was logged as a failure")
	}
}

func TestStopIsRecordedNeverBlocks(t *testing.T) {
	dir := repo(t)
	inSession(t, dir)
	for _, f := range []string{"claude_stop.json", "claude_stop_active.json"} {
		if out := hook(t, "claude", f, dir, Options{}); len(out) != 0 {
			t.Fatalf("%s: the stop hook must not block: %s", f, out)
		}
	}
	hook(t, "gemini", "gemini_afteragent.json", dir, Options{})
	hook(t, "cursor", "cursor_stop.json", dir, Options{})
	data, err := os.ReadFile(filepath.Join(dir, ".ralph", "wiggum", layout.EventFile))
	if err != nil || bytes.Count(data, []byte(`"event":"agent-stop"`)) != 4 {
		t.Fatalf("stop events: %v\n%s", err, data)
	}
}

// TestStopRecordsWhetherStoryIsTicked: inside `wiggum run`, a stop is
// recorded as agent-stop, done or not - not "story-incomplete" while the
// story is open: wiggum run's loop ticks it after the agent ends, so
// wiggum watch showed every story incomplete a moment before it was done
// (hunt13 #11).
func TestStopRecordsWhetherStoryIsTicked(t *testing.T) {
	dir := repo(t)
	st := inSession(t, dir)
	planPath := filepath.Join(dir, "plan.md")
	if err := os.WriteFile(planPath, []byte("# Plan\n\n- [ ] US-1 first\n- [ ] US-10 tenth\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := session.WriteRun(st, session.Run{Session: os.Getenv(layout.SessionEnv), Plan: "plan.md", Story: "US-1", Iteration: 1}); err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(dir, ".ralph", "wiggum", layout.EventFile)
	hook(t, "claude", "claude_stop.json", dir, Options{})
	data, _ := os.ReadFile(events)
	if !bytes.Contains(data, []byte(`"event":"agent-stop"`)) || bytes.Contains(data, []byte(`story-incomplete`)) ||
		!bytes.Contains(data, []byte(`"story":"US-1"`)) || !bytes.Contains(data, []byte(`"done":false`)) {
		t.Fatalf("events: %s", data)
	}
	if err := os.WriteFile(planPath, []byte("# Plan\n\n- [x] US-1 first\n- [ ] US-10 tenth\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(events); err != nil {
		t.Fatal(err)
	}
	hook(t, "claude", "claude_stop.json", dir, Options{})
	data, _ = os.ReadFile(events)
	if !bytes.Contains(data, []byte(`"event":"agent-stop"`)) || !bytes.Contains(data, []byte(`"done":true`)) {
		t.Fatalf("events after ticking: %s", data)
	}
}

func TestRequireRead(t *testing.T) {
	dir := repo(t)
	opts := Options{RequireRead: true}
	if out := hook(t, "claude", "claude_pretooluse_edit.json", dir, opts); !bytes.Contains(out, []byte(`"deny"`)) {
		t.Fatalf("edit before read: %s", out)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".ralph"), 0o755); err != nil {
		t.Fatal(err)
	}
	hook(t, "claude", "claude_posttooluse_read.json", dir, opts)
	if out := hook(t, "claude", "claude_pretooluse_edit.json", dir, opts); len(out) != 0 {
		t.Fatalf("edit after read: %s", out)
	}
	hook(t, "claude", "claude_sessionstart.json", dir, opts)
	if out := hook(t, "claude", "claude_pretooluse_edit.json", dir, opts); !bytes.Contains(out, []byte(`"deny"`)) {
		t.Fatalf("a new conversation must read again: %s", out)
	}
	if out := hook(t, "claude", "claude_pretooluse_edit.json", dir, Options{}); len(out) != 0 {
		t.Fatalf("without --require-read: %s", out)
	}
}

func TestGitHooks(t *testing.T) {
	dir := repo(t)
	ctx := context.Background()
	t.Setenv(AllowPushEnv, "")
	if err := GitHook(ctx, dir, "pre-push"); err != nil {
		t.Fatalf("pre-push outside a session: %v", err)
	}
	inSession(t, dir)
	// A push by one of the session's processes (an agent): refused without
	// a word on how to override it, and its own WIGGUM_ALLOW_PUSH=1 does
	// not count - the session was not started with it.
	err := GitHook(ctx, dir, "pre-push")
	if _, ok := err.(*PushRefusedError); !ok || strings.Contains(err.Error(), AllowPushEnv) {
		t.Fatalf("pre-push by the session's agent: %v", err)
	}
	t.Setenv(AllowPushEnv, "1")
	if err := GitHook(ctx, dir, "pre-push"); err == nil {
		t.Fatalf("an agent's own %s=1 let its push through", AllowPushEnv)
	}
	// The person, outside the session: told how, and their override works.
	session := os.Getenv(layout.SessionEnv)
	t.Setenv(layout.SessionEnv, "")
	t.Setenv(AllowPushEnv, "")
	if err := GitHook(ctx, dir, "pre-push"); err == nil || !strings.Contains(err.Error(), AllowPushEnv+"=1") {
		t.Fatalf("pre-push from outside the session: %v", err)
	}
	t.Setenv(AllowPushEnv, "1")
	if err := GitHook(ctx, dir, "pre-push"); err != nil {
		t.Fatalf("%s=1 outside the session: %v", AllowPushEnv, err)
	}
	t.Setenv(layout.SessionEnv, session)
	if err := GitHook(ctx, dir, "post-commit"); err != nil {
		t.Fatal(err)
	}
	st, _ := checkpoint.Open(ctx, dir)
	j, err := st.Journal()
	if err != nil || len(j) != 1 || j[0].Session != os.Getenv(layout.SessionEnv) {
		t.Fatalf("journal: %+v %v", j, err)
	}
	if err := GitHook(ctx, dir, "post-checkout"); err != nil {
		t.Fatalf("an unknown hook must do nothing: %v", err)
	}
}

func TestLinkedWorktreeBranch(t *testing.T) {
	dir := repo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, dir, "worktree", "add", "-q", "-b", "story-1", wt)
	root := findRoot(filepath.Join(wt))
	if root != wt {
		t.Fatalf("root %q", root)
	}
	if b, _ := branches(root); b != "story-1" {
		t.Fatalf("branch %q", b)
	}
	if b, _ := branches(dir); b != "main" {
		t.Fatalf("main tree branch %q", b)
	}
	// A repository that keeps its refs in a reftable (git 2.45 and later;
	// the default in git 3) has a placeholder HEAD file naming the branch
	// ".invalid", which is never the answer: git is asked (here git 2.39,
	// which reads the placeholder too, so the answer is "unknown" and the
	// guard asks before a merge; a reftable-capable git names the branch).
	if err := os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/.invalid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".git", "reftable"), 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	if b, d := branches(dir); b == ".invalid" || d != "" {
		t.Fatalf("the reftable placeholder read as branch %q (default %q)", b, d)
	}
}

// TestStdinNeverClosed: an agent that never closes the hook's stdin does
// not hang it; the hook answers "no opinion" once the wait is over.
func TestStdinNeverClosed(t *testing.T) {
	old := stdinWait
	stdinWait = 50 * time.Millisecond
	defer func() { stdinWait = old }()
	r, w := io.Pipe()
	defer w.Close()
	go w.Write([]byte(`{"hook_event_name":"PreToolUse"`))
	done := make(chan []byte)
	go func() {
		var out bytes.Buffer
		Run(context.Background(), "gemini", r, &out, Options{Guard: GuardAlways})
		done <- out.Bytes()
	}()
	select {
	case out := <-done:
		checkValidOutput(t, "open stdin", out)
	case <-time.After(5 * time.Second):
		t.Fatal("the hook hung on an open stdin")
	}
}

// TestStdinPipe: the payload on a real pipe - the way agents pass it - is
// read whole even when it is many times the pipe's buffer and arrives in
// pieces, an open pipe that never closes is given up on after the wait,
// and the pipe is left in blocking mode, as the hook found it.
func TestStdinPipe(t *testing.T) {
	old := stdinWait
	stdinWait = 200 * time.Millisecond
	defer func() { stdinWait = old }()

	blocking := func(f *os.File) bool {
		t.Helper()
		flags, err := fcntlFlags(f)
		if err != nil {
			t.Fatal(err)
		}
		return flags&syscall.O_NONBLOCK == 0
	}

	// Whole: 1 MB in 4 KB pieces.
	r, w := blockingPipe(t)
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	go func() {
		for off := 0; off < len(want); off += 4096 {
			_, _ = w.Write(want[off : off+4096])
		}
		w.Close()
	}()
	got, err := readBounded(r)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (want %d), err %v", len(got), len(want), err)
	}
	if !blocking(r) {
		t.Fatal("the pipe was left non-blocking")
	}
	r.Close()

	// Never closed: given up on, not hung.
	r2, w2 := blockingPipe(t)
	defer r2.Close()
	defer w2.Close()
	_, _ = w2.Write([]byte(`{"hook_event_name":"PreToolUse"`))
	done := make(chan error, 1)
	go func() {
		_, err := readBounded(r2)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errUnended) || !strings.Contains(err.Error(), "31 bytes arrived on stdin but not their end") {
			t.Fatalf("open pipe: err %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hook hung on an open pipe")
	}
	if !blocking(r2) {
		t.Fatal("the pipe was left non-blocking after the wait")
	}
}

// TestStdinOtherDescriptors: a pipe the agent made non-blocking is read
// whole, arriving in pieces (each EAGAIN waited out, not taken for the
// end), and left non-blocking; a file, /dev/null (an empty payload) and a
// descriptor already closed are answered at once.
func TestStdinOtherDescriptors(t *testing.T) {
	old := stdinWait
	stdinWait = 5 * time.Second
	defer func() { stdinWait = old }()

	r, w := blockingPipe(t)
	if err := syscall.SetNonblock(int(r.Fd()), true); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("x"), 300<<10)
	go func() {
		for off := 0; off < len(want); off += 30 << 10 {
			time.Sleep(5 * time.Millisecond)
			_, _ = w.Write(want[off : off+30<<10])
		}
		w.Close()
	}()
	got, err := readBounded(r)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("non-blocking pipe: read %d bytes (want %d), err %v", len(got), len(want), err)
	}
	if flags, err := fcntlFlags(r); err != nil || flags&syscall.O_NONBLOCK == 0 {
		t.Fatalf("the non-blocking pipe was made blocking (flags %#x, %v)", flags, err)
	}
	r.Close()

	path := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(path, []byte(`{"hook_event_name":"PreToolUse"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, err := readBounded(f); err != nil || string(got) != `{"hook_event_name":"PreToolUse"}` {
		t.Fatalf("file: %q, %v", got, err)
	}

	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if _, err := readPayload(null); err == nil || !strings.Contains(err.Error(), "empty payload") {
		t.Fatalf("/dev/null: %v", err)
	}

	// A descriptor number nothing has open (far above the open-file
	// limit's reach), not one closed behind an *os.File's back: that
	// File's finalizer would close the number again, after another
	// file got it.
	gone := os.NewFile(uintptr(1<<20-3), "gone")
	defer gone.Close()
	if _, err := readBounded(gone); err == nil || !strings.Contains(err.Error(), "read stdin") {
		t.Fatalf("a closed descriptor: %v (want a read error, not a wait)", err)
	}
}

// blockingPipe is a pipe as an agent hands it to a hook: blocking, not
// registered with this process's poller (os.Pipe's ends are both).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	syscall.ForkLock.RLock()
	err := syscall.Pipe(p[:])
	if err == nil {
		syscall.CloseOnExec(p[0])
		syscall.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "agent")
}

func fcntlFlags(f *os.File) (int, error) {
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(flags), nil
}

func TestEditToolsCannotTouchState(t *testing.T) {
	dir := repo(t)
	inSession(t, dir)
	for _, path := range []string{".ralph/.agent-lock.json", ".ralph/wiggum/checkpoint.json", ".git/refs/wiggum/backup/1", ".git/config"} {
		in := `{"session_id":"s","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"` + filepath.Join(dir, path) + `","content":"{}"}}`
		var out bytes.Buffer
		Run(context.Background(), "claude", strings.NewReader(in), &out, Options{})
		if !bytes.Contains(out.Bytes(), []byte(`"deny"`)) {
			t.Errorf("Write %s allowed: %s", path, out.Bytes())
		}
	}
	// What the shell's > may write, an edit tool may: the exclude file
	// (no git command writes it), a hook of the project's.
	for _, path := range []string{"main.go", ".git/info/exclude", ".git/hooks/pre-commit"} {
		in := `{"session_id":"s","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{"file_path":"` + filepath.Join(dir, path) + `"}}`
		var out bytes.Buffer
		Run(context.Background(), "claude", strings.NewReader(in), &out, Options{})
		if out.Len() != 0 {
			t.Errorf("editing %s: %s", path, out.Bytes())
		}
	}
}

// A denial is recorded in the run's event log - the one the agent's
// environment names (a parallel worker's main tree), else the repository's
// own - and nowhere when wiggum has no runtime directory to record in.
func TestDenialIsRecordedInTheRunsEventLog(t *testing.T) {
	dir := repo(t)
	t.Setenv(session.EventLogEnv, "")
	t.Setenv("WIGGUM_STORY", "US-7")
	hook(t, "claude", "claude_pretooluse_bash.json", dir, Options{Guard: GuardAlways})
	if _, err := os.Stat(filepath.Join(dir, layout.RuntimeDir)); err == nil {
		t.Fatal("a denial outside any wiggum state created the runtime directory")
	}

	st := inSession(t, dir)
	hook(t, "claude", "claude_pretooluse_bash.json", dir, Options{Guard: GuardSession})
	own := st.Path(layout.RuntimeDir + "/" + layout.EventFile)
	var got []events.Event
	if _, err := events.Scan(own, func(e events.Event) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != events.GuardDenied || got[0].Decision != "deny" || got[0].Story != "US-7" ||
		!strings.Contains(got[0].Command, "git push") || got[0].Reason == "" {
		t.Fatalf("events %+v", got)
	}

	main := repo(t)
	mainLog := filepath.Join(main, layout.RuntimeDir, layout.EventFile)
	if err := os.MkdirAll(filepath.Dir(mainLog), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(session.EventLogEnv, mainLog)
	hook(t, "claude", "claude_pretooluse_bash.json", dir, Options{Guard: GuardSession})
	var inMain int
	if _, err := events.Scan(mainLog, func(e events.Event) error { inMain++; return nil }); err != nil || inMain != 1 {
		t.Fatalf("main log: %d events, %v", inMain, err)
	}
	// A variable naming anything but an event log is ignored.
	t.Setenv(session.EventLogEnv, filepath.Join(main, "main.go"))
	hook(t, "claude", "claude_pretooluse_bash.json", dir, Options{Guard: GuardSession})
	if data, _ := os.ReadFile(filepath.Join(main, "main.go")); string(data) != "package main\n" {
		t.Fatalf("wrote into %s: %q", "main.go", data)
	}
}

// TestOutsideSessionFailureIsCheap: a failing test run outside a session
// costs what reading the payload costs: no git process (a spy git on PATH
// counts them), the failure log appended to rather than rewritten (same
// file, old bytes untouched), and nothing written to the system temp dir.
func TestOutsideSessionFailureIsCheap(t *testing.T) {
	dir := repo(t)
	wiggumRanHere(t, dir)
	t.Setenv(layout.SessionEnv, "")
	hook(t, "claude", "claude_posttoolusefailure.json", dir, Options{}) // creates the log
	for range 30 {
		hook(t, "claude", "claude_posttoolusefailure.json", dir, Options{})
	}
	logPath := filepath.Join(dir, filepath.FromSlash(layout.RuntimeDir), layout.FailureFile)
	before, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	fiBefore, _ := os.Stat(logPath)

	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	spy := t.TempDir()
	calls := filepath.Join(spy, "calls")
	script := "#!/bin/sh\necho \"$@\" >> " + calls + "\nexec " + realGit + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(spy, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", spy+string(os.PathListSeparator)+os.Getenv("PATH"))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	out := hook(t, "claude", "claude_posttoolusefailure.json", dir, Options{})
	if !bytes.Contains(out, []byte("outside a wiggum session nothing is rolled back")) {
		t.Fatalf("answer: %s", out)
	}
	if data, err := os.ReadFile(calls); err == nil {
		t.Fatalf("the hook ran git:\n%s", data)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Fatalf("the hook wrote into the system temp dir: %v", entries)
	}
	after, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	fiAfter, _ := os.Stat(logPath)
	if !os.SameFile(fiBefore, fiAfter) || !bytes.HasPrefix(after, before) || len(after) == len(before) {
		t.Fatal("the failure log was rewritten, not appended to")
	}
	st, _ := checkpoint.Open(context.Background(), dir)
	if fs, err := session.Failures(st, ""); err != nil || len(fs) != 32 {
		t.Fatalf("failures: %d, %v", len(fs), err)
	}
	if status := git(t, dir, "status", "--porcelain"); status != "" {
		t.Fatalf("runtime state visible to git: %s", status)
	}
}

// The guard hook marks each shell command it sees by removing the file
// that wiggum run names in the agent's environment (session.GuardUnseenEnv),
// for every agent and with the guard off too: the run then knows the hooks
// run. A variable naming any other file removes nothing.
func TestGuardMarksShellCommandsSeen(t *testing.T) {
	dir := repo(t)
	runtime := filepath.Join(dir, layout.RuntimeDir)
	if err := os.MkdirAll(runtime, 0o755); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(runtime, layout.GuardUnseenFile)
	for _, tc := range []struct{ agent, file string }{
		{"claude", "claude_pretooluse_bash.json"},
		{"codex", "codex_pretooluse.json"},
		{"gemini", "gemini_beforetool.json"},
	} {
		for _, guard := range []string{GuardSession, GuardOff} {
			if err := os.WriteFile(mark, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv(session.GuardUnseenEnv, mark)
			hook(t, tc.agent, tc.file, dir, Options{Guard: guard})
			if _, err := os.Stat(mark); err == nil {
				t.Errorf("%s (guard %s): the shell command was not marked seen", tc.agent, guard)
			}
		}
	}
	// A file edit is no shell command: the mark stays.
	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hook(t, "claude", "claude_pretooluse_edit.json", dir, Options{Guard: GuardSession})
	if _, err := os.Stat(mark); err != nil {
		t.Error("an edit removed the mark")
	}
	// Hostile values: another file, a path climbing out, a relative path.
	victim := filepath.Join(dir, "keep.txt")
	other := filepath.Join(dir, "x", layout.RuntimeDir, layout.GuardUnseenFile)
	for _, v := range []string{victim, filepath.Join(runtime, "..", "..", "keep.txt"), other + "/../../../../../keep.txt", layout.RuntimeDir + "/" + layout.GuardUnseenFile} {
		if err := os.WriteFile(victim, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(session.GuardUnseenEnv, v)
		hook(t, "claude", "claude_pretooluse_bash.json", dir, Options{Guard: GuardSession})
		if _, err := os.Stat(victim); err != nil {
			t.Fatalf("%s=%q removed %s", session.GuardUnseenEnv, v, victim)
		}
	}
}

// A process of the session working in another worktree of the session's
// repository - Claude Code's subagents with isolation "worktree" work in
// .claude/worktrees/ with the session's environment - is under the
// session's guard and push backstop there, and a failing test run there is
// recorded but rolls nothing back (that tree holds no checkpoint of the
// session's). Another repository is not the session's for git's push
// hook, nor is the same worktree for a process without the session's
// environment; the session's agent hooks there still guard the session's
// tree (TestGuardFollowsTheSessionOutOfItsTree).
func TestSessionReachesTheAgentsOtherWorktrees(t *testing.T) {
	dir := repo(t)
	ctx := context.Background()
	wt := filepath.Join(dir, ".claude", "worktrees", "agent-1")
	git(t, dir, "worktree", "add", "-q", "-b", "worktree-agent-1", wt)
	other := repo(t)
	t.Setenv(AllowPushEnv, "")
	inSession(t, dir)
	t.Setenv(layout.RootEnv, dir)

	opts := Options{Guard: GuardSession}
	if out := hook(t, "claude", "claude_pretooluse_bash.json", wt, opts); !bytes.Contains(out, []byte(`"permissionDecision":"deny"`)) {
		t.Fatalf("the guard is off in the session's other worktree: %s", out)
	}
	if _, ok := GitHook(ctx, wt, "pre-push").(*PushRefusedError); !ok {
		t.Fatal("a push from the session's other worktree is let through")
	}
	t.Setenv(AllowPushEnv, "1")
	if _, ok := GitHook(ctx, wt, "pre-push").(*PushRefusedError); !ok {
		t.Fatalf("the agent's own %s=1 let its push through from the other worktree", AllowPushEnv)
	}
	t.Setenv(AllowPushEnv, "")
	out := hook(t, "claude", "claude_posttoolusefailure.json", wt, opts)
	if !bytes.Contains(out, []byte("this worktree is not the one the wiggum session checked out, so nothing is rolled back here")) {
		t.Fatalf("a failing test run in the other worktree: %s", out)
	}

	if out := hook(t, "claude", "claude_pretooluse_bash.json", other, opts); !bytes.Contains(out, []byte(`"permissionDecision":"deny"`)) {
		t.Fatalf("the session's guard is off in another repository: %s", out)
	}
	if err := GitHook(ctx, other, "pre-push"); err != nil {
		t.Fatalf("a push from another repository is refused: %v", err)
	}
	t.Setenv(layout.SessionEnv, "")
	if out := hook(t, "claude", "claude_pretooluse_bash.json", wt, opts); len(out) != 0 {
		t.Fatalf("the guard is on in the worktree for a process outside the session: %s", out)
	}
	if err := GitHook(ctx, wt, "pre-push"); err != nil {
		t.Fatalf("a person's push from the worktree is refused: %v", err)
	}
}

// Claude Code runs the shell commands a skill's or custom command's file
// holds (!`cmd` inline, or a ```! block) as it loads, and its front
// matter's hooks while it is active, with no hook of their own: the guard judges them when the Skill tool is called (or the
// older SlashCommand), and denies the call as it would deny a command.
func TestSkillCommandsAreGuarded(t *testing.T) {
	dir := repo(t)
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".claude/skills/tidy/SKILL.md", "---\nname: tidy\ndescription: tidy up\n---\nTidied: !`git clean -fdx`\n")
	write(".claude/skills/some-dir/SKILL.md", "---\nname: \"renamed\"\n---\nNow:\n```!\necho hi\ngit push origin main\n```\n")
	write(".claude/commands/ops/deploy.md", "Reset: !`git reset --hard HEAD~1`\n")
	write(".claude/skills/status/SKILL.md", "---\nname: status\nhooks:\n  Stop:\n    - hooks:\n        - type: command\n          command: \"echo stopped\"\n---\nThe tree: !`git status --short`\n")
	write(".claude/skills/hooked/SKILL.md", "---\nname: hooked\nhooks:\n  PreToolUse:\n    - matcher: \"Bash\"\n      hooks:\n        - type: command\n          command: \"echo \\\"pre\\\"; git clean -fdx\" # tidy\n---\nHooked.\n")
	write(".claude/skills/single/SKILL.md", "---\nname: single\nhooks:\n  Stop:\n    - hooks: [{type: command, command: 'git branch -D main'}]\n---\n")
	write(".claude/skills/block/SKILL.md", "---\nname: block\nhooks:\n  Stop:\n    - hooks:\n        - type: command\n          command: |\n            echo one\n            git reset --hard HEAD~1\n          timeout: 5\n---\n")
	write(".claude/agents/reviewer.md", "---\nname: reviewer\ndescription: reviews\nhooks:\n  Stop:\n    - hooks:\n        - type: command\n          command: git clean -fdx\n---\nReview.\n")
	write(".claude/skills/plain/SKILL.md", "---\nname: plain\nhooks:\n  Stop:\n    - hooks:\n        - {type: command, command: git clean -fdx}\n---\n")
	t.Setenv("HOME", t.TempDir())
	call := func(tool string, input map[string]any) string {
		t.Helper()
		data, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": dir, "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input})
		var out bytes.Buffer
		Run(context.Background(), "claude", bytes.NewReader(data), &out, Options{Guard: GuardSession})
		return out.String()
	}
	if out := call("Skill", map[string]any{"skill": "tidy"}); out != "" {
		t.Fatalf("outside a session the guard must be off: %s", out)
	}
	inSession(t, dir)
	for _, tc := range []struct {
		tool  string
		input map[string]any
		want  string // "" when allowed
	}{
		{"Skill", map[string]any{"skill": "tidy"}, "the skill tidy (.claude/skills/tidy/SKILL.md) runs `git clean -fdx` as it loads or as its own hook, where no hook sees it: git clean -f"},
		{"Skill", map[string]any{"skill": "renamed"}, "the skill renamed (.claude/skills/some-dir/SKILL.md) runs `echo hi; git push origin main` as it loads or as its own hook, where no hook sees it: git push is not allowed"},
		{"Skill", map[string]any{"skill": "ops:deploy", "args": "now"}, "the skill ops:deploy (.claude/commands/ops/deploy.md) runs `git reset --hard HEAD~1`"},
		{"SlashCommand", map[string]any{"command": "/tidy now"}, "the skill tidy"},
		{"Skill", map[string]any{"skill": "status"}, ""},
		{"Agent", map[string]any{"subagent_type": "reviewer", "prompt": "review"}, "the subagent reviewer (.claude/agents/reviewer.md) runs `git clean -fdx`"},
		{"Agent", map[string]any{"subagent_type": "general-purpose", "prompt": "x"}, ""},
		{"Agent", map[string]any{"prompt": "x"}, ""},
		{"Skill", map[string]any{"skill": "hooked"}, "runs `echo \"pre\"; git clean -fdx` as it loads or as its own hook"},
		{"Skill", map[string]any{"skill": "single"}, "runs `git branch -D main`"},
		{"Skill", map[string]any{"skill": "block"}, "runs `echo one; git reset --hard HEAD~1`"},
		{"Skill", map[string]any{"skill": "plain"}, "runs `git clean -fdx`"},
		{"Skill", map[string]any{"skill": "simplify"}, ""},
		{"Skill", map[string]any{"skill": "../../etc/passwd"}, ""},
	} {
		out := call(tc.tool, tc.input)
		if tc.want == "" {
			if out != "" {
				t.Errorf("%s %v: denied: %s", tc.tool, tc.input, out)
			}
			continue
		}
		var r struct {
			Out struct{ PermissionDecision, PermissionDecisionReason string } `json:"hookSpecificOutput"`
		}
		_ = json.Unmarshal([]byte(out), &r)
		if r.Out.PermissionDecision != "deny" || !strings.Contains(r.Out.PermissionDecisionReason, tc.want) {
			t.Errorf("%s %v: %s\nwant a deny saying %q", tc.tool, tc.input, out, tc.want)
		}
	}
}

// The repository's own pre-commit hook, there before the session, is
// protected from the agent's shell and its edit tools alike; one the
// agent makes in its session is its own.
func TestProjectHookPredatingTheSession(t *testing.T) {
	dir := repo(t)
	own := filepath.Join(dir, ".git", "hooks", "pre-commit")
	if err := os.WriteFile(own, []byte("#!/bin/sh\nexec ruff check\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // its change time before the session's start
	inSession(t, dir)
	// The kernel stamps a change with its coarse clock, a tick behind
	// the one the session's start is read from.
	time.Sleep(20 * time.Millisecond)
	made := filepath.Join(dir, ".git", "hooks", "commit-msg")
	if err := os.WriteFile(made, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, input string }{
		{"Bash", `{"command":"rm .git/hooks/pre-commit"}`},
		{"Bash", `{"command":"echo 'exit 0' > .git/hooks/pre-commit"}`},
		{"Write", `{"file_path":"` + own + `","content":"exit 0"}`},
	} {
		in := `{"session_id":"s","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"` + c.tool + `","tool_input":` + c.input + `}`
		var out bytes.Buffer
		Run(context.Background(), "claude", strings.NewReader(in), &out, Options{})
		if !bytes.Contains(out.Bytes(), []byte(`"deny"`)) || !bytes.Contains(out.Bytes(), []byte("as --no-verify would")) {
			t.Errorf("%s %s: %s", c.tool, c.input, out.Bytes())
		}
	}
	for _, c := range []struct{ tool, input string }{
		{"Bash", `{"command":"rm .git/hooks/commit-msg"}`},
		{"Edit", `{"file_path":"` + made + `"}`},
	} {
		in := `{"session_id":"s","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"` + c.tool + `","tool_input":` + c.input + `}`
		var out bytes.Buffer
		Run(context.Background(), "claude", strings.NewReader(in), &out, Options{})
		if out.Len() != 0 {
			t.Errorf("%s %s, a hook the agent made: %s", c.tool, c.input, out.Bytes())
		}
	}
}

// Agent hooks installed for the user run in every project: a failing test
// run outside a session in a working tree wiggum never ran in is answered,
// and nothing is written there - no .ralph, no exclude rule.
func TestFailureOutsideWhereWiggumNeverRan(t *testing.T) {
	dir := repo(t)
	exclude := filepath.Join(dir, ".git", "info", "exclude")
	before, _ := os.ReadFile(exclude)
	out := hook(t, "claude", "claude_posttoolusefailure.json", dir, Options{})
	if !bytes.Contains(out, []byte("tests failed")) || !bytes.Contains(out, []byte("outside a wiggum session nothing is rolled back")) {
		t.Fatalf("answer: %s", out)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".ralph")); !os.IsNotExist(err) {
		t.Fatalf("the hook made .ralph in a tree wiggum never ran in: %v", err)
	}
	if after, _ := os.ReadFile(exclude); !bytes.Equal(before, after) {
		t.Fatalf("the hook changed .git/info/exclude:\n%s", after)
	}
}

// wiggumRanHere gives dir the .ralph directory a wiggum session leaves:
// outside a session, failures are recorded only where wiggum has run.
func wiggumRanHere(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".ralph"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestUndecodablePayloadIsAskedInSession: a PreToolUse payload that is
// JSON too deeply nested for the decoder (over 10,000 levels) cannot be
// judged, so in a session it is asked about and logged, never let through
// with an empty answer - wherever the deep value sits.
func TestUndecodablePayloadIsAskedInSession(t *testing.T) {
	dir := repo(t)
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	payloads := map[string]string{
		"deep tool_input": `{"session_id":"s1","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force origin main","x":` + deep + `}}`,
		"deep first":      `{"x":` + deep + `,"session_id":"s1","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force origin main"}}`,
	}
	t.Setenv(layout.SessionEnv, "")
	for name, p := range payloads {
		var out bytes.Buffer
		Run(context.Background(), "claude", strings.NewReader(p), &out, Options{})
		if out.Len() != 0 {
			t.Errorf("%s: outside a session the hook has no opinion: %s", name, out.Bytes())
		}
	}
	inSession(t, dir)
	for name, p := range payloads {
		for agent, want := range map[string]string{"claude": `"permissionDecision":"ask"`, "codex": `"permissionDecision":"deny"`} {
			var out bytes.Buffer
			Run(context.Background(), agent, strings.NewReader(p), &out, Options{})
			checkValidOutput(t, name, out.Bytes())
			if !bytes.Contains(out.Bytes(), []byte(want)) || !bytes.Contains(out.Bytes(), []byte("cannot tell whether the call is safe")) {
				t.Errorf("%s/%s: an undecodable PreToolUse in a session must be refused with a reason, got %q", agent, name, out.Bytes())
			}
		}
	}
	log, err := os.ReadFile(filepath.Join(dir, ".ralph", "wiggum", "hook-debug.log"))
	if err != nil || !bytes.Contains(log, []byte("unreadable payload")) {
		t.Errorf("the undecodable payload is not in hook-debug.log: %q, %v", log, err)
	}
}
