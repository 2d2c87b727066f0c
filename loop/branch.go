package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/worktree"
)

// backToBranch keeps the attempt on the branch it started on (want, the
// checkpoint's) when its agent switched branches - `git checkout -b`,
// `git switch`, as snarktank's ralph prompt tells an agent to do for the
// prd.json's branchName. Left there, a worker's commits were on a branch
// the merge coordinator never looks at: the story was ticked done with
// none of its work on the target ("merged (nothing new)"); a failed
// attempt's rollback was refused (the branch changed) and stopped the run.
//
// When the agent's HEAD continues want (want's tip is an ancestor of it),
// want is fast-forwarded to it and checked out again - the same commit,
// so the tree and index stay as the agent left them - and a branch the
// attempt created that now holds nothing else is deleted. Otherwise the
// attempt cannot land: its state is saved under refs/wiggum/backup/, HEAD
// goes back to want (the rollback then returns the tree), a branch the
// attempt created is deleted (it is in the backup), and detail says why
// the attempt fails. Reading HEAD's file costs no git process, so an
// attempt that stayed on its branch pays nothing.
//
// A branch that is not the agent's to move - the run's branch, one checked
// out in another worktree, a worker branch of wiggum's (guardedBranch) -
// is never removed. A worker's agent can commit on the run's branch,
// checked out in the main tree, with git switch --ignore-other-worktrees:
// wiggum deleted it (the run had made it a moment before, and the reflog's
// second said the attempt had), or left it moved under the main tree's
// files and said "merged (nothing new)". When the agent moved such a
// branch, the attempt fails: its state is saved, and the branch goes back
// to where it was before the agent's first move (agentMoved).
func (e *executor) backToBranch(ctx context.Context, want string) (detail string, err error) {
	repo := e.st.Repo
	if want == "" {
		return "", nil // the run started detached
	}
	now, err := repo.Branch(ctx)
	if err != nil || now == want {
		return "", err
	}
	ctx = context.WithoutCancel(ctx)
	head, err := repo.Head(ctx)
	if err != nil || head == "" {
		return "", err
	}
	tip, err := repo.Line(ctx, "rev-parse", "--verify", "--quiet", want+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("the agent left %s, which is gone: %w", checkpoint.BranchName(want), err)
	}
	where := "a detached HEAD"
	if now != "" {
		where = "branch " + checkpoint.BranchName(now)
	}
	if err := e.othersCommits(ctx, where, tip, head); err != nil {
		return "", err
	}
	guarded, old, unmoved := "", "", ""
	if now != "" {
		guarded = e.guardedBranch(now)
	}
	if guarded != "" {
		old, unmoved = e.agentMoved(now, head)
	}
	continues := false
	if old == "" && unmoved == "" {
		if continues, err = e.madeSince(ctx, tip, head); err != nil {
			return "", err
		}
	}
	var saved string
	if continues {
		if tip != head {
			if _, err := repo.Run(ctx, "update-ref", "-m", "wiggum: the attempt's commits, brought back from "+where, want, head, tip); err != nil {
				return "", err
			}
		}
	} else {
		why := fmt.Sprintf("the agent switched from %s to %s, which does not continue it", checkpoint.BranchName(want), where)
		if old != "" || unmoved != "" {
			why = fmt.Sprintf("the agent switched from %s to %s (%s) and moved it", checkpoint.BranchName(want), where, guarded)
		}
		saved, err = e.st.Backup(ctx, why)
		if err != nil {
			return "", err
		}
		e.run.addBackup(saved)
	}
	if _, err := repo.Run(ctx, "symbolic-ref", "-m", "wiggum: back to the run's branch from "+where, "HEAD", want); err != nil {
		return "", err
	}
	if old != "" || unmoved != "" {
		return e.putBack(ctx, want, now, guarded, head, old, unmoved, saved)
	}
	removed := ""
	switch {
	case now == "" || guarded != "":
	case e.madeByAttempt(now):
		if ok, _ := repo.OK(ctx, "update-ref", "-d", now, head); ok {
			removed = "; " + checkpoint.BranchName(now) + ", which it created, is removed"
		}
	case !continues:
		removed = "; whatever it committed on " + checkpoint.BranchName(now) + " (a branch it did not create) stays there"
	}
	if continues {
		e.disp.printf("  the agent switched to %s; its work goes on %s (fast-forward)%s", where, checkpoint.BranchName(want), removed)
		return "", nil
	}
	e.event("branch_left", map[string]any{"from": checkpoint.BranchName(want), "to": where, "backup": saved})
	return fmt.Sprintf("the agent switched from %s to %s, which does not continue it, so its work cannot land; that state is saved in %s%s",
		checkpoint.BranchName(want), where, saved, removed), nil
}

