package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chaosAgent does, at random, what agents do to git: commits, branches of
// its own, stashes (popped or left), an amend or a squash of the commit
// before its attempt (and then a failure), tags, a switch away and back, an
// entry appended to progress.txt, a .gitignore rule, a background process,
// the lock files of a git killed mid-command, an rm -rf .ralph, a
// generator's git init in a directory of its own (staged by the agent's
// git add -A, or not), installed packages and a .env committed by the
// agent itself, a failure.
const chaosAgent = `cat > /dev/null
s=$WIGGUM_STORY
r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
echo "$s $r" >> "work-$s.txt"
case $((r % 19)) in
0) git checkout -q -b "tmp-$s-$r" && git add -A && git commit -q -m "agent $s on its own branch" ;;
1) git add -A && git commit -q -m "agent $s commit" ;;
2) echo stash > "stash-$s.txt"; git stash -q -u && git stash pop -q ;;
3) exit 1 ;;
4) printf '## %s\n---\n' "$s" >> progress.txt ;;
5) git add -A && git commit -q -m "agent $s" && echo more >> "work-$s.txt" && git commit -qam "agent $s amend" --amend ;;
6) mkdir -p "d-$s" && echo x > "d-$s/f" && (sleep 3 &) ;;
7) git stash -q -u ;;
8) echo "ignored-$s/" >> .gitignore; mkdir -p "ignored-$s"; echo x > "ignored-$s/a" ;;
9) printf '## %s\n---\n' "$s" >> progress.txt; git add -A; git commit -q -m "agent $s with progress" ;;
10) git reset -q --soft HEAD~1 2>/dev/null; git add -A; git commit -q -m "agent $s squashed" ;;
11) git tag "t-$s-$r" ;;
12) git checkout -q main 2>/dev/null; git checkout -q - 2>/dev/null; true ;;
13) git commit -q --amend -m "agent $s amended the last" 2>/dev/null; true ;;
14) git add -A; git commit -q --amend -m "agent $s amended, then failed" 2>/dev/null; exit 1 ;;
15) g=$(git rev-parse --git-dir); printf 'DIRC half' > "$g/index.lock"; git rev-parse HEAD > "$g/HEAD.lock"; [ $((r % 2)) = 0 ] || exit 1 ;;
16) rm -rf .ralph; exit 1 ;;
17) mkdir -p "gen-$s" && (cd "gen-$s" && git init -q && echo "$s" > g && git add g && git -c user.name=g -c user.email=g@g commit -q -m gen)
  [ $((r / 18 % 2)) = 0 ] || git add -A 2>/dev/null ;;
18) mkdir -p "node_modules/m-$s" && echo x > "node_modules/m-$s/i.js" && echo "KEY=$s" > ".env.$s.local" && git add -A && git commit -q -m "agent $s set up" ;;
esac
exit 0
`

// Agents doing random things to git, in three workers, and the run killed
// (SIGKILL) at random moments six times, then run to its end: whatever
// happened, every story the plan marks done has its work in HEAD, the
// tree holds no uncommitted change of a tracked file and no conflict
// marker, git finds nothing broken, no worktree is left, and a kept branch
// (a conflict no merge can settle) belongs to a story still open. Each
// kill's moment is logged; the agents' choices are random on every run.
// The same serially.
func TestChaosAgentsAndKills(t *testing.T) {
	for _, workers := range []string{"3", "1"} {
		t.Run("workers "+workers, func(t *testing.T) { chaosRun(t, workers) })
	}
}

