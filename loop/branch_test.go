package loop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An agent that switches branches (git checkout -b, as snarktank's ralph
// prompt tells it to for the prd.json's branchName) works on the run's
// branch all the same: its commits are brought back onto the branch the
// attempt started on (fast-forward) and the branch it created is removed;
// a failed attempt is rolled back on the run's branch instead of being
// refused ("the branch changed") and stopping the run. In parallel mode
// the work lands on the target: before, the story was ticked done and
// "merged (nothing new)" with its commits left on the agent's branch.
func TestAgentThatSwitchesBranchesStaysOnTheRunsBranch(t *testing.T) {
	const work = `cat >/dev/null; git checkout -q -b "feat-$WIGGUM_STORY" && echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY" && git add -A && git commit -q -m "feat $WIGGUM_STORY"`
	for _, c := range []struct {
		name    string
		workers int
		fail    bool
	}{
		{"serial", 1, false},
		{"serial failing", 1, true},
		{"parallel", 2, false},
		{"parallel failing", 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, p := newRepo(t, 2)
			dir := st.Repo.Root
			script := work
			if c.fail {
				script += "; exit 1"
			}
			o := opts(p, script)
			o.Workers, o.Retries = c.workers, 0
			var out strings.Builder
			o.Out = &out
			sum, err := Run(context.Background(), st, o)
			if branch := strings.TrimSpace(gitT(t, dir, "symbolic-ref", "--short", "HEAD")); branch != "master" && branch != "main" {
				t.Fatalf("the run ended on %s:\n%s", branch, out.String())
			}
			if branches := gitT(t, dir, "for-each-ref", "--format=%(refname:short)", "refs/heads/feat-US-1", "refs/heads/feat-US-2"); branches != "" {
				t.Errorf("the branches the attempts created are left:\n%s\n%s", branches, out.String())
			}
			if !strings.Contains(out.String(), "the agent switched to branch feat-US-1; its work goes on ") {
				t.Errorf("the run does not say the agent switched branches:\n%s", out.String())
			}
			if c.fail {
				if err == nil || strings.Contains(err.Error(), "refused") || len(sum.Completed) != 0 {
					t.Fatalf("failing agent: %+v, %v\n%s", sum, err, out.String())
				}
				if st := gitT(t, dir, "status", "--porcelain"); st != "" {
					t.Errorf("the failed attempts were not rolled back:\n%s", st)
				}
				if files := gitT(t, dir, "ls-tree", "-r", "--name-only", "HEAD"); strings.Contains(files, "f-US-") {
					t.Errorf("a failed attempt's commit stayed on the run's branch:\n%s", files)
				}
				for _, b := range sum.Backups {
					if files := gitT(t, dir, "ls-tree", "-r", "--name-only", b); !strings.Contains(files, "f-US-") {
						t.Errorf("the backup %s does not hold the attempt's work:\n%s", b, files)
					}
				}
				return
			}
			if err != nil || len(sum.Completed) != 2 {
				t.Fatalf("run: %+v, %v\n%s", sum, err, out.String())
			}
			files := gitT(t, dir, "ls-tree", "-r", "--name-only", "HEAD")
			for _, f := range []string{"f-US-1", "f-US-2"} {
				if !strings.Contains(files, f) {
					t.Errorf("%s is not on the run's branch:\n%s\n%s", f, files, out.String())
				}
			}
		})
	}
}

// An agent that checks out a branch that does not continue the run's -
// here one made before the run, holding older work of someone else's,
// even though it grew from the run's branch - fails its attempt: that
// work is not the agent's to land. Its state is saved, HEAD returns to the
// run's branch, the tree is rolled back, and the other branch keeps what
// it had and what the agent committed there.
func TestAgentThatChecksOutAnotherBranchFails(t *testing.T) {
	st, p := newRepo(t, 1)
	dir := st.Repo.Root
	run := strings.TrimSpace(gitT(t, dir, "symbolic-ref", "--short", "HEAD"))
	// Someone's older commit on other, made before the run.
	t.Setenv("GIT_COMMITTER_DATE", "2026-01-02T03:04:05Z")
	gitT(t, dir, "checkout", "-q", "-b", "other")
	if err := os.WriteFile(filepath.Join(dir, "older.txt"), []byte("older\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", "older.txt")
	gitT(t, dir, "commit", "-q", "-m", "older work")
	gitT(t, dir, "checkout", "-q", run)
	if err := os.Unsetenv("GIT_COMMITTER_DATE"); err != nil {
		t.Fatal(err)
	}
	before := gitT(t, dir, "rev-parse", run)

	o := opts(p, `cat >/dev/null; git checkout -q other && echo mine > mine.txt && git add mine.txt && git commit -q -m mine && echo dirty > dirty.txt`)
	o.Retries = 0
	var out strings.Builder
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	if err == nil || len(sum.Completed) != 0 {
		t.Fatalf("run: %+v, %v\n%s", sum, err, out.String())
	}
	want := "the agent switched from " + run + " to branch other, which does not continue it, so its work cannot land; that state is saved in refs/wiggum/backup/"
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "whatever it committed on other (a branch it did not create) stays there") {
		t.Fatalf("the attempt did not fail saying why:\n%s", out.String())
	}
	if now := strings.TrimSpace(gitT(t, dir, "symbolic-ref", "--short", "HEAD")); now != run {
		t.Fatalf("HEAD is on %s, not back on %s", now, run)
	}
	if after := gitT(t, dir, "rev-parse", run); after != before {
		t.Errorf("%s moved: %s -> %s", run, before, after)
	}
	if st := gitT(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("the tree was not rolled back:\n%s", st)
	}
	if log := gitT(t, dir, "log", "--format=%s", "other"); !strings.Contains(log, "mine\nolder work\n") {
		t.Errorf("other lost what it had:\n%s", log)
	}
	saved := false
	for _, b := range sum.Backups {
		files := gitT(t, dir, "ls-tree", "-r", "--name-only", b)
		saved = saved || strings.Contains(files, "dirty.txt") && strings.Contains(files, "mine.txt")
	}
	if !saved {
		t.Errorf("no backup holds the agent's state (%v)", sum.Backups)
	}
}