// putBack returns branch now, which the agent moved from old to head and
// which is not its to move (guarded says why), to old - compared and
// swapped, under the repository mutex in a worker, for the merge
// coordinator moves the run's branch - once HEAD is back on want and the
// agent's state saved in saved. unmoved, when not "", says why it cannot
// be told where the branch was: it is left where it is. detail fails the
// attempt.
func (e *executor) putBack(ctx context.Context, want, now, guarded, head, old, unmoved, saved string) (string, error) {
	repo := e.st.Repo
	name := checkpoint.BranchName(now)
	e.event("branch_left", map[string]any{"from": checkpoint.BranchName(want), "to": "branch " + name, "backup": saved, "moved": true})
	in := "the main tree"
	if e.worktree != "" {
		in = "its worktree " + relPath(e.mainRoot(), repo.Root)
	}
	did := fmt.Sprintf("the agent checked out %s (%s) in %s and moved it; its work cannot land from there (it goes on %s), and that state is saved in %s",
		name, guarded, in, checkpoint.BranchName(want), saved)
	if unmoved != "" {
		return fmt.Sprintf("%s; %s is left at %.12s: %s", did, name, head, unmoved), nil
	}
	if e.worktree != "" && e.run != nil {
		mu, err := worktree.LockRepo(ctx, e.run.st.Repo)
		if err != nil {
			return "", err
		}
		defer mu.Unlock()
	}
	if _, err := repo.Run(ctx, "update-ref", "-m", "wiggum: back from the agent's commits in "+in, now, old, head); err != nil {
		return fmt.Sprintf("%s; %s moved again meanwhile and is left where it is (%v)", did, name, oneLine(err.Error(), 200)), nil
	}
	return fmt.Sprintf("%s; %s is back at %.12s, where it was", did, name, old), nil
}

// mainRoot is the main tree's root, where paths are said from.
func (e *executor) mainRoot() string {
	if e.run != nil && e.run.st != nil {
		return e.run.st.Repo.Root
	}
	return e.st.Repo.Root
}

// guardedBranch says why branch ref is not the attempt's agent's to remove
// or leave moved - the run's branch, one checked out in another worktree,
// a worker branch of wiggum's - or "" when it may be.
func (e *executor) guardedBranch(ref string) string {
	repo := e.st.Repo
	if e.run != nil && e.run.branch != "" && ref == e.run.branch {
		return "the run's branch"
	}
	if strings.HasPrefix(ref, worktree.BranchPrefix) {
		return "a branch of wiggum's"
	}
	short := strings.TrimPrefix(ref, "refs/heads/")
	own := filepath.Clean(repo.GitDir)
	dirs := []string{repo.CommonDir}
	if entries, err := os.ReadDir(filepath.Join(repo.CommonDir, "worktrees")); err == nil {
		for _, d := range entries {
			dirs = append(dirs, filepath.Join(repo.CommonDir, "worktrees", d.Name()))
		}
	}
	for _, d := range dirs {
		if filepath.Clean(d) == own {
			continue
		}
		if b, _ := git.HeadBranch(d); b == short {
			if d == repo.CommonDir {
				return "checked out in the main tree"
			}
			return "checked out in the worktree " + filepath.Base(d)
		}
	}
	return ""
}

