package loop

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An agent that rewrites the commit made before its attempt - the last
// story's - with `git commit --amend` or a squash (`git reset --soft
// HEAD~1` and a commit) took that story's commit off the branch: its work
// came back under the next story's message, and the commit its report
// names was gone. The run now puts the earlier commit back and takes what
// the agent changed as its own story's work, each story in its own commit;
// the agent's rewritten commit is saved.
func TestAgentRewritingAnEarlierCommitKeepsIt(t *testing.T) {
	for _, c := range []struct{ name, rewrite string }{
		{"amend", `git add -A && git commit -q --amend -m "amended"`},
		{"squash", `git reset -q --soft HEAD~1 && git add -A && git commit -q -m "squashed"`},
	} {
		for _, workers := range []int{1, 2} {
			t.Run(c.name+map[int]string{1: "", 2: " in parallel"}[workers], func(t *testing.T) {
				st, p := newRepo(t, 2)
				dir := st.Repo.Root
				gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
				script := `cat >/dev/null; echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"`
				if workers == 1 {
					script += `; if [ "$WIGGUM_STORY" = US-2 ]; then ` + c.rewrite + `; fi`
				} else {
					// Each worker's branch starts at the plan's commit:
					// the agent rewrites that one.
					script += `; ` + c.rewrite
				}
				o := opts(p, script)
				o.Retries, o.Workers = 0, workers
				var out strings.Builder
				o.Out = &out
				sum, err := Run(context.Background(), st, o)
				if err != nil || len(sum.Completed) != 2 {
					t.Fatalf("run: %+v, %v\n%s", sum, err, out.String())
				}
				if !strings.Contains(out.String(), "made before its attempt (git commit --amend, a rebase or a reset); they are back as they were") {
					t.Errorf("the run does not say what the agent rewrote:\n%s", out.String())
				}
				log := gitT(t, dir, "log", "--format=%s")
				if strings.Contains(log, "amended") || strings.Contains(log, "squashed") || !strings.Contains(log, "base\ninit") {
					t.Fatalf("the history is the agent's rewrite:\n%s", log)
				}
				for _, s := range []string{"US-1", "US-2"} {
					touched := gitT(t, dir, "log", "--format=%s", "--", "f-"+s+".txt")
					if strings.TrimSpace(touched) != s+": story "+s[3:] && !strings.HasPrefix(touched, "Merge") {
						t.Errorf("f-%s.txt came in with: %q\n%s", s, touched, log)
					}
				}
				if len(sum.Backups) == 0 {
					t.Fatal("the rewritten commit is not saved")
				}
				if saved := gitT(t, dir, "log", "--format=%s", sum.Backups[0]); !strings.Contains(saved, "amended") && !strings.Contains(saved, "squashed") {
					t.Errorf("the backup lacks the agent's commit:\n%s", saved)
				}
			})
		}
	}
}

