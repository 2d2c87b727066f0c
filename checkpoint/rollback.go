package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/killpoint"
)

// RefusedError is a rollback (or a restore: Op "recover") that was not
// safe. Nothing was changed.
type RefusedError struct {
	Reason string
	Op     string // "" for a rollback
}

func (e *RefusedError) Error() string {
	op := e.Op
	if op == "" {
		op = "rollback"
	}
	return op + " refused: " + e.Reason + "; nothing was changed"
}

// PartialError is a rollback that stopped while it wrote the working
// tree: HEAD is back at the checkpoint, and of the files to remove or
// return some are, the rest not - the tree is neither the attempt's nor
// the checkpoint's. Everything it had is saved in Backup; a rollback run
// again once the cause is mended finishes the job.
type PartialError struct {
	Head   string // the checkpoint commit HEAD is back at
	Backup string
	Root   string // the working tree, to name the path at fault from
	Err    error
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("rollback: stopped partway: HEAD is back at %s, but the working tree is only partly returned to it - some of the attempt's files are removed or put back, the others not (all of it is saved in %s): %v%s",
		short(e.Head), e.Backup, e.Err, e.Hint())
}

func (e *PartialError) Unwrap() error { return e.Err }

// Hint is what to mend, when the cause says: a path this user may not
// change.
func (e *PartialError) Hint() string {
	var pe *fs.PathError
	if !errors.As(e.Err, &pe) || !errors.Is(pe.Err, fs.ErrPermission) {
		return ""
	}
	dir := filepath.Dir(pe.Path)
	if rel, err := filepath.Rel(e.Root, dir); err == nil && !strings.HasPrefix(rel, "..") {
		dir = rel
	}
	return fmt.Sprintf("; you may not change %s: make it writable for you (chmod -R u+w %s), or have its owner remove it", dir, dir)
}

