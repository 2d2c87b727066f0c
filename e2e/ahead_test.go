package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// countMerged counts the merged events of story in an event log.
func countMerged(events, story string) int {
	n := 0
	for _, line := range strings.Split(events, "\n") {
		if strings.Contains(line, `"event":"merged"`) && strings.Contains(line, `"story":"`+story+`"`) {
			n++
		}
	}
	return n
}

// aheadPlan writes a plan of n stories US-1 ... US-n and commits it.
func aheadPlan(t *testing.T, dir string, n int) {
	t.Helper()
	var plan strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&plan, "- [ ] US-%d: story %d\n", i, i)
	}
	writeFile(t, filepath.Join(dir, "plan.md"), plan.String())
	mustRun(t, dir, "git", "add", "plan.md")
	mustRun(t, dir, "git", "commit", "-q", "-m", "plan")
}

// checkLandedOnce checks a finished run of stories US-1 ... US-n: every
// story committed, merged (a merged event: the first may land as a
// fast-forward, without a merge commit) and marked done exactly once, its
// work on main,
// and no worktree or wiggum/ branch left.
func checkLandedOnce(t *testing.T, dir string, n int) {
	t.Helper()
	plan, _ := os.ReadFile(filepath.Join(dir, "plan.md"))
	if strings.Contains(string(plan), "[ ]") {
		t.Errorf("stories left open:\n%s", plan)
	}
	log := mustRun(t, dir, "git", "log", "--format=%s")
	events, _ := os.ReadFile(filepath.Join(dir, ".ralph/wiggum/events.jsonl"))
	for i := 1; i <= n; i++ {
		s := "US-" + strconv.Itoa(i)
		if c := strings.Count(log, s+": story "+strconv.Itoa(i)+"\n") - strings.Count(log, "Merge "+s+": story"); c != 1 {
			t.Errorf("%s committed %d times:\n%s", s, c, log)
		}
		if c := countMerged(string(events), s); c != 1 {
			t.Errorf("%s merged %d times (events of every run)", s, c)
		}
		if c := strings.Count(log, s+": mark done\n"); c != 1 {
			t.Errorf("%s ticked %d times:\n%s", s, c, log)
		}
		if run(t, dir, nil, "git", "cat-file", "-e", "HEAD:f-"+s+".txt").code != 0 {
			t.Errorf("the work of %s is not on main", s)
		}
	}
	checkNoWorktreesLeft(t, dir)
	if s := mustRun(t, dir, "git", "status", "--porcelain"); s != "" {
		t.Errorf("main tree left dirty:\n%s", s)
	}
}

// TestParallelMakesWorktreesAhead: with 2 workers over 4 stories, the
// worktrees of stories 3 and 4 are made - and leased by the run - while
// the agents of stories 1 and 2 still work, and then used: each story lands
// once and nothing is left. Once story 1 lands, the one still waiting is
// brought to main's new tip before a worker takes it. The agents of 1 and
// 2 wait for each of these (and fail if it never comes), so the test does
// not depend on timing.
func TestParallelMakesWorktreesAhead(t *testing.T) {
	dir := newRepo(t)
	marks := t.TempDir()
	aheadPlan(t, dir, 4)
	agent := filepath.Join(marks, "agent.sh")
	// The agent runs in its worktree, .ralph/wiggum/worktrees/<story>.
	writeFile(t, agent, `cat > /dev/null
M=`+marks+`
case $WIGGUM_STORY in US-1|US-2)
  i=0
  until [ -e ../US-3/.git ] && [ -e ../US-4/.git ]; do
    i=$((i + 1)); [ $i -gt 1200 ] && { echo "no worktree made ahead" > "$M/fail-$WIGGUM_STORY"; exit 1; }
    sleep 0.05
  done
  wiggum worktree list --json > "$M/list-$WIGGUM_STORY.json" ;;
esac
# Story 2 goes on once story 1 has landed and the worktree still waiting
# (3 or 4: the other is story 1's worker's next, whose agent waits for
# story 2's, so that this one stays waiting) was brought to main's new
# tip, with story 1's work, while this agent ran.
case $WIGGUM_STORY in
US-2)
  i=0
  until [ -e ../US-3/f-US-1.txt ] || [ -e ../US-4/f-US-1.txt ]; do
    i=$((i + 1)); [ $i -gt 1200 ] && { echo "no worktree brought to the tip" > "$M/fail-$WIGGUM_STORY"; exit 1; }
    sleep 0.05
  done
  touch "$M/went-US-2" ;;
US-3|US-4)
  i=0
  until [ -e "$M/went-US-2" ]; do
    i=$((i + 1)); [ $i -gt 1200 ] && { echo "story 2 never went on" > "$M/fail-$WIGGUM_STORY"; exit 1; }
    sleep 0.05
  done ;;
esac
[ -e f-US-1.txt ] && touch "$M/saw-US-1-$WIGGUM_STORY"
git rev-parse HEAD > "$M/base-$WIGGUM_STORY"
echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
`)
	r := wiggum(t, dir, nil, "run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", "sh "+agent)
	for _, s := range []string{"US-1", "US-2", "US-3", "US-4"} {
		if f, err := os.ReadFile(filepath.Join(marks, "fail-"+s)); err == nil {
			t.Errorf("%s: %s", s, f)
		}
	}
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"US-1", "US-2"} {
		list := waitFile(t, filepath.Join(marks, "list-"+s+".json"))
		// Both worktrees made ahead are leased while they wait.
		for _, ahead := range []string{"US-3", "US-4"} {
			i := strings.Index(list, `"story": "`+ahead+`"`)
			if i < 0 {
				t.Fatalf("%s's agent saw no worktree of %s:\n%s", s, ahead, list)
			}
			entry := list[i:]
			if j := strings.Index(entry, "}"); j >= 0 {
				entry = entry[:j]
			}
			if !strings.Contains(entry, `"held": true`) {
				t.Errorf("the worktree made ahead for %s is not leased:\n%s", ahead, entry)
			}
		}
	}
	checkLandedOnce(t, dir, 4)
	if !exists(filepath.Join(marks, "saw-US-1-US-3")) && !exists(filepath.Join(marks, "saw-US-1-US-4")) {
		t.Error("neither story 3 nor 4 started with story 1's work, though one worktree was brought to it")
	}
	// Both started from a commit main had.
	for _, s := range []string{"US-3", "US-4"} {
		base := strings.TrimSpace(waitFile(t, filepath.Join(marks, "base-"+s)))
		if run(t, dir, nil, "git", "merge-base", "--is-ancestor", base, "main").code != 0 {
			t.Errorf("%s started from %s, not a commit of main", s, base)
		}
	}
}

