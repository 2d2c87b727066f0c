package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The pre-commit framework's formatters (trailing-whitespace, black, ruff
// format, prettier) fix the files they check and fail the commit, for the
// person to look and commit again. Every story's commit failed so: each
// attempt was rolled back and the agent run again, to write the same
// unformatted code, until the story was skipped. wiggum now stages what
// the hook changed and commits once more; a hook that fails without
// fixing anything (a FIXME check) still fails the attempt, its words in
// the next prompt. With the real pre-commit (Debian's package).
func TestFormattingHookIsCommittedThrough(t *testing.T) {
	needTool(t, "pre-commit", "pre-commit")
	dir, marks, agent := scriptRepo(t, "", 2, `S=$WIGGUM_STORY
cat > "$MARKS/prompt-$S"
echo "$S" >> "$MARKS/invocations"
printf 'code of %s   \n' "$S" > "work-$S.txt"
if [ "$S" = US-2 ] && [ ! -e "$MARKS/fixme" ]; then
  touch "$MARKS/fixme"
  echo "FIXME later" >> "work-$S.txt"
fi
`)
	writeFile(t, filepath.Join(dir, ".pre-commit-config.yaml"), `repos:
  - repo: local
    hooks:
      - id: trailing-whitespace
        name: trim trailing whitespace
        entry: sed -i -e 's/[[:space:]]*$//'
        language: system
        types: [text]
      - id: no-fixme
        name: no FIXME
        entry: FIXME
        language: pygrep
        types: [text]
`)
	mustRun(t, dir, "git", "add", ".pre-commit-config.yaml")
	mustRun(t, dir, "git", "commit", "-q", "-m", "pre-commit")
	if r := run(t, dir, nil, "pre-commit", "install"); r.code != 0 {
		t.Fatalf("pre-commit install: %s%s", r.stdout, r.stderr)
	}
	head := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	r := wiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent, "--retries", "1")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := invocations(t, marks); n["US-1"] != 1 || n["US-2"] != 2 {
		t.Errorf("the agent ran %v times, want US-1 once and US-2 twice (its FIXME refused once)", n)
	}
	if !strings.Contains(r.stdout, "the pre-commit hook changed work-US-1.txt") {
		t.Errorf("the run does not say the hook changed US-1's file:\n%s", r.stdout)
	}
	if prompt, _ := os.ReadFile(filepath.Join(marks, "prompt-US-2")); !strings.Contains(string(prompt), "work-US-2.txt:2:FIXME later") {
		t.Errorf("US-2's retry was not told what the hook refused:\n%s", prompt)
	}
	if subjects := mustRun(t, dir, "git", "log", "--format=%s", head+"..main"); subjects != "US-2: story 2\nUS-1: story 1\n" {
		t.Errorf("the run's commits:\n%s", subjects)
	}
	for _, s := range []string{"US-1", "US-2"} {
		if got := mustRun(t, dir, "git", "show", "main:work-"+s+".txt"); got != "code of "+s+"\n" {
			t.Errorf("%s's committed file: %q", s, got)
		}
	}
	if st := mustRun(t, dir, "git", "status", "--porcelain"); st != "" {
		t.Errorf("left in the tree:\n%s", st)
	}
}

// A pre-commit hook that hangs (a network call, a tool waiting for a
// daemon) kept the loop's commit - and the run - waiting for ever, and a
// child it left running kept git's output open past git. The commit's
// hooks now get --timeout: stopped there with everything they started,
// the attempt fails saying so, and the run goes on.
func TestHangingHookIsStopped(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 1, `cat > /dev/null
echo "$WIGGUM_STORY" >> "$MARKS/invocations"
echo work > work.txt
`)
	sleep := uniqueSleep()
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	writeFile(t, hook, "#!/bin/sh\nsleep "+sleep+" &\necho waiting for the network\nwait\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	b := startWiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent, "--timeout", "3s", "--retries", "0")
	code := b.wait(t)
	if code != 5 || !strings.Contains(b.stdout(), "ran longer than --timeout 3s and was stopped") {
		t.Fatalf("exit %d, want 5 with the hook stopped\n%s\n%s", code, b.stdout(), b.stderr())
	}
	eventually(t, "the hook's child to be gone", func() bool { return len(withMarker(sleep)) == 0 })
	if st := mustRun(t, dir, "git", "status", "--porcelain"); st != "" {
		t.Errorf("left in the tree:\n%s", st)
	}
	if exists(filepath.Join(dir, ".git", "index.lock")) {
		t.Error("the stopped commit left .git/index.lock")
	}
}