// agentMoved tells where branch ref (at tip, with HEAD on it) was before
// the attempt's agent moved it: the Old of the first of the entries that
// end ref's reflog and that this tree's HEAD reflog gained during the
// attempt too - git writes both, alike, for a commit, reset or merge made
// with HEAD on the branch; the merge coordinator's landings, another
// tree's commits, write only ref's. old is "" when the agent did not move
// it; unmoved says why it cannot be told (someone else moved it after the
// agent, or the reflogs cannot be read).
func (e *executor) agentMoved(ref, tip string) (old, unmoved string) {
	repo := e.st.Repo
	heads, ok := repo.HeadReflogSince(e.headLogAtStart)
	log, lok := repo.Reflog(ref)
	if !ok || !lok {
		if at, had := e.refsAtStart[ref]; had && at != tip {
			return "", "its reflog cannot be read to tell where it was before the agent (refs in a reftable)"
		}
		return "", ""
	}
	agents := make(map[git.ReflogEntry]bool, len(heads))
	for _, h := range heads {
		agents[h] = true
	}
	i := len(log)
	for i > 0 && agents[log[i-1]] {
		i--
	}
	for _, l := range log[:i] {
		if agents[l] {
			return "", "it was moved by the agent and then by something else, which it would undo"
		}
	}
	switch {
	case i == len(log):
		return "", ""
	case log[len(log)-1].New != tip:
		return "", "its reflog does not end at its tip"
	case strings.Trim(log[i].Old, "0") == "":
		return "", "" // the agent made it: never wiggum's or the run's
	}
	return log[i].Old, ""
}

// madeByAttempt reports whether branch ref was made during the attempt:
// it was not there when the attempt started. Without that record (a
// crashed run's attempt, refs in a reftable), its reflog must begin with
// its creation in a second after the attempt's: a branch made in the same
// second - by the run itself, a moment before - is not taken for the
// agent's.
func (e *executor) madeByAttempt(ref string) bool {
	if e.refsAtStart != nil {
		_, had := e.refsAtStart[ref]
		return !had
	}
	return createdSince(e.st.Repo, ref, e.attemptStarted)
}

// madeSince reports whether head continues tip with commits made during
// the attempt only: tip is an ancestor of head, and every commit between
// was committed at or after the attempt's start (to the second, git's
// resolution) - a branch the agent checked out that holds older work of
// someone else's does not continue the run's branch, even when it grew
// from it.
// othersWork is HEAD found on a branch (or commit) whose commits the
// commit journal says someone else made: a person who switched the tree
// to a branch of theirs during the attempt and committed there. Nothing
// of it is the agent's to carry or remove.
type othersWork struct{ msg string }

func (o *othersWork) Error() string { return o.msg }

// othersCommits returns an *othersWork when the journal records a commit
// of head's that want's tip lacks as made outside this attempt's session:
// backToBranch took every such commit for the agent's - the person's
// branch was fast-forwarded into the run's and deleted - because the
// commits were made during the attempt.
func (e *executor) othersCommits(ctx context.Context, where, tip, head string) error {
	c, by := journaledElsewhere(ctx, e.st, e.session, head, "^"+tip)
	if c == "" {
		return nil
	}
	return &othersWork{msg: fmt.Sprintf("the tree was switched to %s during the attempt, and its commit %.12s was made %s (the commit journal says so), not by the agent: someone else's work, which wiggum leaves as it is - HEAD, branches and commits untouched", where, c, by)}
}

