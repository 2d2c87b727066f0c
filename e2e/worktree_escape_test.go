package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// escapeAgent removes its worktree's .git (US-1 only, unless CALM is set),
// then commits: with the .git file gone, git's search for a repository
// walks up out of the worktree, which lies inside the main tree.
const escapeAgent = `cat > /dev/null
if [ "$WIGGUM_STORY" = US-1 ] && [ -z "$CALM" ]; then
  rm -rf .git
  git commit -q --allow-empty -m "escaped from $WIGGUM_STORY"
fi
echo "work of $WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
`

// TestWorktreeWithoutGitNeverReachesMain: an agent that removed its
// worktree's .git cannot commit to, or reset, the main repository, and
// fails only its own story: the other workers go on and land theirs, the
// run ends with work left (exit 5) saying which worktree lost its .git,
// that story's files are saved under refs/wiggum/backup/ before its
// worktree is removed, and main keeps every commit. The next run finishes
// the story. (Before, the whole run stopped with exit 1 at the first
// failed rollback, stopping every other worker's story.)
func TestWorktreeWithoutGitNeverReachesMain(t *testing.T) {
	dir, _, agent := scriptRepo(t, "", 3, escapeAgent)
	before := mustRun(t, dir, "git", "rev-parse", "HEAD")
	args := []string{"run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", "sh " + agent, "--retries", "0"}
	res := wiggum(t, dir, nil, args...)
	out := res.stdout + res.stderr
	if res.code != 5 {
		t.Fatalf("exit %d, want 5 (work left)\n%s", res.code, out)
	}
	log := mustRun(t, dir, "git", "log", "--format=%H %s", "main")
	if strings.Contains(log, "escaped") {
		t.Fatalf("the agent's commit reached main:\n%s", log)
	}
	if !strings.Contains(log, strings.TrimSpace(before)) {
		t.Fatalf("main lost %s (reset by the agent?):\n%s", before, log)
	}
	for _, id := range []string{"US-2", "US-3"} {
		if !strings.Contains(log, id+": mark done") {
			t.Errorf("%s did not land:\n%s\n%s", id, log, out)
		}
	}
	if plan := readFile(t, filepath.Join(dir, "plan.md")); !strings.Contains(plan, "- [ ] US-1") {
		t.Errorf("US-1 is not open:\n%s", plan)
	}
	if !strings.Contains(out, "the worktree of US-1") || !strings.Contains(out, "has lost its .git") {
		t.Errorf("the run does not say the worktree of US-1 lost its .git:\n%s", out)
	}
	backups := strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/"))
	saved := false
	for _, ref := range backups {
		if got := run(t, dir, nil, "git", "show", ref+":f-US-1.txt"); got.code == 0 && strings.TrimSpace(got.stdout) == "work of US-1" {
			saved = true
			if !strings.Contains(out, ref) {
				t.Errorf("the run does not name the backup %s:\n%s", ref, out)
			}
		}
	}
	if !saved {
		t.Errorf("US-1's files are in no backup (%v)\n%s", backups, out)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, ".ralph", "wiggum", "worktrees", "*")); len(ents) != 0 {
		t.Errorf("worktrees left: %v", ents)
	}
	if st := mustRun(t, dir, "git", "status", "--porcelain"); strings.TrimSpace(st) != "" {
		t.Errorf("the main tree is dirty after the run:\n%s", st)
	}
	again := wiggum(t, dir, []string{"CALM=1"}, args...)
	if again.code != 0 {
		t.Fatalf("the next run: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
	if plan := readFile(t, filepath.Join(dir, "plan.md")); strings.Contains(plan, "[ ]") {
		t.Errorf("stories left open after the next run:\n%s", plan)
	}
	if got := strings.TrimSpace(mustRun(t, dir, "git", "show", "main:f-US-1.txt")); got != "work of US-1" {
		t.Errorf("US-1's work on main: %q", got)
	}
}

// TestWorktreeRemovedWholeFailsOnlyItsStory: a worktree removed whole
// during its attempt (by its own agent, or by another agent's rm -rf,
// neither of which wiggum can stop) fails only its own story, as a
// worktree that lost its .git does: the other workers go on and land
// theirs, the run ends with work left (exit 5) saying the worktree was
// removed, and the next run finishes the story. (Before, the refused
// rollback tried to set the vanished worktree aside, failed, and stopped
// the whole run with exit 1 and "run 'wiggum checkpoint' first".)
func TestWorktreeRemovedWholeFailsOnlyItsStory(t *testing.T) {
	for name, removal := range map[string]string{
		"itself":  `[ "$WIGGUM_STORY" = US-1 ] && { d=$PWD; cd /; rm -rf "$d"; }`,
		"another": `[ "$WIGGUM_STORY" = US-2 ] && { while [ ! -e "$MARKS/US-1-started" ]; do sleep 0.05; done; rm -rf ../US-1; touch "$MARKS/removed"; }`,
	} {
		t.Run(name, func(t *testing.T) {
			dir, marks, agent := scriptRepo(t, "", 3, `cat > /dev/null
echo "work of $WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
git add "f-$WIGGUM_STORY.txt" && git commit -qm "work of $WIGGUM_STORY"
if [ -z "$CALM" ]; then
  [ "$WIGGUM_STORY" = US-1 ] && touch "$MARKS/US-1-started"
  `+removal+`
  [ "$WIGGUM_STORY" = US-1 ] && while [ ! -e "$MARKS/removed" ] && [ -e "$PWD" ]; do sleep 0.05; done
fi
true
`)
			env := []string{"MARKS=" + marks}
			if name == "itself" {
				writeFile(t, filepath.Join(marks, "removed"), "")
			}
			args := []string{"run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", "sh " + agent, "--retries", "0"}
			res := wiggum(t, dir, env, args...)
			out := res.stdout + res.stderr
			if res.code != 5 {
				t.Fatalf("exit %d, want 5 (work left)\n%s", res.code, out)
			}
			log := mustRun(t, dir, "git", "log", "--format=%s", "main")
			for _, id := range []string{"US-2", "US-3"} {
				if !strings.Contains(log, id+": mark done") {
					t.Errorf("%s did not land:\n%s\n%s", id, log, out)
				}
			}
			if plan := readFile(t, filepath.Join(dir, "plan.md")); !strings.Contains(plan, "- [ ] US-1") {
				t.Errorf("US-1 is not open:\n%s", plan)
			}
			if !strings.Contains(out, "the worktree of US-1") || !strings.Contains(out, "was removed during its attempt") {
				t.Errorf("the run does not say the worktree of US-1 was removed:\n%s", out)
			}
			if strings.Contains(out, "wiggum checkpoint") {
				t.Errorf("the run tells to run 'wiggum checkpoint':\n%s", out)
			}
			if name == "itself" {
				// Its commit, made before the removal, is kept (on its
				// branch), as is every agent commit.
				kept := mustRun(t, dir, "git", "log", "--format=%s", "--branches=wiggum/", "--glob=refs/wiggum/backup/")
				if !strings.Contains(kept, "work of US-1") {
					t.Errorf("US-1's commit is on no branch or backup:\n%s\n%s", kept, out)
				}
			}
			again := wiggum(t, dir, append(env, "CALM=1"), args...)
			if again.code != 0 {
				t.Fatalf("the next run: exit %d\n%s%s", again.code, again.stdout, again.stderr)
			}
			if got := strings.TrimSpace(mustRun(t, dir, "git", "show", "main:f-US-1.txt")); got != "work of US-1" {
				t.Errorf("US-1's work on main: %q", got)
			}
			if wts := strings.Count(mustRun(t, dir, "git", "worktree", "list", "--porcelain"), "worktree "); wts != 1 {
				t.Errorf("%d worktrees registered, want 1", wts)
			}
			if ents, _ := os.ReadDir(filepath.Join(dir, ".ralph/wiggum/worktrees")); len(ents) != 0 {
				t.Errorf("%d worktree directories left", len(ents))
			}
		})
	}
}

// TestShimRefusesRemovingLeasedWorktree: an agent's git worktree remove
// -f -f (which overrides git's own worktree lock) of another worker's
// worktree, whose lease is held, is refused by wiggum's git shim: a
// leased worktree is never removed by a command wiggum controls. Both
// stories land.
func TestShimRefusesRemovingLeasedWorktree(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 2, `cat > /dev/null
echo "work of $WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
if [ "$WIGGUM_STORY" = US-1 ]; then
  while [ ! -e "$MARKS/US-2-started" ]; do sleep 0.05; done
  git worktree remove -f -f ../US-2 2> "$MARKS/rm.err"; echo $? > "$MARKS/rm.code"
else
  touch "$MARKS/US-2-started"
  while [ ! -e "$MARKS/rm.code" ]; do sleep 0.05; done
fi
true
`)
	res := wiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", "sh "+agent, "--retries", "0")
	out := res.stdout + res.stderr
	if code := strings.TrimSpace(readFile(t, filepath.Join(marks, "rm.code"))); code == "0" {
		t.Fatalf("git worktree remove -f -f of US-2's leased worktree succeeded\n%s", out)
	}
	if msg := readFile(t, filepath.Join(marks, "rm.err")); !strings.Contains(msg, "lease") {
		t.Errorf("the refusal does not say the worktree is leased: %q", msg)
	}
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\n%s", res.code, out)
	}
	log := mustRun(t, dir, "git", "log", "--format=%s", "main")
	for _, id := range []string{"US-1", "US-2"} {
		if !strings.Contains(log, id+": mark done") {
			t.Errorf("%s did not land:\n%s\n%s", id, log, out)
		}
	}
}

// TestKeptBranchIsNotCountedDone: a finished story whose branch conflicts
// at landing (kept, not merged) is not counted as done in the run's
// summary, which names it as kept. (Before: "2 story(ies) done, 1 open"
// for a plan of 2 with one landed.)
func TestKeptBranchIsNotCountedDone(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 2, `cat > /dev/null
touch "$MARKS/started-$WIGGUM_STORY"
while [ ! -e "$MARKS/started-US-1" ] || [ ! -e "$MARKS/started-US-2" ]; do sleep 0.05; done
echo "line of $WIGGUM_STORY" > shared.txt
git add shared.txt && git commit -qm "shared by $WIGGUM_STORY"
`)
	res := wiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--workers", "2", "-q", "--agent-cmd", "sh "+agent)
	out := res.stdout + res.stderr
	if res.code != 5 || !strings.Contains(out, "conflicts with main") {
		t.Fatalf("exit %d, want 5 with a conflict\n%s", res.code, out)
	}
	if !strings.Contains(out, "1 story(ies) done") || !strings.Contains(out, "1 kept") {
		t.Errorf("the summary does not count 1 done and 1 kept:\n%s", out)
	}
}