// TestKilledWhileMakingAhead: a run SIGKILLed (kill point worktree-ahead)
// just after it made and leased a worktree ahead of its story leaves that
// worktree behind, leased by nobody. `wiggum worktree prune` removes it and
// its branch and saves nothing (there is nothing in it), and the resumed
// run lands every story exactly once; without the prune, the resumed run
// reclaims it the same way.
func TestKilledWhileMakingAhead(t *testing.T) {
	for _, prune := range []bool{true, false} {
		t.Run(fmt.Sprintf("prune=%v", prune), func(t *testing.T) {
			dir := newRepo(t)
			marks := t.TempDir()
			aheadPlan(t, dir, 6)
			agent := filepath.Join(marks, "agent.sh")
			writeFile(t, agent, "cat > /dev/null\necho \"$WIGGUM_STORY\" > \"f-$WIGGUM_STORY.txt\"\n")
			args := []string{"run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", "sh " + agent}
			r := wiggum(t, dir, []string{"WIGGUM_TEST_KILLPOINT=worktree-ahead"}, args...)
			if r.code != -1 {
				t.Fatalf("run: exit %d, want killed by the kill point's SIGKILL\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			// The killed run's worktrees are there and free; the one made
			// ahead whose lease fired the kill point is whole (its record
			// written) with nothing in it. (Its sibling of the same batch
			// may be caught half made - before its record - which is the
			// old case of a kill inside a creation.)
			list := wiggum(t, dir, nil, "worktree", "list", "--json")
			var infos []struct {
				Name, Story         string
				Held, Merged, Dirty bool
			}
			if err := json.Unmarshal([]byte(list.stdout), &infos); err != nil {
				t.Fatalf("worktree list --json: %v\n%s", err, list.stdout)
			}
			// Which stories were made ahead depends on the moment: a
			// first-round worker whose story ended before the maker
			// started claims the next story itself (US-3), and the
			// batch made ahead is then US-4 and US-5. Any worktree past
			// the first round's that is whole, merged and clean is one
			// nobody worked in.
			var ahead []string
			for _, in := range infos {
				if in.Held {
					t.Fatalf("a lease is held after the kill:\n%s", list.stdout)
				}
				if in.Name != "US-1" && in.Name != "US-2" && in.Story == in.Name && in.Merged && !in.Dirty {
					ahead = append(ahead, in.Name)
				}
			}
			if len(ahead) == 0 {
				t.Fatalf("no whole worktree made ahead after the kill:\n%s", list.stdout)
			}
			if prune {
				p := wiggum(t, dir, nil, "worktree", "prune")
				if p.code != 0 {
					t.Fatalf("prune: exit %d\n%s\n%s", p.code, p.stdout, p.stderr)
				}
				for _, line := range strings.Split(p.stdout, "\n") {
					for _, a := range ahead {
						if strings.HasPrefix(line, a+":") && line != a+": removed" {
							t.Errorf("prune kept or saved something of a worktree nobody worked in: %s", line)
						}
					}
					// A first-round story the kill caught after its
					// commit keeps its branch (prune's promise; the
					// resumed run does the story again on a new one):
					// set it aside, it is not the subject here.
					if _, kept, ok := strings.Cut(line, "; branch "); ok {
						b, _, _ := strings.Cut(kept, " ")
						mustRun(t, dir, "git", "update-ref", "-m", "test: set a kept branch aside", "refs/kept/"+b, "refs/heads/"+b)
						mustRun(t, dir, "git", "update-ref", "-d", "refs/heads/"+b)
					}
				}
				if ents, _ := os.ReadDir(filepath.Join(dir, ".ralph/wiggum/worktrees")); len(ents) != 0 {
					t.Errorf("prune left %d worktree directories", len(ents))
				}
				for _, a := range ahead {
					if run(t, dir, nil, "git", "rev-parse", "--verify", "--quiet", "refs/heads/wiggum/"+a).code == 0 {
						t.Errorf("prune left the branch of the worktree made ahead for %s", a)
					}
				}
			}
			r = wiggum(t, dir, nil, args...)
			if r.code != 0 {
				t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			for _, a := range ahead {
				if strings.Contains(r.stdout, a+": the killed run's worktree is saved") {
					t.Errorf("the resumed run saved the empty worktree made ahead for %s:\n%s", a, r.stdout)
				}
				if strings.Contains(r.stdout, a+": its branch was merged before the crash") {
					t.Errorf("the resumed run took the worktree made ahead for %s for landed work:\n%s", a, r.stdout)
				}
			}
			checkLandedOnce(t, dir, 6)
		})
	}
}

// TestStopDropsWorktreesMadeAhead: a run that stops with worktrees made
// ahead that no worker took (here at --max-iterations 2, after stories 1
// and 2, whose agents wait until the worktrees of 3 and 4 exist) removes
// them and their branches, saves nothing, and leaves their stories open:
// exit 5, and the next run does them. (The first agent to see both marks
// it for the other: once story 1 lands, the capped run removes them, and
// the other agent, polling, could miss the moment - 2 runs in 15 did.)
func TestStopDropsWorktreesMadeAhead(t *testing.T) {
	dir := newRepo(t)
	marks := t.TempDir()
	aheadPlan(t, dir, 4)
	agent := filepath.Join(marks, "agent.sh")
	writeFile(t, agent, `cat > /dev/null
case $WIGGUM_STORY in US-1|US-2)
  i=0
  until [ -e "`+marks+`/seen" ] || { [ -e ../US-3/.git ] && [ -e ../US-4/.git ] && : > "`+marks+`/seen"; }; do
    i=$((i + 1)); [ $i -gt 1200 ] && { echo "no worktree made ahead" > "`+marks+`/fail-$WIGGUM_STORY"; exit 1; }
    sleep 0.05
  done ;;
esac
echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
`)
	args := []string{"run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", "sh " + agent}
	r := wiggum(t, dir, nil, append(args, "--max-iterations", "2")...)
	if r.code != 5 {
		t.Fatalf("run: exit %d, want 5 (work left)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"US-1", "US-2"} {
		if f, err := os.ReadFile(filepath.Join(marks, "fail-"+s)); err == nil {
			t.Fatalf("%s: %s", s, f)
		}
	}
	plan, _ := os.ReadFile(filepath.Join(dir, "plan.md"))
	if !strings.Contains(string(plan), "- [x] US-1") || !strings.Contains(string(plan), "- [x] US-2") ||
		!strings.Contains(string(plan), "- [ ] US-3") || !strings.Contains(string(plan), "- [ ] US-4") {
		t.Errorf("plan after the cap:\n%s", plan)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".ralph/wiggum/worktrees")); len(ents) != 0 {
		t.Errorf("%d worktree directories left after the stop", len(ents))
	}
	if b := mustRun(t, dir, "git", "for-each-ref", "refs/heads/wiggum/", "refs/wiggum/backup/"); b != "" {
		t.Errorf("left after the stop:\n%s", b)
	}
	if s := mustRun(t, dir, "git", "status", "--porcelain"); s != "" {
		t.Errorf("main tree left dirty:\n%s", s)
	}
	r = wiggum(t, dir, nil, args...)
	if r.code != 0 {
		t.Fatalf("second run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	checkLandedOnce(t, dir, 4)
}