// journaledElsewhere returns the first commit of git rev-list revs that
// the commit journal (when on) records as made outside session, and by
// whom; "" when there is none, or no journal to say. A commit the journal
// lacks (made with git's hooks off) proves nothing either way.
func journaledElsewhere(ctx context.Context, st *checkpoint.State, session string, revs ...string) (commit, by string) {
	if !st.JournalOn() {
		return "", ""
	}
	out, err := st.Repo.Run(ctx, append([]string{"rev-list", "--max-count=1000"}, revs...)...)
	if err != nil || out == "" {
		return "", ""
	}
	entries, err := st.Journal()
	if err != nil {
		return "", ""
	}
	made := make(map[string]checkpoint.JournalEntry, len(entries))
	for _, en := range entries {
		made[en.SHA] = en
	}
	for _, c := range strings.Fields(out) {
		if en, ok := made[c]; ok && en.Session != session {
			if en.Session != "" {
				return c, "by another wiggum session"
			}
			return c, "outside any wiggum session"
		}
	}
	return "", ""
}

func (e *executor) madeSince(ctx context.Context, tip, head string) (bool, error) {
	return madeSince(ctx, e.st.Repo, tip, head, e.attemptStarted)
}

func madeSince(ctx context.Context, repo *git.Repo, tip, head string, since time.Time) (bool, error) {
	if tip == head {
		return true, nil
	}
	if ok, err := repo.OK(ctx, "merge-base", "--is-ancestor", tip, head); !ok || err != nil {
		return false, err
	}
	return allMadeSince(ctx, repo, tip+".."+head, since)
}

// allMadeSince reports whether every commit of the revision range (git
// log's) was committed at or after since.
func allMadeSince(ctx context.Context, repo *git.Repo, revs string, since time.Time) (bool, error) {
	out, err := repo.Run(ctx, "log", "--format=%ct", revs)
	if err != nil {
		return false, err
	}
	from := since.Truncate(time.Second).Unix()
	for _, l := range strings.Fields(out) {
		if t, err := strconv.ParseInt(l, 10, 64); err != nil || t < from {
			return false, nil
		}
	}
	return true, nil
}

// createdSince reports whether the branch ref's reflog begins with its
// creation in a second after since's: the attempt made it. Without a
// reflog (core.logAllRefUpdates off) nothing says so, and it is left
// alone.
func createdSince(repo *git.Repo, ref string, since time.Time) bool {
	log, _ := repo.Reflog(ref)
	return len(log) > 0 && strings.Trim(log[0].Old, "0") == "" && log[0].Time > since.Unix()
}

// abortCommands are the git commands that abort each operation
// git.Repo.InProgress names, tried in order.
var abortCommands = map[string][][]string{
	"merge":        {{"merge", "--abort"}},
	"rebase":       {{"rebase", "--abort"}},
	"rebase or am": {{"rebase", "--abort"}, {"am", "--abort"}},
	"cherry-pick":  {{"cherry-pick", "--abort"}},
	"revert":       {{"revert", "--abort"}},
	"bisect":       {{"bisect", "reset"}},
}

