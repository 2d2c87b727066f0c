package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/conformance/fakemodel"
)

// denyReason asks wiggum's guard (as a Claude Code hook, guard always on)
// why it denies command: the text the model must then see.
func (w *world) denyReason(command string) string {
	w.t.Helper()
	return w.hookDenies("claude", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": command}})
}

// hookDenies runs `wiggum hook AGENT` on a PreToolUse payload inside a
// session of its own (wiggum lock), as the agent's hook runs inside
// wiggum run, and returns the reason it denies it with: the words a
// reason has outside a session (--guard always) are not a session's.
func (w *world) hookDenies(agent string, payload map[string]any) string {
	w.t.Helper()
	payload["session_id"], payload["cwd"], payload["hook_event_name"] = "x", w.dir, "PreToolUse"
	data, _ := json.Marshal(payload)
	path := filepath.Join(w.t.TempDir(), "payload.json")
	writeFile(w.t, path, string(data))
	out := w.cmd(w.dir, "wiggum", "lock", "--", "sh", "-c", "wiggum hook "+agent+" < "+path)
	if i := strings.LastIndex(out, "\n{"); i >= 0 {
		out = out[i+1:] // after what wiggum lock logs (a WARN line)
	}
	var resp struct {
		Out struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || resp.Out.Decision != "deny" {
		w.t.Fatalf("the guard does not deny %v: %s", payload, out)
	}
	return resp.Out.Reason
}

// hookOut is what `wiggum hook AGENT --guard always` answers for a shell
// command: "" when the guard lets it run.
func (w *world) hookOut(agent, command string) string {
	w.t.Helper()
	data, _ := json.Marshal(map[string]any{"session_id": "x", "cwd": w.dir, "hook_event_name": "PreToolUse",
		"tool_name": "Bash", "tool_input": map[string]any{"command": command}})
	path := filepath.Join(w.t.TempDir(), "payload.json")
	writeFile(w.t, path, string(data))
	return strings.TrimSpace(w.cmd(w.dir, "sh", "-c", "wiggum hook "+agent+" --guard always < "+path))
}

// (a) The guard's deny reaches the model as the tool's result, and the
// command never runs.
func TestGuardDenyReachesModel(t *testing.T) {
	forEachClient(t, func(t *testing.T, c client) {
		const push = "git push origin HEAD:refs/heads/pushed"
		w := newWorld(t, c, fakemodel.Turn{Shell: push}, fakemodel.Turn{Text: "done"})
		w.run(0)
		if refs := w.remoteRefs(); strings.Contains(refs, "pushed") {
			t.Fatalf("the denied push reached the remote:\n%s", refs)
		}
		reason := w.denyReason(push)
		if !hasText(w.turnRequest(1).Body, reason) {
			t.Fatalf("the model's next request does not carry the guard's reason %q:\n%.3000s", reason, w.turnRequest(1).Body)
		}
	})
}

// (b) A failing test run - failing with its exit code, or "passing"
// through | tee - is rolled back mid-iteration, saved under
// refs/wiggum/backup/, and the model is told.
func TestFailingTestRunRolledBack(t *testing.T) {
	for _, how := range []struct{ name, cmd, runner string }{
		{"exit", "npm test", "npm test"},
		{"tee", "npm test 2>&1 | tee test.log", "npm test"},
		// An option with a value before the subcommand (a monorepo's
		// npm --prefix web test) once hid the test run.
		{"prefix", "npm --prefix . test", "npm test"},
		// Node's own runner, run directly, was not taken for a test run.
		{"node", "node --test", "node --test"},
		// Only node's closing counts are left after a tail (# fail 1),
		// and its spec reporter prints no "not ok" line (ℹ fail 1).
		{"tail", "npm test 2>&1 | tail -12", "npm test"},
		{"spec", "node --test --test-reporter=spec 2>&1 | tee test.log", "node --test"},
	} {
		t.Run(how.name, func(t *testing.T) {
			forEachClient(t, func(t *testing.T, c client) {
				w := newWorld(t, c, fakemodel.Turn{Shell: "echo attempt > attempt.txt && " + how.cmd}, fakemodel.Turn{Text: "done"})
				w.run(5) // the model then ends with no new work: the attempt fails
				if _, err := os.Stat(filepath.Join(w.dir, "attempt.txt")); err == nil {
					t.Fatal("attempt.txt survived the failing test run: nothing was rolled back")
				}
				b := w.backups()
				if len(b) == 0 {
					t.Fatalf("no backup under refs/wiggum/backup/\nrequests:\n%s", w.requestLog())
				}
				if got := w.git("show", b[0]+":attempt.txt"); got != "attempt\n" {
					t.Fatalf("the backup %s does not hold the attempt: %q", b[0], got)
				}
				if !hasText(w.turnRequest(1).Body, "wiggum: tests failed ("+how.runner+")") {
					t.Fatalf("the model's next request does not carry wiggum's message:\n%.3000s", w.turnRequest(1).Body)
				}
			})
		})
	}
}

// A failing test run whose output has no summary wiggum knows (the
// build step before the tests throws) fails by its exit status - which
// Codex's PostToolUse does not carry: wiggum reads it from Codex's
// transcript.
func TestFailingRunWithoutSummaryRolledBack(t *testing.T) {
	forEachClient(t, func(t *testing.T, c client) {
		w := newWorld(t, c)
		writeFile(t, filepath.Join(w.dir, "package.json"), `{"name": "app", "private": true, "scripts": {"test": "node build.js && node --test"}}`+"\n")
		writeFile(t, filepath.Join(w.dir, "build.js"), "throw new Error('cannot build: missing module ./gen')\n")
		w.git("add", "-A")
		w.git("commit", "-qm", "a build step")
		w.srv.Script(fakemodel.Turn{Shell: "echo attempt > attempt.txt && npm test"}, fakemodel.Turn{Text: "done"})
		w.run(5) // the model then ends with no new work: the attempt fails
		if _, err := os.Stat(filepath.Join(w.dir, "attempt.txt")); err == nil {
			t.Fatal("attempt.txt survived the failing test run: nothing was rolled back")
		}
		if b := w.backups(); len(b) == 0 || w.git("show", b[0]+":attempt.txt") != "attempt\n" {
			t.Fatalf("no backup holding the attempt: %v", b)
		}
		if !hasText(w.turnRequest(1).Body, "wiggum: tests failed (npm test)") {
			t.Fatalf("the model's next request does not carry wiggum's message:\n%.3000s", w.turnRequest(1).Body)
		}
	})
}

// A test-failure hook that Claude Code kills at its timeout before its
// rollback finishes (a killpoint stands in for the kill) left no record:
// the failing work was committed as done, exit 0. The run now finds the
// hook's record, fails the attempt and rolls it back itself.
func TestHookKilledBeforeRollbackFinished(t *testing.T) {
	forClients(t, []string{"claude"}, func(t *testing.T, c client) {
		w := newWorld(t, c, fakemodel.Turn{Shell: "echo attempt > attempt.txt && npm test"}, fakemodel.Turn{Text: "done"})
		// Only a hook reaches this point; the loop's own rollback goes on.
		w.env = append(w.env, "WIGGUM_TEST_KILLPOINT=hook-rollback-recorded")
		out := w.run(5)
		if !strings.Contains(out, "the agent's hook was stopped before its rollback finished") {
			t.Fatalf("the run does not say the hook's rollback was cut off:\n%s", out)
		}
		if log := w.git("log", "--format=%s"); strings.Contains(log, "US-1") {
			t.Fatalf("the failing attempt was committed:\n%s", log)
		}
		if _, err := os.Stat(filepath.Join(w.dir, "attempt.txt")); err == nil {
			t.Fatal("attempt.txt survived: the run did not roll the attempt back")
		}
		if b := w.backups(); len(b) == 0 || w.git("show", b[0]+":attempt.txt") != "attempt\n" {
			t.Fatalf("no backup holding the attempt: %v", b)
		}
	})
}

// (c) wiggum run commits the story end to end, ticks it, and records the
// tokens (and cost, where the client reports one) in the event log.
func TestRunCommitsStory(t *testing.T) {
	forEachClient(t, func(t *testing.T, c client) {
		w := newWorld(t, c, fakemodel.Turn{Shell: "echo hello > story.txt"}, fakemodel.Turn{Text: "done"})
		w.run(0)
		if log := w.git("log", "--format=%s"); !strings.Contains(log, "US-1: make the change") {
			t.Fatalf("no story commit:\n%s", log)
		}
		if got := w.git("show", "HEAD:story.txt"); got != "hello\n" {
			t.Fatalf("story.txt not committed: %q", got)
		}
		if st := w.git("status", "--porcelain"); st != "" {
			t.Fatalf("tree left dirty:\n%s", st)
		}
		plan, _ := os.ReadFile(filepath.Join(w.dir, "plan.md"))
		if !strings.Contains(string(plan), "- [x] US-1") {
			t.Fatalf("story not ticked:\n%s", plan)
		}
		e := w.event("iteration_end")
		in, _ := e["input_tokens"].(float64)
		out, _ := e["output_tokens"].(float64)
		if in < fakemodel.InputTokens || out < fakemodel.OutputTokens {
			t.Fatalf("tokens not recorded (server answered %d in / %d out per turn): %v", fakemodel.InputTokens, fakemodel.OutputTokens, e)
		}
		if cost, _ := e["cost_usd"].(float64); c.name == "claude" && cost <= 0 {
			t.Fatalf("claude reports its cost, none recorded: %v", e)
		}
	})
}

// (d) A usage-limit answer stops the run (exit 5) with a usage_limit event,
// and the plan stays open.
func TestUsageLimitRecognised(t *testing.T) {
	forEachClient(t, func(t *testing.T, c client) {
		w := newWorld(t, c, fakemodel.Turn{Status: 429})
		out := w.run(5)
		e := w.event("usage_limit")
		if msg, _ := e["message"].(string); msg == "" {
			t.Fatalf("usage_limit event without the agent's message: %v", e)
		}
		if !strings.Contains(out, "stopped: the agent says") {
			t.Fatalf("the run does not say why it stopped:\n%s", out)
		}
		plan, _ := os.ReadFile(filepath.Join(w.dir, "plan.md"))
		if !strings.Contains(string(plan), "- [ ] US-1") {
			t.Fatalf("the plan changed:\n%s", plan)
		}
	})
}

// (e) The pre-push backstop holds for a push the guard cannot see (a
// script the agent wrote), from the agent's own shell - inside Codex that
// is a new PID namespace - and from a new PID namespace made on purpose: a
// session is live wherever the push is made from.
//
// Not for gemini: gemini-cli empties core.hooksPath in its shell, so no git
// hook runs there and its BeforeTool guard is the only stop for a push
// (TestGuardDenyReachesModel).
func TestPrePushBackstop(t *testing.T) {
	forEachClient(t, func(t *testing.T, c client) {
		if c.name == "gemini" {
			return
		}
		// The script is named through a variable: the guard reads a script
		// a command writes or names, so only this way does the push get
		// past it to the pre-push hook.
		scripted := "printf 'git push origin HEAD:refs/heads/scripted\\n' > push.sh; f=push.sh; sh \"$f\""
		unshared := "printf 'git push origin HEAD:refs/heads/unshared\\n' > push2.sh; f=push2.sh; unshare --pid --fork --mount-proc sh \"$f\""
		w := newWorld(t, c, fakemodel.Turn{Shell: scripted}, fakemodel.Turn{Shell: unshared}, fakemodel.Turn{Text: "done"})
		for _, cmd := range []string{scripted, unshared} {
			if out := w.hookOut("claude", cmd); out != "" {
				t.Fatalf("the guard stops %q itself, so the backstop is not tested: %s", cmd, out)
			}
		}
		w.run(0)
		if w.srv.Played() < 3 {
			t.Fatalf("the client stopped early\n%s", w.requestLog())
		}
		if refs := w.remoteRefs(); strings.Contains(refs, "scripted") || strings.Contains(refs, "unshared") {
			t.Fatalf("a push during the session reached the remote:\n%s", refs)
		}
		for i := 1; i <= 2; i++ {
			if !hasText(w.turnRequest(i).Body, "push refused: ") {
				t.Fatalf("turn %d: the pre-push hook's refusal is not in the model's next request:\n%.3000s", i, w.turnRequest(i).Body)
			}
		}
	})
}

// The same backstop without an agent: wiggum lock -- unshare ... git push.
func TestPrePushBackstopUnshare(t *testing.T) {
	w := newWorld(t, client{})
	if out, code := w.exec(w.dir, "unshare", "--pid", "--fork", "--mount-proc", "true"); code != 0 {
		// Without the privilege the push below would fail for that reason
		// and prove nothing.
		t.Skipf("unshare --pid is not permitted here (needs root or user namespaces): %s", out)
	}
	out, code := w.exec(w.dir, filepath.Join(wiggumDir, "wiggum"), "lock", "--", "unshare", "--pid", "--fork", "--mount-proc",
		"git", "push", "origin", "HEAD:refs/heads/unshared")
	if code == 0 || strings.Contains(w.remoteRefs(), "unshared") {
		t.Fatalf("a push from a new PID namespace inside a session went through (exit %d):\n%s", code, out)
	}
}

// An attempt in which the agent committed and then its tests failed is
// rolled back commit and all: the commit is provably the session's own
// (the commit journal has it), so nothing is refused. (Inside codex's
// sandbox .git is read-only: its commit fails and only the file is rolled
// back.)
//
// Not for gemini: its shell empties core.hooksPath, so the post-commit hook
// never journals the agent's commit and the rollback refuses it as not
// provably the session's own (the attempt is kept and the model told).
func TestAgentCommitRolledBack(t *testing.T) {
	forEachClient(t, func(t *testing.T, c client) {
		if c.name == "gemini" {
			return
		}
		w := newWorld(t, c, fakemodel.Turn{Shell: "echo wip > wip.txt && git add wip.txt && git commit -qm wip; npm test"},
			fakemodel.Turn{Text: "done"})
		head := strings.TrimSpace(w.git("rev-parse", "HEAD"))
		w.run(5) // the model then ends with no new work: the attempt fails
		if _, err := os.Stat(filepath.Join(w.dir, "wip.txt")); err == nil {
			t.Fatalf("wip.txt survived the failing test run\nrequests:\n%s", w.requestLog())
		}
		if log := w.git("log", "--format=%s", head+"..HEAD"); strings.Contains(log, "wip") {
			t.Fatalf("the agent's commit survived the rollback:\n%s", log)
		}
		if !hasText(w.turnRequest(1).Body, "wiggum: tests failed (npm test)") {
			t.Fatalf("the model's next request does not carry wiggum's message:\n%.3000s", w.turnRequest(1).Body)
		}
	})
}

// (f) A script the agent writes with its file tool and runs in its next
// step is judged by what it holds: the guard reads push.sh when the agent
// runs `sh push.sh`. For gemini that is the only stop - its shell turns
// git hooks off, so the pre-push backstop never runs there.
//
// gemini only: the fake model's file-write turn speaks gemini's
// write_file (Claude Code and Codex keep the pre-push backstop,
// TestPrePushBackstop).
func TestGuardReadsWrittenScript(t *testing.T) {
	forClients(t, []string{"gemini"}, func(t *testing.T, c client) {
		const script = "git push origin HEAD:refs/heads/scripted\n"
		w := newWorld(t, c,
			fakemodel.Turn{WriteFile: "push.sh", WriteContent: script},
			fakemodel.Turn{Shell: "sh push.sh"},
			fakemodel.Turn{Text: "done"})
		w.run(0)
		if w.srv.Played() < 3 {
			t.Fatalf("the client stopped early\n%s", w.requestLog())
		}
		if refs := w.remoteRefs(); strings.Contains(refs, "scripted") {
			t.Fatalf("the push in the written script reached the remote:\n%s", refs)
		}
		if got, err := os.ReadFile(filepath.Join(w.dir, "push.sh")); err != nil || string(got) != script {
			t.Fatalf("write_file did not write push.sh (%v): %q\nrequests:\n%s", err, got, w.requestLog())
		}
		reason := w.denyReason("sh push.sh")
		if !hasText(w.turnRequest(2).Body, reason) {
			t.Fatalf("the model's next request does not carry the guard's reason %q:\n%.3000s", reason, w.turnRequest(2).Body)
		}
	})
}

// (b, submodule) A failing test run after the agent edited a file inside
// a checked-out submodule: the rollback returns the submodule too (git's
// reset leaves it alone), saves its state in the submodule's own
// repository, and the model is told.
func TestFailingTestRunRollsBackSubmodule(t *testing.T) {
	forEachClient(t, func(t *testing.T, c client) {
		w := newWorld(t, c, fakemodel.Turn{Shell: "echo broken >> vendor/lib/lib.txt && npm test"}, fakemodel.Turn{Text: "done"})
		addSubmodule(t, w)
		w.run(5) // the model then ends with no new work: the attempt fails
		got, err := os.ReadFile(filepath.Join(w.dir, "vendor/lib/lib.txt"))
		if err != nil || string(got) != "lib\n" {
			t.Fatalf("vendor/lib/lib.txt after the rollback: %q, %v\nrequests:\n%s", got, err, w.requestLog())
		}
		saved := strings.Fields(w.cmd(filepath.Join(w.dir, "vendor/lib"), "git", "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/"))
		if len(saved) == 0 {
			t.Fatal("no backup in the submodule's repository")
		}
		if got := w.cmd(filepath.Join(w.dir, "vendor/lib"), "git", "show", saved[0]+":lib.txt"); got != "lib\nbroken\n" {
			t.Fatalf("the submodule's backup holds %q", got)
		}
		if !hasText(w.turnRequest(1).Body, "The submodule vendor/lib returned to") {
			t.Fatalf("the model's next request does not say the submodule was returned:\n%.3000s", w.turnRequest(1).Body)
		}
	})
}