func chaosRun(t *testing.T, workers string) {
	dir := newRepo(t)
	const n = 10
	var plan strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&plan, "- [ ] US-%d: story %d\n", i, i)
	}
	writeFile(t, filepath.Join(dir, "plan.md"), plan.String())
	writeFile(t, filepath.Join(dir, "progress.txt"), "# log\n")
	mustRun(t, dir, "git", "add", "-A")
	mustRun(t, dir, "git", "commit", "-q", "-m", "plan")
	main := strings.TrimSpace(mustRun(t, dir, "git", "symbolic-ref", "--short", "HEAD"))
	agent := filepath.Join(t.TempDir(), "agent.sh")
	writeFile(t, agent, strings.ReplaceAll(chaosAgent, "checkout -q main", "checkout -q "+main))
	args := []string{"run", "--plan", "plan.md", "--workers", workers, "--retries", "2", "--no-progress", "50", "--agent-cmd", "sh " + agent}
	var rounds strings.Builder // what each killed run said, for a failure
	for round := 1; round <= 6; round++ {
		p := startWiggum(t, dir, nil, args...)
		wait := time.Duration(50+rand.IntN(700)) * time.Millisecond
		time.Sleep(wait)
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		p.wait(t)
		t.Logf("round %d: killed after %v", round, wait)
		fmt.Fprintf(&rounds, "== round %d, killed after %v:\n%s%s", round, wait, p.stdout(), p.stderr())
	}
	defer func() {
		if t.Failed() {
			t.Logf("the killed runs:\n%s", rounds.String())
		}
	}()
	// An agent that rewrote commits made before its attempt and failed
	// has its worktree set aside: a parallel run does not stop for it. A
	// serial run cannot roll it back (the checkpoint is no longer an
	// ancestor of HEAD): it stops (exit 4), and a run after it (exit 2)
	// says what the stop said, which the person does, as here, and runs
	// again.
	r := wiggum(t, dir, nil, args...)
	for try := 0; workers == "1" && (r.code == 4 || r.code == 2) && try < 4; try++ {
		m := regexp.MustCompile(`keep what it did \(git branch wiggum-rewrite HEAD; git stash -u for its uncommitted files\), put the branch back \(git reset --hard ([0-9a-f]+)\)`).FindStringSubmatch(r.stderr)
		if m == nil {
			break
		}
		t.Logf("exit %d; as it says: keep the rewrite, put the branch back at %s, run again:\n%s%s", r.code, m[1], r.stdout, r.stderr)
		mustRun(t, dir, "git", "branch", fmt.Sprintf("wiggum-rewrite-%d", try), "HEAD")
		mustRun(t, dir, "git", "stash", "-u", "-q")
		mustRun(t, dir, "git", "reset", "-q", "--hard", m[1])
		r = wiggum(t, dir, nil, args...)
	}
	if r.code != 0 && r.code != 5 {
		t.Fatalf("final run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if st := mustRun(t, dir, "git", "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Errorf("tracked files changed and not committed:\n%s", st)
	}
	if out := run(t, dir, nil, "git", "fsck", "--no-dangling", "--no-progress"); out.code != 0 {
		t.Errorf("git fsck: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	if tree := mustRun(t, dir, "git", "ls-tree", "-r", "HEAD"); strings.Contains(tree, "160000 commit ") {
		t.Errorf("a gitlink committed (an agent's git init), which every clone gets as an empty directory:\n%s", tree)
	}
	// No commit of the branch holds what an agent installed or its
	// secrets: the agent's own commits were made again without them.
	if files := mustRun(t, dir, "git", "log", "--format=", "--name-only", "HEAD"); regexp.MustCompile(`(?m)^(node_modules/|\.env\.)`).MatchString(files) {
		t.Errorf("packages or a .env in the branch's history:\n%s", mustRun(t, dir, "git", "log", "--format=%h %s", "--name-only", "HEAD"))
	}
	if out := run(t, dir, nil, "git", "grep", "-l", "-e", "^<<<<<<< ", "HEAD"); out.code == 0 {
		t.Errorf("conflict markers committed:\n%s", out.stdout)
	}
	if wts := mustRun(t, dir, "git", "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", wts)
	}
	data, err := os.ReadFile(filepath.Join(dir, "plan.md"))
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	for i := 1; i <= n; i++ {
		s := fmt.Sprintf("US-%d", i)
		if strings.Contains(string(data), "- [x] "+s+":") {
			done[s] = true
			if run(t, dir, nil, "git", "cat-file", "-e", "HEAD:work-"+s+".txt").code != 0 {
				t.Errorf("%s is done, and its work is not in HEAD", s)
			}
		}
	}
	for _, b := range strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(refname:lstrip=3)", "refs/heads/wiggum/")) {
		if done[b] {
			t.Errorf("the branch wiggum/%s is left, and its story is done:\n%s\nthe final run:\n%s", b,
				mustRun(t, dir, "git", "log", "--format=%h %s", "-3", "wiggum/"+b), r.stdout)
		}
	}
	if r.code == 0 && len(done) != n {
		t.Errorf("exit 0 with %d of %d stories done\n%s", len(done), n, r.stdout)
	}
}