// leftInGit clears what the agent left half done in git, which no commit
// or rollback may go past: an operation in progress (a merge or rebase
// stopped on conflicts, a bisect) and conflicts recorded in the index
// with no operation behind them (a `git stash pop` that conflicted). Left
// there, `git add -A` took each conflicted file as resolved and the loop
// committed the conflict markers as the story's work, ticked done; or the
// rollback was refused (a merge in progress) and stopped the run.
//
// No attempt starts with either (the checkpoint refuses an operation in
// progress), so both are the attempt's own. An operation is saved under
// refs/wiggum/backup/ and aborted; conflicts are unstaged (the files keep
// their content, for the rollback to save). detail says what was found,
// for the attempt's failure; "" when nothing was. Reading git's files
// costs no git process when there is nothing.
func (e *executor) leftInGit(ctx context.Context) (detail string, err error) {
	repo := e.st.Repo
	if err := e.unstash(ctx); err != nil {
		return "", err
	}
	op := repo.InProgress()
	conflicts, err := repo.Unmerged(ctx)
	if err != nil || op == "" && len(conflicts) == 0 {
		return "", err
	}
	ctx = context.WithoutCancel(ctx)
	in := ""
	if len(conflicts) > 0 {
		in = " with conflicts in " + strings.Join(firstN(conflicts, 5), ", ")
	}
	if op == "" {
		if _, err := repo.Run(ctx, append([]string{"reset", "-q", "--"}, conflicts...)...); err != nil {
			return "", err
		}
		return "the agent left files" + in + " (a git stash pop that conflicted?); nothing of it is committed", nil
	}
	saved, err := e.st.Backup(ctx, fmt.Sprintf("the agent left a %s in progress%s", op, in))
	if err != nil {
		return "", err
	}
	e.run.addBackup(saved)
	var aerr error
	for _, args := range abortCommands[op] {
		if _, aerr = repo.Run(ctx, args...); aerr == nil {
			break
		}
	}
	if still := repo.InProgress(); still != "" {
		return "", fmt.Errorf("the agent left a %s in progress%s, saved in %s, and git could not abort it: %v", op, in, saved, aerr)
	}
	e.event("operation_aborted", map[string]any{"operation": op, "conflicts": conflicts, "backup": saved})
	return fmt.Sprintf("the agent left a %s in progress%s; it is saved in %s and aborted, and nothing of it is committed", op, in, saved), nil
}

// firstN is the first n of list, with "and K more" for the rest.
func firstN(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(append([]string{}, list[:n]...), fmt.Sprintf("and %d more", len(list)-n))
}

// stashEntries reads git's stash from its reflog, oldest first: each
// entry's New is a stash commit, its Message the stash's subject ("WIP on
// main: ...", "On main: ..."). ok is false when it cannot be read.
func stashEntries(repo *git.Repo) ([]git.ReflogEntry, bool) {
	return repo.Reflog("refs/stash")
}

// stashCommits is the set of commits git's stash holds; nil when unknown.
func stashCommits(repo *git.Repo) map[string]bool {
	list, ok := stashEntries(repo)
	if !ok {
		return nil
	}
	set := make(map[string]bool, len(list))
	for _, s := range list {
		set[s.New] = true
	}
	return set
}

// unstash puts back in the tree the work the agent left in git stash: a
// `git stash && npm test && git stash pop` whose tests fail never pops,
// and the story was committed without its work ("done", the plan ticked,
// the work in stash@{0}). Each entry the attempt added on its own branch
// (the stash is shared by every worktree: another worker's is not this
// attempt's) is applied, oldest first, and dropped; it is then judged with
// the rest of the attempt: committed if it passes, saved and rolled back
// if not. One that does not apply cleanly stays in the stash, said (its
// conflicts are leftInGit's).
func (e *executor) unstash(ctx context.Context) error {
	list, ok := stashEntries(e.st.Repo)
	if !ok || e.stashAtStart == nil {
		return nil
	}
	branch := checkpoint.BranchName(e.attemptBranch)
	ctx = context.WithoutCancel(ctx)
	for _, s := range list {
		if e.stashAtStart[s.New] {
			continue // there before the attempt
		}
		if !git.StashMadeOn(s.Message, branch) {
			continue
		}
		if _, err := e.st.Repo.Run(ctx, "stash", "apply", "-q", s.New); err != nil {
			e.disp.printf("  the agent left work in git stash (%s) that does not go back into the tree: %v", s.Message, err)
			continue
		}
		if e.worktree != "" {
			// Other worktrees' agents may be stashing now: a drop
			// (git rewrites the stash's reflog) beside their push can
			// lose their entry. Dropped once the workers are gone.
			e.run.stashApplied(s.New)
		} else if err := e.dropStash(ctx, s.New); err != nil {
			e.disp.printf("  the agent's work in git stash (%s) is back in the tree; its stash entry stays: %v", s.Message, err)
			continue
		}
		e.disp.printf("  the agent left work in git stash (%s); it is back in the tree, to be judged with the rest of the attempt", s.Message)
	}
	return nil
}

