package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestKilledParallelRunResumes is the field report: `wiggum run --workers 2`
// over 6 stories, SIGKILLed while two agents are mid-story with an
// uncommitted file each, then run again. The second run must finish every
// story without creating a second worktree or branch for the killed
// stories, leave no worktree or branch behind, and the killed attempts'
// files must be in a backup ref.
func TestKilledParallelRunResumes(t *testing.T) {
	dir := newRepo(t)
	marks := t.TempDir()
	var plan strings.Builder
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&plan, "- [ ] US-00%d: story %d\n", i, i)
	}
	writeFile(t, filepath.Join(dir, "plan.md"), plan.String())
	mustRun(t, dir, "git", "add", "plan.md")
	mustRun(t, dir, "git", "commit", "-q", "-m", "plan")
	// Stories 5 and 6 write a file and hang until killed; the others are
	// quick, so the kill finds exactly those two mid-story.
	agent := filepath.Join(marks, "agent.sh")
	writeFile(t, agent, `cat > /dev/null
echo "work of $WIGGUM_STORY" > "wip-$WIGGUM_STORY.txt"
case $WIGGUM_STORY in US-005|US-006)
  if [ ! -e "`+marks+`/resumed" ]; then touch "`+marks+`/$WIGGUM_STORY"; sleep `+uniqueSleep()+`; fi ;;
esac
`)
	args := []string{"run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", "sh " + agent}
	p := startWiggum(t, dir, nil, args...)
	waitFile(t, filepath.Join(marks, "US-005"))
	waitFile(t, filepath.Join(marks, "US-006"))
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	if code := p.wait(t); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("wiggum exited %d before the kill", code)
	}
	st := wiggum(t, dir, nil, "status")
	if !strings.Contains(st.stdout, "was interrupted") || !strings.Contains(st.stdout, "wiggum run --plan plan.md --workers 2") {
		t.Errorf("status after the kill does not say how to resume:\n%s%s", st.stdout, st.stderr)
	}

	writeFile(t, filepath.Join(marks, "resumed"), "")
	r := wiggum(t, dir, nil, args...)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"US-005", "US-006"} {
		if !strings.Contains(r.stdout, s+": the killed run's worktree is saved in refs/wiggum/backup/") {
			t.Errorf("no word about %s's saved worktree:\n%s", s, r.stdout)
		}
	}
	// A second worktree or branch of a story is named <story>-2; the check
	// looked for "-2" anywhere before, which a backup ref's commit id can
	// hold (refs/wiggum/backup/<time>-2c1d7f8...).
	if reflog := mustRun(t, dir, "git", "reflog", "--all"); strings.Contains(r.stdout, "US-005-2") || strings.Contains(r.stdout, "US-006-2") ||
		strings.Contains(reflog, "wiggum/US-005-2") || strings.Contains(reflog, "wiggum/US-006-2") {
		t.Errorf("a second worktree or branch was made for a killed story:\n%s", r.stdout)
	}
	if plan, _ := os.ReadFile(filepath.Join(dir, "plan.md")); strings.Contains(string(plan), "[ ]") {
		t.Errorf("stories left open:\n%s", plan)
	}
	if wts := strings.Count(mustRun(t, dir, "git", "worktree", "list", "--porcelain"), "worktree "); wts != 1 {
		t.Errorf("%d worktrees registered, want 1", wts)
	}
	if b := mustRun(t, dir, "git", "for-each-ref", "refs/heads/wiggum/"); b != "" {
		t.Errorf("branches left:\n%s", b)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".ralph/wiggum/worktrees")); len(ents) != 0 {
		t.Errorf("%d worktree directories left", len(ents))
	}
	// The killed attempts' uncommitted files are in a backup.
	refs := strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/"))
	for _, s := range []string{"US-005", "US-006"} {
		found := false
		for _, ref := range refs {
			if run(t, dir, nil, "git", "cat-file", "-e", ref+":wip-"+s+".txt").code == 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("the killed attempt's wip-%s.txt is in no backup (%v)", s, refs)
		}
	}
	st = wiggum(t, dir, nil, "status", "--json")
	if !strings.Contains(st.stdout, `"resume": null`) {
		t.Errorf("status still reports a run to resume:\n%s", st.stdout)
	}
	if left := withMarker(marks); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
}

// TestKilledSerialRunResumes: SIGKILL a serial run mid-attempt (the agent
// made a commit and left a file); the next run rolls the attempt back,
// saving both, does not count it as failed, and finishes.
func TestKilledSerialRunResumes(t *testing.T) {
	dir := newRepo(t)
	marks := t.TempDir()
	writeFile(t, filepath.Join(dir, "plan.md"), "- [ ] US-1: one\n- [ ] US-2: two\n")
	mustRun(t, dir, "git", "add", "plan.md")
	mustRun(t, dir, "git", "commit", "-q", "-m", "plan")
	agent := filepath.Join(marks, "agent.sh")
	writeFile(t, agent, `cat > /dev/null
if [ "$WIGGUM_STORY" = US-2 ] && [ ! -e "`+marks+`/resumed" ]; then
  echo half > half.txt; git add half.txt; git commit -q -m "agent: half"; echo wip > wip.txt
  touch "`+marks+`/ready"; sleep `+uniqueSleep()+`
fi
echo done > "done-$WIGGUM_STORY.txt"
`)
	args := []string{"run", "--plan", "plan.md", "--agent-cmd", "sh " + agent, "--retries", "0"}
	p := startWiggum(t, dir, nil, args...)
	waitFile(t, filepath.Join(marks, "ready"))
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	writeFile(t, filepath.Join(marks, "resumed"), "")
	// --retries 0: had the killed attempt counted, US-2 would be skipped.
	r := wiggum(t, dir, nil, args...)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "US-2: rolled back the attempt a crash interrupted") {
		t.Errorf("no rollback of the killed attempt:\n%s", r.stdout)
	}
	log := mustRun(t, dir, "git", "log", "--format=%s")
	if log != "US-2: two\nUS-1: one\nplan\ninit\n" {
		t.Errorf("history:\n%s", log)
	}
	found := false
	for _, ref := range strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/")) {
		if run(t, dir, nil, "git", "cat-file", "-e", ref+":wip.txt").code == 0 && run(t, dir, nil, "git", "cat-file", "-e", ref+":half.txt").code == 0 {
			found = true
		}
	}
	if !found {
		t.Error("the killed attempt's commit and file are in no backup")
	}
}