// Found by TestChaosAgentsAndKills: an agent in a parallel worktree that
// moved its branch back (git reset --soft HEAD~1, on its way to a squash)
// when the run was killed left a branch its target contains and that is
// not where it started - which the resume took for "merged by the killed
// run" and ticked the story done, its work in no commit (saved in a
// backup only). A branch that went back is no work of the story's: the
// resume saves the worktree and the story is done again.
func TestResumeDoesNotTakeABranchMovedBackForMerged(t *testing.T) {
	dir, marks := twoStories(t)
	agent := filepath.Join(marks, "agent.sh")
	writeFile(t, agent, `cat > /dev/null
echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
if [ "$WIGGUM_STORY" = US-2 ] && [ ! -e "`+marks+`/resumed" ]; then
  git reset -q --soft HEAD~1
  touch "`+marks+`/ready"; sleep `+uniqueSleep()+`
fi
`)
	args := []string{"run", "--plan", "plan.md", "--workers", "2", "--retries", "0", "--agent-cmd", "sh " + agent}
	killWhenReady(t, dir, marks, args...)
	r := wiggum(t, dir, nil, args...)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "US-2: its branch was merged before the crash") {
		t.Errorf("the resume took US-2's branch, moved back by its agent, for merged:\n%s", r.stdout)
	}
	for _, s := range []string{"US-1", "US-2"} {
		if run(t, dir, nil, "git", "cat-file", "-e", "HEAD:work-"+s+".txt").code != 0 {
			t.Errorf("%s is done, and its work is not in HEAD:\n%s", s, r.stdout)
		}
	}
}

// Found by the two-machine chaos run: an agent that undid the commit made
// before its attempt the hard way (git reset --hard HEAD~1: "undo the last
// commit") had that commit put back, as one that amends or squashes it
// has - and then its tree, which the reset had taken the undone commit's
// files out of, committed as the story's work: the commit deleted the
// last story's files (and unticked it in the plan). What the agent changed
// is now its tree's difference from the commit it went back to, put on
// the commits it undid.
func TestHardResetOfTheLastStoryKeepsItsWork(t *testing.T) {
	for _, workers := range []string{"1", "2"} {
		t.Run("workers "+workers, func(t *testing.T) {
			dir, marks := twoStories(t)
			writeFile(t, filepath.Join(dir, "lib.txt"), "the project's\n")
			mustRun(t, dir, "git", "add", "lib.txt")
			mustRun(t, dir, "git", "commit", "-q", "-m", "lib")
			agent := filepath.Join(marks, "agent.sh")
			writeFile(t, agent, `cat > /dev/null
if [ "$WIGGUM_STORY" = US-2 ]; then
  git reset -q --hard HEAD~1
fi
echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
`)
			r := wiggum(t, dir, nil, "run", "--plan", "plan.md", "--workers", workers, "--retries", "0", "--agent-cmd", "sh "+agent)
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			for _, s := range []string{"US-1", "US-2"} {
				if run(t, dir, nil, "git", "cat-file", "-e", "HEAD:work-"+s+".txt").code != 0 {
					t.Errorf("work-%s.txt is not in HEAD:\n%s", s, r.stdout)
				}
			}
			if plan := mustRun(t, dir, "git", "show", "HEAD:plan.md"); strings.Count(plan, "- [x]") != 2 {
				t.Errorf("the plan at HEAD:\n%s", plan)
			}
			if deleted := mustRun(t, dir, "git", "log", "--diff-filter=D", "--name-only", "--format="); strings.TrimSpace(deleted) != "" {
				t.Errorf("commits deleted %s:\n%s", strings.Fields(deleted), r.stdout)
			}
			if n := strings.Count(r.stdout, "· US-1: one (attempt"); n != 1 {
				t.Errorf("US-1 ran %d times:\n%s", n, r.stdout)
			}
		})
	}
}