// dropStash drops the stash entry holding commit. git drops by position
// (stash@{n}): the position is read and checked just before.
func (e *executor) dropStash(ctx context.Context, commit string) error {
	return dropStash(ctx, e.st.Repo, commit)
}

// stashApplied records a stash entry a worker applied, for dropAppliedStash.
func (r *run) stashApplied(commit string) {
	r.stashMu.Lock()
	r.appliedStash = append(r.appliedStash, commit)
	r.stashMu.Unlock()
}

// dropAppliedStash drops the stash entries workers applied, once no
// worker (and no agent) runs.
func (r *run) dropAppliedStash() {
	r.stashMu.Lock()
	defer r.stashMu.Unlock()
	for _, c := range r.appliedStash {
		_ = dropStash(context.Background(), r.st.Repo, c)
	}
	r.appliedStash = nil
}

func dropStash(ctx context.Context, repo *git.Repo, commit string) error {
	now, _ := stashEntries(repo)
	for i := len(now) - 1; i >= 0; i-- {
		if now[i].New != commit {
			continue
		}
		entry := fmt.Sprintf("stash@{%d}", len(now)-1-i)
		if at, err := repo.Line(ctx, "rev-parse", "--verify", "--quiet", entry); err != nil || at != commit {
			return fmt.Errorf("%s moved while it was dropped", entry)
		}
		_, err := repo.Run(ctx, "stash", "drop", "-q", entry)
		return err
	}
	return nil
}

// switchBranch puts the run on opts.Branch (wiggum run --branch, or the
// prd.json's branchName) before anything else touches the tree: the
// branch if it exists, else the one a single remote has of that name
// (tracking it, as git switch does), else a new branch made from HEAD -
// what snarktank/ralph's prompt has the agent do, which the run would
// otherwise undo (backToBranch), putting the work on the branch the person
// was on. git switch carries uncommitted changes along and refuses, with
// nothing changed, when they are in the way; so does a merge or rebase in
// progress. The person's post-checkout hook runs, unattended and bounded
// by --timeout, as it would for their own switch.
//
// resumed: the interrupted run's attempt was settled first (on its own
// branch), so a refusal no longer means that nothing changed.
func (r *run) switchBranch(ctx context.Context, resumed bool) error {
	want := r.opts.Branch
	if want == "" {
		return nil
	}
	repo := r.st.Repo
	now, err := repo.Branch(ctx)
	if err != nil {
		return fmt.Errorf("run: read HEAD: %w", err)
	}
	if now == "refs/heads/"+want {
		return nil
	}
	from := strings.TrimPrefix(now, "refs/heads/")
	if from == "" {
		from = "the detached HEAD"
	}
	changed := "nothing changed"
	if resumed {
		changed = "the interrupted run's attempt was settled on " + from + ", nothing else changed"
	}
	refuse := func(why, hint string) error {
		return badinput.Errorf("run: cannot switch from %s to %s (%s): %s; %s: %s", from, want, r.opts.BranchFrom, why, changed, hint)
	}
	if op := repo.InProgress(); op != "" {
		return refuse("a "+op+" is in progress", "finish or abort it first")
	}
	refs, err := repo.Run(ctx, "for-each-ref", "--format=%(refname)", "refs/heads/"+want, "refs/remotes/")
	if err != nil {
		return fmt.Errorf("run: list branches: %w", err)
	}
	local, remotes := false, 0
	for _, ref := range strings.Fields(refs) {
		switch {
		case ref == "refs/heads/"+want:
			local = true
		case strings.HasSuffix(ref, "/"+want) && strings.Count(strings.TrimPrefix(ref, "refs/remotes/"), "/") == strings.Count(want, "/")+1:
			remotes++
		}
	}
	// --no-overwrite-ignore: git switch replaces an ignored file of the
	// person's that the run's branch tracks without a word and keeps no
	// copy; refused, the file stays and nothing changes.
	args, how := []string{"switch", "-q", "--no-overwrite-ignore", want}, "switched from "+from
	switch {
	case local:
	case remotes == 1:
		how = "made from the remote's " + want + " (tracking it); switched from " + from
	default:
		head, _ := repo.Line(ctx, "rev-parse", "--short", "HEAD")
		args, how = []string{"switch", "-q", "--no-overwrite-ignore", "-c", want}, "made from "+from+" at "+head
	}
	bctx, cancel := r.bounded(ctx)
	defer cancel()
	_, err = repo.RunUnattended(bctx, []string{layout.SessionEnv + "=" + r.session}, nil, args...)
	if gerr := (*git.Error)(nil); errors.As(err, &gerr) && sameAsBranch(bctx, repo, want, overwritten(gerr.Stderr)) {
		// Every file in the way is the branch's own, byte for byte:
		// replacing it loses nothing.
		plain := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--no-overwrite-ignore" })
		_, err = repo.RunUnattended(bctx, []string{layout.SessionEnv + "=" + r.session}, nil, plain...)
	}
	if err != nil {
		why := err.Error()
		if gerr := (*git.Error)(nil); errors.As(err, &gerr) && strings.TrimSpace(gerr.Stderr) != "" {
			why = strings.Join(strings.Fields(gerr.Stderr), " ")
		}
		if bctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("run: switch to %s: git switch (a post-checkout hook) ran past --timeout %s and was stopped", want, r.opts.Timeout)
		}
		hint := "commit or stash what is in the way, or name another branch with --branch"
		switch {
		case strings.Contains(why, "already checked out at") || strings.Contains(why, "already used by worktree"):
			hint = "run wiggum in that worktree, or name another branch with --branch"
		case strings.Contains(why, "would be overwritten"):
			hint = "move the files git names out of the way (git stash leaves ignored files where they are), or name another branch with --branch"
		}
		return refuse(why, hint)
	}
	r.disp.printf("working on branch %s (%s): %s", want, r.opts.BranchFrom, how)
	return nil
}