func refuse(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// RollbackOptions tunes Rollback.
type RollbackOptions struct {
	Session string // the session rolling back; journal entries must match it
	DryRun  bool   // say what would be discarded, change nothing
	Reason  string // recorded in the backup commit
	// DiscardForeign goes ahead past commits that cannot be proven the
	// session's own (made outside it, by another session, unjournaled, or
	// any commit when rolling back outside a session); they are saved in
	// the backup like everything else.
	DiscardForeign bool
	// SetAsideRepos: a new untracked directory that is a git repository
	// of its own (an agent's git init, a generator's, a clone) has its
	// .git moved under NestedAside, where its history stays, and its files
	// are then saved and removed like any other untracked file, so the
	// tree is whole at the checkpoint. Without it such a directory is left
	// as it is (Repositories). The loop sets it: a failed attempt's
	// generated project must not survive into the next attempt's commit.
	SetAsideRepos bool
}

// RollbackResult says what a rollback did (or, dry, would do).
type RollbackResult struct {
	Checkpoint  *Checkpoint `json:"checkpoint"`
	BackupRef   string      `json:"backup_ref,omitempty"`
	Commits     []string    `json:"commits"`       // discarded commits, newest first
	Files       []string    `json:"files"`         // paths whose content returns to the checkpoint
	Removed     []string    `json:"removed"`       // untracked files removed
	NothingToDo bool        `json:"nothing_to_do"` // already at the checkpoint
	// Submodules: the checked-out submodules the rollback returned to the
	// checkpoint, or left as they are, and why.
	Submodules []SubmoduleReturn `json:"submodules,omitempty"`
	// Repositories: new untracked directories that are git repositories
	// of their own (an agent's git init or project generator). Their
	// history cannot be held by a backup of this tree, so they are left
	// as they are.
	Repositories []string `json:"repositories,omitempty"`
	// SetAside: with SetAsideRepos, the new repositories whose .git went
	// under NestedAside and whose files were saved and removed.
	SetAside []RepoSetAside `json:"set_aside,omitempty"`
	// InTheWay: directories where the checkpoint has a file that held a
	// repository of their own or ignored files, moved whole under
	// InTheWayAside before the file was written (see inTheWay).
	InTheWay []DirAside `json:"in_the_way,omitempty"`
	// Unhidden: files the attempt's change to a .gitignore had hidden -
	// new since the checkpoint, ignored under the changed rules, not under
	// the checkpoint's - saved in UnhiddenBackup and removed (see
	// removeUnhidden).
	Unhidden       []string `json:"unhidden,omitempty"`
	UnhiddenBackup string   `json:"unhidden_backup,omitempty"`
	DryRun         bool     `json:"dry_run"`
}

// Rollback returns HEAD and the working tree to the checkpoint when that is
// provably safe, after saving everything it discards under
// refs/wiggum/backup/. Otherwise it returns a *RefusedError and changes
// nothing. The caller must hold the agent lock or act inside its session.
func (s *State) Rollback(ctx context.Context, opts RollbackOptions) (*RollbackResult, error) {
	res, err := s.rollback(ctx, opts)
	if err != nil || opts.DryRun || !opts.SetAsideRepos || len(res.Repositories) == 0 {
		return res, err
	}
	var left []string
	for _, p := range res.Repositories {
		aside, err := SetAsideGit(s.Repo, strings.TrimSuffix(p, "/"))
		if err != nil {
			left = append(left, p)
			continue
		}
		res.SetAside = append(res.SetAside, RepoSetAside{Path: strings.TrimSuffix(p, "/"), Aside: aside})
	}
	res.Repositories = left
	if len(res.SetAside) == 0 {
		return res, nil
	}
	// Their files are untracked files now: a second pass saves and
	// removes them. HEAD is at the checkpoint already; nothing else moves.
	again, err := s.rollback(ctx, opts)
	if err != nil {
		return res, fmt.Errorf("the tree is back at %s (its state before is saved in %s), but the files of %s, whose .git is set aside in %s, could not be removed: %w",
			short(res.Checkpoint.Head), res.BackupRef, res.SetAside[0].Path, res.SetAside[0].Aside, err)
	}
	for i := range res.SetAside {
		res.SetAside[i].Backup = again.BackupRef
	}
	if res.BackupRef == "" {
		// Only the repositories had changed: theirs is the attempt's backup.
		res.BackupRef, res.NothingToDo = again.BackupRef, false
	}
	res.Removed = append(res.Removed, again.Removed...)
	res.Repositories = append(res.Repositories, again.Repositories...)
	return res, nil
}

// RepoSetAside is a new repository of its own a rollback took out of the
// tree: its .git kept at Aside, its files saved in Backup.
type RepoSetAside struct {
	Path   string `json:"path"`
	Aside  string `json:"aside"`
	Backup string `json:"backup,omitempty"`
}

func (r RepoSetAside) String() string {
	return fmt.Sprintf("%s/, a git repository of its own the attempt made, removed: its files saved in %s, its .git kept in %s (git --git-dir=%s log)", r.Path, r.Backup, r.Aside, r.Aside)
}

// NestedAside is the directory, in the common git directory, where wiggum
// keeps the .git of a repository of its own an agent made inside the tree
// (git init, a generator's, a clone) once the loop has committed its files
// as the tree's or a rollback has removed them: one directory per
// repository, out of every tree, never removed by wiggum.
const NestedAside = "wiggum-nested"

// SetAsideGit moves the .git directory of the repository at path (from
// the root, slash-separated) under NestedAside and says where it went. A
// .git that is a file (a submodule's, another repository's worktree) is
// not moved: its history lives elsewhere.
func SetAsideGit(repo *git.Repo, path string) (string, error) {
	gitDir := filepath.Join(repo.Root, filepath.FromSlash(path), ".git")
	fi, err := os.Lstat(gitDir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s/.git is not a directory", path)
	}
	aside := filepath.Join(repo.CommonDir, NestedAside, time.Now().UTC().Format("20060102T150405.000000000Z")+"-"+strings.ReplaceAll(path, "/", "%")+".git")
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(gitDir, aside); err != nil {
		return "", err
	}
	return aside, nil
}

// rollback is one pass of Rollback.
func (s *State) rollback(ctx context.Context, opts RollbackOptions) (*RollbackResult, error) {
	// One cat-file reads every object a rollback needs: the facts, the
	// trees a snapshot builds on, the trees it compares.
	cat := s.Repo.Cat(ctx)
	defer cat.Close()
	// The ref transaction's git starts with the reads (see startMove);
	// a rollback that stops before it stops it unheard.
	var move *git.Started
	defer func() {
		if move != nil {
			move.Abandon()
		}
	}()
	startMove := func(cp *Checkpoint) {
		if !opts.DryRun {
			move = s.startMove(ctx, cp)
		}
	}
	f, err := s.rollbackFacts(ctx, cat, opts, startMove)
	if err != nil {
		return nil, fmt.Errorf("rollback: %w", err)
	}
	if err := judge(f); err != nil {
		return nil, err
	}
	cp, now := f.Checkpoint, f.Now
	head := now.Head
	res := &RollbackResult{Checkpoint: cp, DryRun: opts.DryRun, Commits: f.Commits}
	msg := backupMessage(opts.Reason, head, cp, len(f.Commits))

	// What the working tree holds now, and what the checkpoint held.
	nowTree := f.HeadTree
	var current string       // snapshot commit of the working tree, when dirty
	var idx *treeIndex       // the private index behind it, reused to restore
	var tracked []treeChange // or: the working tree's states at status's paths
	if now.Dirty() {
		current, nowTree, idx, tracked, err = s.snapshot(ctx, now, msg, !opts.DryRun, f.Trees, cat)
		if err != nil {
			return nil, fmt.Errorf("rollback: snapshot the working tree: %w", err)
		}
		defer idx.remove()
	}
	wantTree := f.CheckpointTree
	if cp.Snapshot != "" {
		wantTree = f.SnapshotTree
	}
	subs := now.ChangedSubmodules()
	removed, repos := newUntracked(cp, now.Untracked)
	res.Repositories = repos
	reason := opts.Reason
	if reason == "" {
		reason = "rollback"
	}
	if len(res.Commits) == 0 && nowTree == wantTree && !indexMoved(cp, now, removed) {
		// Nothing of the main tree to return; its submodules' files
		// may still have changed.
		res.Submodules, err = s.returnSubmodules(ctx, cp, subs, nil, reason, opts.DryRun)
		res.NothingToDo = len(res.Submodules) == 0
		if err == nil && !opts.DryRun {
			s.unmarkRestore() // the tree is the checkpoint's: whole
		}
		if lost := lostFlags(cp, now); err == nil && !opts.DryRun && len(lost) > 0 {
			// An attempt that only took a hidden file's flag off: the
			// content is as it was, the flag is put back.
			err = s.setHiding(ctx, nil, lost, "--assume-unchanged", "--skip-worktree")
		}
		return res, err
	}
	// One walk of the trees answers what the working tree must change and
	// what the checkpoint's own uncommitted state changed.
	pairs := [][2]string{{nowTree, wantTree}}
	if cp.Snapshot != "" {
		pairs = append(pairs, [2]string{f.SnapshotTree, f.CheckpointTree})
	}
	diffs, err := diffTrees(cat, f.Trees, pairs...)
	if err != nil {
		return nil, fmt.Errorf("rollback: diff: %w", err)
	}
	changes := diffs[0]
	var uncommitted []treeChange
	if cp.Snapshot != "" {
		uncommitted = diffs[1]
	}
	for _, c := range changes {
		res.Files = append(res.Files, c.path)
	}
	res.Removed = removedOf(removed, changes)
	if res.InTheWay, err = s.inTheWay(ctx, changes); err != nil {
		return nil, fmt.Errorf("rollback: %w", err)
	}
	// A repository inside a directory that goes aside whole goes with it.
	res.Repositories = slices.DeleteFunc(res.Repositories, func(dir string) bool { return underAny(dir, res.InTheWay) })
	if opts.DryRun {
		res.Submodules, err = s.returnSubmodules(ctx, cp, subs, changes, reason, true)
		return res, err
	}

	// Save first: nothing is discarded that is not in a backup ref. The
	// backup ref and the branch move are one ref transaction, and the branch
	// moves only if it still is where it was checked: a commit that lands
	// meanwhile makes both fail instead of being lost.
	if current == "" {
		current, err = s.backupCommit(ctx, head, f.HeadTree, msg)
		if err != nil {
			return nil, fmt.Errorf("rollback: save backup: %w", err)
		}
	}
	lk, err := s.lockIndex()
	if err != nil {
		return nil, err
	}
	defer lk.release()
	index := s.startIndex(ctx, idx, tracked, cp, changes, uncommitted, now.Changes)
	res.BackupRef, err = s.backupAndMove(ctx, current, cp, head, move)
	move = nil
	if err != nil {
		(<-index).index.remove()
		return nil, err
	}
	// On disk before anything is discarded: git wrote the backup's
	// objects and ref without fsync, and a power cut after the tree is
	// returned must not find them empty.
	if err := git.SyncFS(s.Repo.CommonDir); err != nil {
		(<-index).index.remove()
		return nil, fmt.Errorf("rollback: the backup %s could not be made durable, so the working tree is left as it was (HEAD is back at %s): %w", res.BackupRef, short(cp.Head), err)
	}
	// From here files are written: a kill leaves the mark (Interrupted);
	// an error says itself, naming the backup.
	if err := s.markRestore("rollback", cp.Head, res.BackupRef); err != nil {
		(<-index).index.remove()
		return nil, err
	}
	defer s.unmarkRestore()
	// Before any file is written: writing one where such a directory is
	// deletes it recursively, with what the backup does not hold.
	if err := s.setAside(res.InTheWay); err != nil {
		(<-index).index.remove()
		return nil, fmt.Errorf("rollback: the working tree is left as it was (HEAD is back at %s, everything is saved in %s): %w", short(cp.Head), res.BackupRef, err)
	}
	killpoint.At("rollback-marked")
	if err := s.restoreTree(ctx, cat, lk, index, cp, changes); err != nil {
		return nil, &PartialError{Head: cp.Head, Backup: res.BackupRef, Root: s.Repo.Root, Err: err}
	}
	if res.Submodules, err = s.returnSubmodules(ctx, cp, subs, changes, reason, false); err != nil {
		return res, fmt.Errorf("the tree is back at %s (its state before is saved in %s), but %w", short(cp.Head), res.BackupRef, err)
	}
	if ignoreRulesChanged(changes) {
		if err := s.removeUnhidden(ctx, cp, res, reason); err != nil {
			return res, fmt.Errorf("the tree is back at %s (its state before is saved in %s), but %w", short(cp.Head), res.BackupRef, err)
		}
	}
	return res, nil
}

// indexMoved reports whether the index may differ from the checkpoint's
// where the files do not: a new untracked file in a tree that is the
// checkpoint's is one the checkpoint tracked and the attempt untracked
// (git rm --cached); and with a clean checkpoint, whose index was HEAD's,
// anything staged was staged since.
func indexMoved(cp *Checkpoint, now *git.Status, removed []string) bool {
	if len(removed) > 0 {
		return true
	}
	if cp.Snapshot != "" {
		return false // what was staged then is not recorded
	}
	return slices.ContainsFunc(now.Changes, func(c git.Change) bool { return c.Staged })
}

// removedOf lists the new untracked files a rollback removes: those the
// checkpoint does not have. One it has (the attempt untracked it) stays,
// tracked again.
func removedOf(files []string, changes []treeChange) []string {
	if len(files) == 0 {
		return nil
	}
	gone := make(map[string]bool, len(changes))
	for _, c := range changes {
		if c.mode == "" {
			gone[c.path] = true
		}
	}
	return slices.DeleteFunc(files, func(p string) bool { return !gone[p] })
}

// ignoreRulesChanged reports whether the rollback changed a .gitignore.
func ignoreRulesChanged(changes []treeChange) bool {
	for _, c := range changes {
		if c.path == ".gitignore" || strings.HasSuffix(c.path, "/.gitignore") {
			return true
		}
	}
	return false
}

// removeUnhidden finishes a rollback that returned a .gitignore: files the
// attempt made while its own rules ignored them (an agent that ran npm
// install and added node_modules/ to .gitignore) were neither in the
// snapshot nor among the files to remove, and with the checkpoint's rules
// back they are new untracked files - left there, the next story's commit
// took them in. They are saved like everything a rollback discards, in a
// backup of their own, then removed.
func (s *State) removeUnhidden(ctx context.Context, cp *Checkpoint, res *RollbackResult, reason string) error {
	now, err := s.Repo.Status(ctx)
	if err != nil {
		return fmt.Errorf("read what the restored ignore rules show: %w", err)
	}
	files, _ := newUntracked(cp, now.Untracked)
	if len(files) == 0 {
		return nil
	}
	ref, err := s.backupOf(ctx, now, reason+": files the attempt's .gitignore change had hidden")
	if err != nil {
		return fmt.Errorf("save the files the attempt's .gitignore change had hidden: %w", err)
	}
	for _, f := range files {
		if err := s.removeFile(f, cp.Time); err != nil {
			return fmt.Errorf("remove %s (saved in %s): %w", f, ref, err)
		}
	}
	res.Unhidden, res.UnhiddenBackup = files, ref
	res.Removed = append(res.Removed, files...)
	return nil
}

// rollbackFacts reads what the rules judge, changing nothing. It stops
// early when a fact makes the rest meaningless (no checkpoint, its commit
// gone): the rule for that fact comes first. ahead is called with the
// checkpoint, when there is one, while git reads the working tree.
func (s *State) rollbackFacts(ctx context.Context, cat *git.Cat, opts RollbackOptions, ahead func(*Checkpoint)) (*rollbackFacts, error) {
	f := &rollbackFacts{Session: opts.Session, DiscardForeign: opts.DiscardForeign, InProgress: s.Repo.InProgress(), RecordRef: s.snapshotRef()}
	// Status, the longest read, starts first; the checkpoint's record is
	// read while it scans. Without a checkpoint its answer is waited for
	// and dropped: killed, it could leave git's index.lock behind.
	status := s.Repo.StartStatus(ctx)
	cp, ref, err := s.currentCheckpoint(ctx)
	if err != nil {
		status()
		if errors.Is(err, ErrNoCheckpoint) {
			// Whether one was taken and its record deleted since (an
			// agent's patch in the state directory): the refusal says so.
			f.Recorded, _ = s.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", f.RecordRef)
			return f, nil
		}
		return nil, err
	}
	f.Checkpoint = cp
	// cat-file (and what ahead starts) start while status scans the
	// working tree: they are independent of it.
	cat.Start()
	ahead(cp)
	if f.Now, err = status(); err != nil {
		return nil, fmt.Errorf("read HEAD and status: %w", err)
	}
	f.Now = s.withHidden(f.Now)
	// One object lookup answers every question about objects and refs.
	objs := []string{cp.Head + "^{commit}", f.RecordRef, cp.Head + "^{tree}", f.Now.Head + "^{tree}"}
	if cp.Snapshot != "" {
		objs = append(objs, cp.Snapshot+"^{tree}", cp.Snapshot+"^1")
	}
	// HEAD's last commits, read with the rest: when they are a chain of
	// single-parent commits down to the checkpoint (an agent committing
	// on its branch), they answer what rev-list would.
	chainAt := len(objs)
	if f.Now.Head != cp.Head && f.Now.Head != "" {
		for i := range chainDepth {
			objs = append(objs, fmt.Sprintf("%s~%d^{commit}", f.Now.Head, i))
		}
	}
	nfacts := len(objs)
	if f.Now.Dirty() && f.Now.Head != "" {
		// The same cat-file reads HEAD's trees along the changed paths,
		// which a snapshot of the working tree builds on, and the
		// checkpoint's along the same paths, which the diff from the
		// working tree to the checkpoint most likely reads (what an agent
		// commits is mostly where it also left changes): a round trip per
		// directory level saved when they are, a few objects read for
		// nothing when they are not.
		paths := f.Now.Paths()
		objs = append(objs, treeNames(f.Now.Head+"^{tree}", paths)...)
		if f.Now.Head != cp.Head {
			objs = append(objs, treeNames(cp.Head+"^{tree}", paths)...)
		}
		if cp.Snapshot != "" {
			objs = append(objs, treeNames(cp.Snapshot+"^{tree}", paths)...)
		}
	}
	found, err := cat.Read(objs...)
	if err != nil {
		return nil, err
	}
	f.HeadExists, f.Recorded, f.CheckpointTree, f.HeadTree = found[0].ID != "", found[1].ID, found[2].ID, found[3].ID
	if ref != "" {
		f.Recorded = ref // the value the record was chosen by (see currentCheckpoint)
	}
	if cp.Snapshot != "" {
		f.SnapshotTree, f.SnapshotParent = found[4].ID, found[5].ID
	}
	if len(objs) > nfacts {
		f.Trees = make(map[string]git.Object, len(objs)-nfacts)
		for i := nfacts; i < len(objs); i++ {
			f.Trees[objs[i]] = found[i]
		}
	}
	if !f.HeadExists {
		return f, nil
	}
	f.Ancestor = true
	if f.Now.Head != cp.Head {
		if chain, ok := linearChain(found[chainAt:nfacts], cp.Head); ok {
			f.Commits = chain
			return s.journalFacts(f)
		}
		// One walk answers both questions: commits only the checkpoint
		// reaches (<) mean it is not an ancestor; the others (>) are what
		// a rollback discards.
		out, err := s.Repo.Run(ctx, "rev-list", "--left-right", cp.Head+"..."+f.Now.Head)
		if err != nil {
			return nil, fmt.Errorf("list commits: %w", err)
		}
		for _, l := range strings.Fields(out) {
			switch l[0] {
			case '<':
				f.Ancestor = false
			case '>':
				f.Commits = append(f.Commits, l[1:])
			}
		}
	}
	return s.journalFacts(f)
}

// chainDepth is how many of HEAD's commits a rollback reads with its other
// facts, hoping to find the checkpoint among them.
const chainDepth = 16

// linearChain reads commits (HEAD, HEAD~1, ... as cat-file gave them):
// when each is a single-parent commit whose parent is the next, down to
// cp, the commits before cp are exactly what HEAD has and cp has not -
// newest first - and cp is an ancestor of HEAD. Anything else (a merge,
// a root, cp further down) is not proven here: ok is false.
func linearChain(commits []git.Object, cp string) (chain []string, ok bool) {
	for i, c := range commits {
		if c.ID == "" || c.Type != "commit" {
			return nil, false
		}
		if c.ID == cp {
			return chain, true
		}
		parents := parentsOf(c.Data)
		if len(parents) != 1 || i+1 >= len(commits) || commits[i+1].ID != parents[0] {
			return nil, false
		}
		chain = append(chain, c.ID)
	}
	return nil, false
}

// parentsOf lists the parents a commit object's header names.
func parentsOf(commit []byte) []string {
	var parents []string
	for _, line := range strings.Split(string(commit), "\n") {
		if line == "" {
			break // the end of the header
		}
		if p, ok := strings.CutPrefix(line, "parent "); ok {
			parents = append(parents, p)
		}
	}
	return parents
}

// journalFacts reads what the journal rule judges.
func (s *State) journalFacts(f *rollbackFacts) (*rollbackFacts, error) {
	f.JournalOn = s.JournalOn()
	if f.JournalOn && len(f.Commits) > 0 {
		entries, err := s.Journal()
		if err != nil {
			return nil, err
		}
		f.Journal = make(map[string]JournalEntry, len(entries))
		for _, e := range entries {
			f.Journal[e.SHA] = e
		}
		if slices.ContainsFunc(f.Commits, func(c string) bool { _, ok := f.Journal[c]; return !ok }) {
			if err := s.keptElsewhere(f); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

// keptElsewhere marks the commits to discard that another branch, a tag
// or a remote-tracking branch still reaches: those a merge brought in
// (git merge other), which the rollback takes off this branch but does
// not destroy, and which are not the session's to prove its own.
func (s *State) keptElsewhere(f *rollbackFacts) error {
	args := []string{"rev-list", f.Now.Head, "^" + f.Checkpoint.Head, "--not"}
	if b := strings.TrimPrefix(f.Now.Branch, "refs/heads/"); b != "" {
		args = append(args, "--exclude="+b) // matched as --branches names them
	}
	out, err := s.Repo.Run(context.Background(), append(args, "--branches", "--tags", "--remotes")...)
	if err != nil {
		return fmt.Errorf("list commits: %w", err)
	}
	only := map[string]bool{}
	for _, c := range strings.Fields(out) {
		only[c] = true
	}
	f.Elsewhere = map[string]bool{}
	for _, c := range f.Commits {
		if !only[c] {
			f.Elsewhere[c] = true
		}
	}
	return nil
}

// backupMessage is a rollback's backup commit message; commits, the
// commits head has beyond the checkpoint, is recorded so that listing
// backups need not count them again (Backups).
func backupMessage(reason, head string, cp *Checkpoint, commits int) string {
	if reason == "" {
		reason = "rollback"
	}
	return fmt.Sprintf("wiggum backup: %s\n\nhead: %s\ncheckpoint: %s\ncommits: %d\nbranch: %s\n", reason, head, cp.Head, commits, BranchName(cp.Branch))
}

// newUntracked lists the files of now (untracked ones) that did not exist
// at checkpoint time, and apart the new directories git lists whole
// ("dir/"): with every untracked file listed, those are repositories of
// their own, which a snapshot leaves out and a rollback leaves alone.
func newUntracked(cp *Checkpoint, now []string) (files, repos []string) {
	keep := make(map[string]bool, len(cp.Untracked))
	for _, p := range cp.Untracked {
		keep[p] = true
	}
	for _, p := range now {
		switch {
		case keep[p]:
		case strings.HasSuffix(p, "/"):
			repos = append(repos, p)
		default:
			files = append(files, p)
		}
	}
	return files, repos
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// BranchName renders a full branch ref for people: "main", or "detached
// HEAD" for "".
func BranchName(ref string) string {
	if ref == "" {
		return "detached HEAD"
	}
	return strings.TrimPrefix(ref, "refs/heads/")
}