// Found by the two-machine chaos run: a run killed while git moved the
// main tree to a landing (here a --remote run following the server; a
// parallel run's own merges move it the same way) left the plan unlinked
// and not yet written again, with the merge's record beside it. Every
// later --remote run read the plan first and failed on "no such file"
// (exit 2), never getting to the repository mutex that finishes such a
// merge (a run of this machine alone takes the mutex first). The
// state is made here as git's read-tree leaves it when killed between
// unlinking plan.md and writing it again.
func TestRemoteRunFinishesAMergeKilledWhileItWroteThePlan(t *testing.T) {
	dir, marks := twoStories(t)
	old := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	main := strings.TrimSpace(mustRun(t, dir, "git", "symbolic-ref", "HEAD"))
	// The landing: US-1 done, ticked - on a commit main does not have yet.
	mustRun(t, dir, "git", "switch", "-q", "-c", "landing")
	writeFile(t, filepath.Join(dir, "work-US-1.txt"), "US-1\n")
	writeFile(t, filepath.Join(dir, "plan.md"), "- [x] US-1: one\n- [ ] US-2: two\n")
	mustRun(t, dir, "git", "add", "-A")
	mustRun(t, dir, "git", "commit", "-q", "-m", "US-1: one")
	landed := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	// The server has it: a bare repository the run shares the plan through.
	srv := filepath.Join(t.TempDir(), "srv.git")
	mustRun(t, dir, "git", "init", "-q", "--bare", srv)
	mustRun(t, dir, "git", "remote", "add", "origin", srv)
	mustRun(t, dir, "git", "push", "-q", "origin", "landing:"+main)
	mustRun(t, dir, "git", "fetch", "-q", "origin")
	mustRun(t, dir, "git", "switch", "-q", strings.TrimPrefix(main, "refs/heads/"))
	mustRun(t, dir, "git", "branch", "-q", "-D", "landing")
	// Killed inside read-tree -m -u old landed: work-US-1.txt written,
	// plan.md unlinked, the index still at old.
	writeFile(t, filepath.Join(dir, "work-US-1.txt"), "US-1\n")
	if err := os.Remove(filepath.Join(dir, "plan.md")); err != nil {
		t.Fatal(err)
	}
	// and the lock of HEAD its update-ref of the branch would have taken
	// (a second chaos run found the next run failing on it).
	writeFile(t, filepath.Join(dir, ".git", "HEAD.lock"), "")
	writeFile(t, filepath.Join(dir, ".git", "wiggum-merge.json"), fmt.Sprintf(`{"tree": %q, "target": %q, "old": %q, "new": %q, "message": "wiggum: follow origin"}`, dir, main, old, landed))
	agent := filepath.Join(marks, "agent.sh")
	writeFile(t, agent, `cat > /dev/null; echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"`)
	r := wiggum(t, dir, nil, "run", "--plan", "plan.md", "--remote", "origin", "--agent-cmd", "sh "+agent)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "US-1: one (attempt") {
		t.Errorf("US-1, landed, ran again:\n%s", r.stdout)
	}
	if plan := mustRun(t, dir, "git", "show", main+":plan.md"); strings.Count(plan, "- [x]") != 2 {
		t.Errorf("the plan on %s:\n%s\n%s", main, plan, r.stdout)
	}
	if st := mustRun(t, dir, "git", "status", "--porcelain"); st != "" {
		t.Errorf("the tree is not clean:\n%s", st)
	}
}