// overwritten lists the files git switch names as in the way ("The
// following untracked working tree files would be overwritten by
// checkout:", one a line, indented).
func overwritten(stderr string) []string {
	var files []string
	in := false
	for _, l := range strings.Split(stderr, "\n") {
		switch {
		case strings.Contains(l, "would be overwritten by"):
			in = true
		case in && strings.HasPrefix(l, "\t"):
			files = append(files, strings.TrimSpace(l))
		default:
			in = false
		}
	}
	return files
}

// sameAsBranch reports whether every one of files (at least one) is, in
// the working tree, what branch holds at that path, byte for byte.
func sameAsBranch(ctx context.Context, repo *git.Repo, branch string, files []string) bool {
	if len(files) == 0 {
		return false
	}
	for _, f := range files {
		if fi, err := os.Lstat(filepath.Join(repo.Root, filepath.FromSlash(f))); err != nil || !fi.Mode().IsRegular() {
			return false
		}
		have, err := repo.Line(ctx, "hash-object", "--", f)
		if err != nil {
			return false
		}
		want, err := repo.Line(ctx, "rev-parse", "--verify", "-q", branch+":"+f)
		if err != nil || want != have {
			return false
		}
	}
	return true
}

// attemptElsewhere reports whether the main tree holds a killed run's
// unfinished attempt (its checkpoint on disk) on a branch other than the
// run's: switching first would carry its changes to a branch its
// checkpoint is not on, where no rollback could take them back.
func (r *run) attemptElsewhere() bool {
	if r.opts.Branch == "" {
		return false
	}
	_, cp, _ := r.mainAttempt()
	return cp != nil && checkpoint.BranchName(cp.Branch) != r.opts.Branch
}