// An agent that leaves git half way through something - a merge, rebase
// or cherry-pick stopped on conflicts, or a `git stash pop` that
// conflicted (nothing but the index's stages to show for it) - fails its
// attempt, saying what it left. The operation is saved and aborted and
// the tree rolled back. Before, `git add -A` took the conflicted file as
// resolved and the loop committed its conflict markers as the story's
// work (concluding the agent's merge), ticked done; a rebase's rollback
// was refused and stopped the run.
func TestAgentLeavingGitHalfDoneFails(t *testing.T) {
	for _, c := range []struct{ name, cmd, want string }{
		{"merge", "git merge -q other", "the agent left a merge in progress with conflicts in c.txt; it is saved in refs/wiggum/backup/"},
		{"rebase", "git rebase -q other", "the agent left a rebase in progress with conflicts in c.txt; it is saved in refs/wiggum/backup/"},
		{"cherry-pick", "git cherry-pick other", "the agent left a cherry-pick in progress with conflicts in c.txt; it is saved in refs/wiggum/backup/"},
		{"stash pop", "echo stashed > c.txt && git stash -q && echo mine > c.txt && git commit -q -am mine && git stash pop", "the agent left files with conflicts in c.txt (a git stash pop that conflicted?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, p := newRepo(t, 1)
			dir := st.Repo.Root
			run := strings.TrimSpace(gitT(t, dir, "symbolic-ref", "--short", "HEAD"))
			write := func(content string) {
				if err := os.WriteFile(filepath.Join(dir, "c.txt"), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("base\n")
			gitT(t, dir, "add", "c.txt")
			gitT(t, dir, "commit", "-q", "-m", "base")
			gitT(t, dir, "checkout", "-q", "-b", "other")
			write("other\n")
			gitT(t, dir, "commit", "-q", "-am", "other")
			gitT(t, dir, "checkout", "-q", run)
			write("ours\n")
			gitT(t, dir, "commit", "-q", "-am", "ours")
			before := gitT(t, dir, "rev-parse", "HEAD")

			o := opts(p, "cat >/dev/null; echo work > work.txt; "+c.cmd+"; exit 0")
			o.Retries = 0
			var out strings.Builder
			o.Out = &out
			sum, _ := Run(context.Background(), st, o)
			if len(sum.Completed) != 0 || !strings.Contains(out.String(), c.want) {
				t.Fatalf("the attempt did not fail saying what it left (%q): %+v\n%s", c.want, sum, out.String())
			}
			if after := gitT(t, dir, "rev-parse", "HEAD"); after != before {
				t.Errorf("HEAD moved: %s -> %s\n%s", before, after, gitT(t, dir, "log", "--format=%s", "-3"))
			}
			if now := strings.TrimSpace(gitT(t, dir, "symbolic-ref", "--short", "HEAD")); now != run {
				t.Errorf("HEAD is on %s", now)
			}
			if op := st.Repo.InProgress(); op != "" {
				t.Errorf("a %s is still in progress", op)
			}
			if s := gitT(t, dir, "status", "--porcelain"); s != "" {
				t.Errorf("the tree is not back at the checkpoint:\n%s", s)
			}
			saved := false
			for _, b := range sum.Backups {
				saved = saved || strings.Contains(gitT(t, dir, "ls-tree", "-r", "--name-only", b), "work.txt")
			}
			if !saved {
				t.Errorf("no backup holds the agent's work (%v)", sum.Backups)
			}
		})
	}
}

// `git stash && npm test && git stash pop` whose tests fail never pops:
// the story's work stayed in the stash, and the loop committed the story
// - ticked done - without it. The work the attempt left in the stash is
// put back in the tree and judged with the rest: committed when the
// attempt passes, saved and rolled back when it fails. A stash entry
// that was there before (the person's own) is left alone, and a stash
// the agent popped itself is not mentioned.
func TestWorkLeftInTheStashIsTheStorys(t *testing.T) {
	for _, c := range []struct {
		name, script string
		fail, said   bool
	}{
		{"left, passing", "git stash -q -u && false && git stash pop; exit 0", false, true},
		{"left, failing", "git stash -q -u && false && git stash pop; exit 1", true, true},
		{"popped", "git stash -q -u && git stash pop -q", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, p := newRepo(t, 1)
			dir := st.Repo.Root
			// The person's own stash entry, from before the run.
			if err := os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			gitT(t, dir, "stash", "-q", "-u")
			o := opts(p, `cat >/dev/null; echo work > work.txt; `+c.script)
			o.Retries = 0
			var out strings.Builder
			o.Out = &out
			sum, _ := Run(context.Background(), st, o)
			if said := strings.Contains(out.String(), "the agent left work in git stash (WIP on "); said != c.said {
				t.Errorf("said = %v:\n%s", said, out.String())
			}
			if list := gitT(t, dir, "stash", "list"); strings.Count(list, "\n") != 1 || !strings.Contains(list, "stash@{0}") {
				t.Errorf("the stash holds other than the person's entry:\n%s", list)
			}
			files := gitT(t, dir, "ls-tree", "-r", "--name-only", "HEAD")
			if c.fail {
				if len(sum.Completed) != 0 || strings.Contains(files, "work.txt") {
					t.Fatalf("failed attempt committed: %+v\n%s", sum, files)
				}
				if len(sum.Backups) != 1 || !strings.Contains(gitT(t, dir, "ls-tree", "-r", "--name-only", sum.Backups[0]), "work.txt") {
					t.Errorf("the stashed work is not in the attempt's backup (%v)", sum.Backups)
				}
				return
			}
			if len(sum.Completed) != 1 || !strings.Contains(files, "work.txt") {
				t.Fatalf("the story's commit lacks its work: %+v\n%s\n%s", sum, files, out.String())
			}
		})
	}
}