// A rebase of the run's branch onto commits that are not the attempt's -
// another branch's older work - cannot land as the story's work: the
// attempt fails, and its rollback is refused (the checkpoint is no longer
// an ancestor of HEAD: the contract's rule), changing nothing, with what
// to do next.
func TestAgentRebasingOntoOtherWorkFails(t *testing.T) {
	st, p := newRepo(t, 1)
	dir := st.Repo.Root
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
	base := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
	gitT(t, dir, "checkout", "-q", "-b", "other", "HEAD~1")
	if err := os.WriteFile(filepath.Join(dir, "other.txt"), []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", "other.txt")
	t.Setenv("GIT_COMMITTER_DATE", "2020-01-01T00:00:00Z")
	gitT(t, dir, "commit", "-q", "-m", "older work")
	os.Unsetenv("GIT_COMMITTER_DATE")
	gitT(t, dir, "checkout", "-q", "-")
	o := opts(p, `cat >/dev/null; echo work > w.txt; git add w.txt; git commit -q -m mine; git rebase -q other`)
	o.Retries = 0
	var out strings.Builder
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	if err == nil || len(sum.Completed) != 0 || !strings.Contains(err.Error(), "onto commits that are not its own") ||
		!strings.Contains(err.Error(), "its rollback was refused") || !strings.Contains(err.Error(), "git reset --hard "+base[:12]) {
		t.Fatalf("the attempt did not fail for the rebase, refused and said what to do: %+v, %v\n%s", sum, err, out.String())
	}
	if log := gitT(t, dir, "log", "--format=%s"); !strings.HasPrefix(log, "mine\nbase\nolder work\n") {
		t.Errorf("the refused rollback changed the branch:\n%s", log)
	}
}

// A parallel worker whose failed attempt the checkpoint's rules will not
// roll back - its agent amended the commit its branch started from, or
// committed and reset its branch to before where it started - stopped every worker with exit 4 and left the worktree's branch behind
// for good. The worktree and its branch are the run's own: the worker
// saves them whole, removes them, and the story's next attempt starts in a
// new worktree while the other worker goes on.
func TestWorkerRefusedRollbackSetsWorktreeAside(t *testing.T) {
	for _, c := range []struct{ name, mess, reason string }{
		{"amend", `git add -A && git commit -q --amend -m messed && git tag rel`, "no longer an ancestor of HEAD"},
		{"reset past its start", `git add -A && git commit -q -m messed && git tag rel && git reset -q --hard HEAD~2`, "no longer an ancestor of HEAD"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, p := newRepo(t, 2)
			dir := st.Repo.Root
			gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
			once := filepath.Join(t.TempDir(), "once")
			o := opts(p, `cat >/dev/null; echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
if [ "$WIGGUM_STORY" = US-1 ] && [ ! -e "`+once+`" ]; then touch "`+once+`"; `+c.mess+`; exit 1; fi`)
			o.Workers = 2
			var out strings.Builder
			o.Out = &out
			sum, err := Run(context.Background(), st, o)
			if err != nil || len(sum.Completed) != 2 {
				t.Fatalf("run: %+v, %v\n%s", sum, err, out.String())
			}
			if !strings.Contains(out.String(), c.reason) || !strings.Contains(out.String(), "it is set aside instead: saved whole in refs/wiggum/backup/") {
				t.Errorf("the output does not say why and where the worktree went:\n%s", out.String())
			}
			log := gitT(t, dir, "log", "--format=%s")
			if strings.Contains(log, "messed") || !strings.Contains(log, "base\ninit") {
				t.Errorf("main's history:\n%s", log)
			}
			if refs := gitT(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/"); strings.TrimSpace(refs) != "refs/heads/master" && strings.TrimSpace(refs) != "refs/heads/main" {
				t.Errorf("branches left: %s", refs)
			}
			if tags := gitT(t, dir, "tag", "-l"); tags != "" {
				t.Errorf("the tag the agent put on the work set aside is left: %s", tags)
			}
			if wts := gitT(t, dir, "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
				t.Errorf("worktrees left:\n%s", wts)
			}
			// The messed-up attempt is saved: its commit, with its file.
			saved := false
			for _, ref := range strings.Fields(gitT(t, dir, "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/")) {
				for _, line := range strings.Split(gitT(t, dir, "log", "--format=%H %s", ref), "\n") {
					if h, ok := strings.CutSuffix(line, " messed"); ok && strings.Contains(gitT(t, dir, "show", h+":f-US-1.txt"), "US-1") {
						saved = true
					}
				}
			}
			if !saved {
				t.Errorf("no backup holds the set-aside attempt:\n%s", gitT(t, dir, "for-each-ref", "refs/wiggum/"))
			}
		})
	}
}

// The same worker interrupted (the run's SIGINT) after its agent amended
// the commit its branch started from: the refused rollback left the
// worktree's branch behind for good, with the agent's commit on it. The
// worktree is set aside as after a failed attempt.
func TestWorkerInterruptedAfterRewriteSetsWorktreeAside(t *testing.T) {
	st, p := newRepo(t, 2)
	dir := st.Repo.Root
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
	ready := filepath.Join(t.TempDir(), "ready")
	o := opts(p, `cat >/dev/null; echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
if [ "$WIGGUM_STORY" = US-1 ]; then git add -A && git commit -q --amend -m messed && touch "`+ready+`" && sleep 30; fi`)
	o.Workers = 2
	var out strings.Builder
	o.Out = &out
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(ready); err == nil {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	_, err := Run(ctx, st, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v, want interrupted\n%s", err, out.String())
	}
	if refs := gitT(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/wiggum/"); refs != "" {
		t.Errorf("worktree branches left: %s\n%s", refs, out.String())
	}
	if wts := gitT(t, dir, "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", wts)
	}
	saved := false
	for _, ref := range strings.Fields(gitT(t, dir, "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/")) {
		saved = saved || strings.Contains(gitT(t, dir, "log", "--format=%s", ref), "messed")
	}
	if !saved {
		t.Errorf("no backup holds the interrupted attempt's commit:\n%s", out.String())
	}
}