// Found by the chaos test: an agent that amended the commit its attempt
// started from when that is the repository's first commit (no commit to
// go back to) failed the attempt - "refusing to merge unrelated
// histories" - and the run stopped with exit 4. The amended first commit
// is put back, its tree committed as the story's work, as for any amend.
func TestAmendOfTheFirstCommitIsKept(t *testing.T) {
	for _, workers := range []string{"1", "2"} {
		t.Run("workers "+workers, func(t *testing.T) {
			dir := t.TempDir()
			mustRun(t, dir, "git", "init", "-q")
			writeFile(t, filepath.Join(dir, "plan.md"), "- [ ] US-1: one\n")
			mustRun(t, dir, "git", "add", "-A")
			mustRun(t, dir, "git", "commit", "-q", "-m", "first")
			agent := filepath.Join(t.TempDir(), "agent.sh")
			writeFile(t, agent, `cat > /dev/null
echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
git add -A && git commit -q --amend -m "first, amended"
`)
			r := wiggum(t, dir, nil, "run", "--plan", "plan.md", "--workers", workers, "--retries", "0", "--agent-cmd", "sh "+agent)
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if log := mustRun(t, dir, "git", "log", "--format=%s", "--first-parent"); !strings.HasSuffix(log, "first\n") || strings.Contains(log, "amended") {
				t.Errorf("history:\n%s", log)
			}
			if run(t, dir, nil, "git", "cat-file", "-e", "HEAD:work-US-1.txt").code != 0 {
				t.Errorf("work-US-1.txt is not in HEAD:\n%s", r.stdout)
			}
		})
	}
}

// Found by the two-machine chaos run: a parallel run killed while a
// worktree's agent had a branch of its own checked out there (before
// wiggum brought its commits back onto the worktree's branch) left the
// resume taking that branch for the worktree's: it saved it and deleted
// it - and left the worktree's own branch, with the agent's commits, for
// good beside the story done again. And an agent that had checked out a
// person's branch there had that branch deleted. The resume now saves and
// deletes the worktree's own branch; the branch checked out goes only
// when the agent made it, and a person's stays. Serially, the resume's
// rollback refused the branch that changed, on every run after (exit 4):
// HEAD now goes back to the attempt's branch first, as at an attempt's end.
func TestResumeAfterAKillWhileTheAgentWasOnAnotherBranch(t *testing.T) {
	for _, workers := range []string{"2", "1"} {
		t.Run("workers "+workers, func(t *testing.T) { resumeOffBranch(t, workers) })
	}
}