// In parallel mode the stash is one for every worktree: each worker puts
// back only what its own agent left there (the entries made on its
// branch), and each story lands with its own work. (Two agents' own `git
// stash` at the same moment can lose one of the two entries - git's
// refs/stash is shared and its stash does not take turns - so the agents
// here take turns with flock; wiggum's own drops take turns under the
// repository mutex.)
func TestWorkLeftInTheStashInParallel(t *testing.T) {
	st, p := newRepo(t, 4)
	dir := st.Repo.Root
	turn := filepath.Join(t.TempDir(), "stash.lock")
	o := opts(p, `cat >/dev/null; echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"; flock "`+turn+`" git stash -q -u && false; exit 0`)
	o.Retries, o.Workers = 0, 2
	var out strings.Builder
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != 4 {
		t.Fatalf("run: %+v, %v\n%s", sum, err, out.String())
	}
	files := gitT(t, dir, "ls-tree", "-r", "--name-only", "HEAD")
	for i := 1; i <= 4; i++ {
		if !strings.Contains(files, fmt.Sprintf("work-US-%d.txt", i)) {
			t.Errorf("US-%d's work did not land:\n%s\n%s", i, files, out.String())
		}
	}
	for i := 1; i <= 4; i++ {
		log := gitT(t, dir, "log", "--format=%s", "--", fmt.Sprintf("work-US-%d.txt", i))
		if !strings.Contains(log, fmt.Sprintf("US-%d: story %d", i, i)) {
			t.Errorf("work-US-%d.txt came with another story's commit:\n%s", i, log)
		}
	}
	if list := gitT(t, dir, "stash", "list"); list != "" {
		t.Errorf("the stash is not empty:\n%s", list)
	}
}

// A branch whose reflog begins in the same second as the attempt - the
// run's --branch NEW, made a moment before it - is not taken for one the
// attempt made (git's reflog keeps whole seconds): a worker's agent that
// committed on it had wiggum delete the run's branch.
func TestCreatedSinceNotInTheSameSecond(t *testing.T) {
	st, _ := newRepo(t, 1)
	gitT(t, st.Repo.Root, "branch", "feature")
	log, _ := st.Repo.Reflog("refs/heads/feature")
	if len(log) == 0 {
		t.Fatal("no reflog for the new branch")
	}
	made := log[0].Time
	if createdSince(st.Repo, "refs/heads/feature", time.Unix(made, 900e6)) {
		t.Error("a branch made in the attempt's second is taken for the attempt's")
	}
	if !createdSince(st.Repo, "refs/heads/feature", time.Unix(made-1, 0)) {
		t.Error("a branch made a second after the attempt began is not taken for the attempt's")
	}
}