// The pre-commit framework's no-commit-to-branch (pre-commit-hooks')
// refuses every commit on main and master, whatever is staged: run there,
// every story's commit was refused, each attempt - an agent's whole
// session - rolled back as a failure, story after story, until all were
// skipped. The run now asks the hook before the first attempt and does
// not start (exit 2, nothing changed); a refusal it could not foresee (a
// dirty tree it does not probe) stops the run after that one attempt,
// whose work is saved (exit 1). Run on a branch of its own (--branch), the
// stories are committed there. With the real pre-commit; the hook is a
// local one with the same id and behaviour (pre-commit-hooks itself comes
// from the network).
func TestProtectedBranchHookStopsTheRunAtOnce(t *testing.T) {
	needTool(t, "pre-commit", "pre-commit")
	dir, marks, agent := scriptRepo(t, "", 2, `cat > /dev/null
echo "$WIGGUM_STORY" >> "$MARKS/invocations"
echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
`)
	writeFile(t, filepath.Join(dir, ".pre-commit-config.yaml"), `repos:
  - repo: local
    hooks:
      - id: no-commit-to-branch
        name: "don't commit to branch"
        entry: sh -c 'b=$(git symbolic-ref --short HEAD); case "$b" in main|master) exit 1;; esac'
        language: system
        pass_filenames: false
        always_run: true
`)
	mustRun(t, dir, "git", "add", ".pre-commit-config.yaml")
	mustRun(t, dir, "git", "commit", "-q", "-m", "pre-commit")
	if r := run(t, dir, nil, "pre-commit", "install"); r.code != 0 {
		t.Fatalf("pre-commit install: %s%s", r.stdout, r.stderr)
	}
	branch := strings.TrimSpace(mustRun(t, dir, "git", "symbolic-ref", "--short", "HEAD"))
	head := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	env := []string{"MARKS=" + marks}
	args := []string{"run", "--plan", "plan.md", "--agent-cmd", "sh " + agent, "--retries", "2"}

	r := wiggum(t, dir, env, args...)
	if r.code != 2 || !strings.Contains(r.stderr, "no-commit-to-branch refuses every commit on "+branch) || !strings.Contains(r.stderr, "--branch NAME") {
		t.Fatalf("run on %s: exit %d, want 2 with how to go on\n%s\n%s", branch, r.code, r.stdout, r.stderr)
	}
	if n := invocations(t, marks); len(n) != 0 {
		t.Errorf("the agent ran %v before the refusal", n)
	}
	if now := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD")); now != head {
		t.Errorf("HEAD moved from %.12s to %.12s", head, now)
	}

	// A tree the probe leaves alone (--allow-dirty): one attempt, then
	// the stop, its work saved.
	writeFile(t, filepath.Join(dir, "notes.txt"), "mine\n")
	r = wiggum(t, dir, env, append(args, "--allow-dirty")...)
	if r.code != 1 || !strings.Contains(r.stderr, "refuses every commit on "+branch+", as it would every story's") || !strings.Contains(r.stderr, "refs/wiggum/backup/") {
		t.Fatalf("run with --allow-dirty: exit %d, want 1 after one attempt\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := invocations(t, marks); n["US-1"] != 1 || n["US-2"] != 0 {
		t.Errorf("the agent ran %v times, want US-1 once", n)
	}
	if err := os.Remove(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}

	r = wiggum(t, dir, env, append(args, "--branch", "stories")...)
	if r.code != 0 {
		t.Fatalf("run --branch stories: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if log := mustRun(t, dir, "git", "log", "--format=%s", "-2", "stories"); log != "US-2: story 2\nUS-1: story 1\n" {
		t.Errorf("stories' log:\n%s", log)
	}
	if now := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", branch)); now != head {
		t.Errorf("%s moved from %.12s to %.12s", branch, head, now)
	}
}