func resumeOffBranch(t *testing.T, workers string) {
	for _, c := range []struct{ name, checkout string }{
		// (A second after its worktree was made, as an agent's is: a
		// reflog keeps whole seconds.)
		{"its own branch", `git add -A && git commit -q -m "agent US-2 first" && sleep 1.1 && git checkout -q -b "tmp-$WIGGUM_STORY" && echo more >> "work-$WIGGUM_STORY.txt"`},
		{"a person's branch", `git checkout -q feature`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, marks := twoStories(t)
			// A person's branch, made long before the run (its reflog
			// says when).
			if r := run(t, dir, []string{"GIT_COMMITTER_DATE=2020-01-02T03:04:05Z"}, "git", "branch", "feature"); r.code != 0 {
				t.Fatalf("git branch feature: %s", r.stderr)
			}
			feature := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "feature"))
			agent := filepath.Join(marks, "agent.sh")
			writeFile(t, agent, `cat > /dev/null
echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
if [ "$WIGGUM_STORY" = US-2 ] && [ ! -e "`+marks+`/resumed" ]; then
  `+c.checkout+` && git add -A && git commit -q -m "agent US-2 elsewhere"
  touch "`+marks+`/ready"; sleep `+uniqueSleep()+`
fi
`)
			args := []string{"run", "--plan", "plan.md", "--workers", workers, "--retries", "0", "--agent-cmd", "sh " + agent}
			killWhenReady(t, dir, marks, args...)
			dbg := mustRun(t, dir, "git", "worktree", "list") + mustRun(t, dir, "git", "for-each-ref") + mustRun(t, dir, "git", "reflog", "-5")
			r := wiggum(t, dir, nil, args...)
			if r.code != 0 {
				t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			defer func() {
				if t.Failed() {
					t.Logf("before the resume:\n%s", dbg)
				}
			}()
			if refs := mustRun(t, dir, "git", "for-each-ref", "--format=%(refname)", "refs/heads/wiggum/", "refs/heads/tmp-US-2"); refs != "" {
				t.Errorf("branches left: %s\n%s", refs, r.stdout)
			}
			if c.name == "a person's branch" && run(t, dir, nil, "git", "rev-parse", "--verify", "--quiet", "feature").code != 0 {
				t.Errorf("the person's branch feature (at %.12s) was deleted:\n%s", feature, r.stdout)
			}
			saved := false
			for _, ref := range strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/")) {
				saved = saved || strings.Contains(mustRun(t, dir, "git", "log", "--format=%s", ref), "agent US-2 elsewhere")
			}
			if !saved {
				t.Errorf("no backup holds the killed attempt's commit:\n%s", r.stdout)
			}
			for _, s := range []string{"US-1", "US-2"} {
				if run(t, dir, nil, "git", "cat-file", "-e", "HEAD:work-"+s+".txt").code != 0 {
					t.Errorf("%s's work is not in HEAD:\n%s", s, r.stdout)
				}
			}
		})
	}
}

