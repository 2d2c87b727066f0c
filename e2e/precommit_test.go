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