// Two machines share a plan through a git daemon, each its own clone, one
// with two workers and one serial, their agents doing at random what
// agents do to git (chaosAgent); both are SIGKILLed at random moments four
// times, then run to their end together. Whatever happened: every story
// the server's plan marks done has its work there and landed once, no
// conflict marker is committed, git finds nothing broken on the server,
// and each clone is left with nothing uncommitted and no worktree. (The
// chaos run that found a resume deleting the branch an agent had checked
// out, and leaving the worktree's own behind for good.)
func TestChaosTwoMachines(t *testing.T) {
	f := newFleet(t, "daemon", 8)
	writeFile(t, f.agent, chaosAgent)
	common := []string{"--retries", "2", "--no-progress", "50", "--lease", "3s"}
	machines := map[string][]string{"a": append([]string{"--workers", "2"}, common...), "b": common}
	var rounds strings.Builder
	for round := 1; round <= 4; round++ {
		procs := map[string]*bg{}
		for name, args := range machines {
			procs[name] = f.machine(name, nil, args...)
		}
		wait := time.Duration(100+rand.IntN(800)) * time.Millisecond
		time.Sleep(wait)
		for name, p := range procs {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			p.wait(t)
			fmt.Fprintf(&rounds, "== round %d, %s killed after %v:\n%s%s", round, name, wait, p.stdout(), p.stderr())
		}
	}
	defer func() {
		if t.Failed() {
			t.Logf("the killed runs:\n%s", rounds.String())
		}
	}()
	final := map[string]*bg{}
	for name, args := range machines {
		final[name] = f.machine(name, nil, args...)
	}
	for name, p := range final {
		if code := p.wait(t); code != 0 && code != 5 {
			t.Errorf("%s's final run: exit %d\n%s\n%s", name, code, p.stdout(), p.stderr())
		}
	}
	check := filepath.Join(f.dir, "check")
	mustRun(t, f.dir, "git", "clone", "-q", f.srv.URL("r.git"), check)
	plan, err := os.ReadFile(filepath.Join(check, "plan.md"))
	if err != nil {
		t.Fatal(err)
	}
	landed := f.landings()
	done := map[string]bool{}
	for i := 1; i <= 8; i++ {
		s := fmt.Sprintf("US-%d", i)
		if !strings.Contains(string(plan), "- [x] "+s+":") {
			continue
		}
		done[s] = true
		if run(t, check, nil, "git", "cat-file", "-e", "HEAD:work-"+s+".txt").code != 0 {
			t.Errorf("%s is done on the server, and its work is not there", s)
		}
		if landed[s] > 1 {
			t.Errorf("%s landed %d times", s, landed[s])
		}
	}
	t.Logf("%d of 8 stories done on the server; landings %v", len(done), landed)
	if out := run(t, check, nil, "git", "grep", "-l", "-e", "^<<<<<<< ", "HEAD"); out.code == 0 {
		t.Errorf("conflict markers committed:\n%s", out.stdout)
	}
	if out := run(t, f.bare, nil, "git", "fsck", "--no-dangling", "--no-progress"); out.code != 0 {
		t.Errorf("git fsck on the server: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	for name := range machines {
		clone := filepath.Join(f.dir, name)
		if st := mustRun(t, clone, "git", "status", "--porcelain", "--untracked-files=no"); st != "" {
			t.Errorf("%s: tracked files changed and not committed:\n%s", name, st)
		}
		if wts := mustRun(t, clone, "git", "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
			t.Errorf("%s: worktrees left:\n%s", name, wts)
		}
		// A machine that lost a story's claim keeps that attempt's commits
		// on its local branch (README, Takeover), though another machine
		// landed the story since: said, not failed.
		for _, b := range strings.Fields(mustRun(t, clone, "git", "for-each-ref", "--format=%(refname:lstrip=3)", "refs/heads/wiggum/")) {
			if done[b] {
				t.Logf("%s: the branch wiggum/%s is left, and its story is done on the server", name, b)
			}
		}
	}
}

// A parallel worker's lease is the flock on its worktree's
// .ralph/.agent-lock. An agent's git clean -fdx there deleted that file:
// the worker kept its flock on a file no longer in the tree, and a
// wiggum worktree prune meanwhile made a new one, took it, and removed
// the live worktree under the agent - the contract's first promise for
// parallel mode broken. wiggum's git keeps .ralph/ out of every git clean;
// and the lease file has a second name in the worktree's git directory,
// which an rm -rf .ralph (or a git clean by git's full path) leaves, so a
// pruner still meets the worker's lock. (Deleting the lock fails that
// attempt, as wiggum's rails do; the retry finishes the story.)
func TestAgentGitCleanKeepsItsWorktreeLeased(t *testing.T) {
	for _, clean := range []string{"git clean -fdxq", "rm -rf .ralph"} {
		t.Run(clean, func(t *testing.T) { cleanWhileLeased(t, clean) })
	}
}

func cleanWhileLeased(t *testing.T, clean string) {
	dir, marks := twoStories(t)
	agent := filepath.Join(marks, "agent.sh")
	writeFile(t, agent, `cat > /dev/null
echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
if [ "$WIGGUM_STORY" = US-2 ] && [ ! -e "`+marks+`/pruned" ]; then
  `+clean+`
  touch "`+marks+`/ready"
  while [ ! -e "`+marks+`/pruned" ]; do sleep 0.05; done
  echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
fi
`)
	p := startWiggum(t, dir, nil, "run", "--plan", "plan.md", "--workers", "2", "--retries", "1", "--agent-cmd", "sh "+agent)
	waitFile(t, filepath.Join(marks, "ready"))
	pr := wiggum(t, dir, nil, "worktree", "prune")
	writeFile(t, filepath.Join(marks, "pruned"), "")
	if pr.code != 0 || !strings.Contains(pr.stdout, "US-2: live") {
		t.Errorf("prune while US-2's agent works: exit %d, want it to leave US-2 (live)\n%s\n%s", pr.code, pr.stdout, pr.stderr)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, p.stdout(), p.stderr())
	}
	for _, s := range []string{"US-1", "US-2"} {
		if run(t, dir, nil, "git", "cat-file", "-e", "HEAD:work-"+s+".txt").code != 0 {
			t.Errorf("%s's work is not in HEAD:\n%s", s, p.stdout())
		}
	}
}
