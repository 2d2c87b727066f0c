package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/killpoint"
)

// BackupPrefix is where every saved state lives (contract).
const BackupPrefix = "refs/wiggum/backup/"

// SubmoduleBackupPrefix holds, in the main repository, the work of a
// parallel worktree's submodule that the main tree has no checkout of
// (wiggum's worktree removal saves it there): a submodule's history, not
// the tree's, so not a backup wiggum recover lists or restores; Prune
// deletes old ones with the rest.
const SubmoduleBackupPrefix = "refs/wiggum/submodule-backup/"

// backupCommit records the state with HEAD at head (whose tree is tree)
// and a clean working tree.
func (s *State) backupCommit(ctx context.Context, head, tree, message string) (string, error) {
	if ow := s.Repo.ObjectWriter(len(head)); ow != nil && tree != "" {
		return ow.Commit(tree, []string{head}, "wiggum <wiggum@localhost>", "wiggum <wiggum@localhost>", time.Now(), message)
	}
	out, err := s.Repo.RunEnv(ctx, wiggumIdent, []byte(message), "commit-tree", head+"^{tree}", "-p", head, "-F", "-")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// BackupCommit saves commit as it is - a branch's tip, say, before the
// branch is deleted - under a new, unique ref under BackupPrefix, which it
// returns.
func (s *State) BackupCommit(ctx context.Context, commit string) (string, error) {
	return s.createBackupRef(ctx, commit)
}

// createBackupRef points a new, unique ref under BackupPrefix at commit.
func (s *State) createBackupRef(ctx context.Context, commit string) (string, error) {
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for i := 0; i < 100; i++ {
		ref := BackupPrefix + stamp + "-" + short(commit)[:8]
		if i > 0 {
			ref += "-" + strconv.Itoa(i)
		}
		// The empty old value makes git refuse to overwrite an existing ref.
		_, err := s.Repo.Run(ctx, "update-ref", "-m", "wiggum backup", ref, commit, "")
		if err == nil {
			return ref, nil
		}
		var ge *git.Error
		if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "exists") {
			return "", err
		}
	}
	return "", errors.New("could not find a free backup ref name")
}

// moveArgs is the ref transaction's git command line: `update-ref
// --stdin`, which acts (locks, checks each ref's old value, writes) only
// at the end of its input.
func moveArgs(cp *Checkpoint) []string {
	return []string{"update-ref", "--no-deref", "-m", "wiggum rollback to " + short(cp.Head), "--stdin"}
}

// startMove starts backupAndMove's git ahead of its transaction, so that
// git's start-up overlaps the rollback's reads; until backupAndMove gives
// it the transaction it has done nothing, and Abandon stops it so.
func (s *State) startMove(ctx context.Context, cp *Checkpoint) *git.Started {
	return s.Repo.Start(ctx, nil, moveArgs(cp)...)
}

// backupAndMove creates a new backup ref at commit and moves cp's branch
// (HEAD itself when detached) from head back to the checkpoint, in one ref
// transaction: both happen or neither. A branch that moved since head was
// read is a refusal with nothing changed. started, when not nil, is
// startMove's git, given the first attempt.
func (s *State) backupAndMove(ctx context.Context, commit string, cp *Checkpoint, head string, started *git.Started) (string, error) {
	ref := cp.Branch
	if ref == "" {
		ref = "HEAD"
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	// The locks a git killed while it held HEAD's or the branch's (the
	// story's own git commit, killed by a signal) are removed first, when
	// no git could hold them (a few stats when there are none): git would
	// wait out its ref lock timeout on each before failing.
	s.clearStaleLocks(cp.Branch)
	cleared := false
	for i := 0; i < 100; i++ {
		backup := BackupPrefix + stamp + "-" + short(commit)[:8]
		if i > 0 {
			backup += "-" + strconv.Itoa(i)
		}
		tx := []byte(fmt.Sprintf("create %s %s\nupdate %s %s %s\n", backup, commit, ref, cp.Head, head))
		var err error
		if started != nil {
			_, err = started.Finish(tx)
			started = nil
		} else {
			_, err = s.Repo.RunEnv(ctx, nil, tx, moveArgs(cp)...)
		}
		if err == nil {
			return backup, nil
		}
		var ge *git.Error
		if !errors.As(err, &ge) {
			return "", fmt.Errorf("rollback: save backup: %w", err)
		}
		if strings.Contains(ge.Stderr, backup) && strings.Contains(ge.Stderr, "exists") {
			continue
		}
		if lock := git.LockedFile(err); lock != "" {
			// A lock file, not a moved HEAD: the one a git killed while
			// it held HEAD's or the branch's lock (the story's own git
			// commit, killed by a signal) left is removed once no git
			// could hold it, and the transaction tried again; one a live
			// git holds is a failure to retry, not an unsafe rollback.
			if !cleared {
				cleared = true
				if s.clearStaleLocks(cp.Branch) {
					continue
				}
			}
			return "", fmt.Errorf("rollback: save backup: %s exists: another git command is at work in the repository, or one was killed and left it; nothing was changed: run again when it is done, or remove the file if no git is running", lock)
		}
		// The transaction failed with nothing changed. Only a branch that
		// is no longer where it was read makes that an unsafe rollback; a
		// backup ref git could not write (a read-only directory, too many
		// open files, a git that could not start) is a failure with its
		// own cause.
		now, rerr := s.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", ref)
		var gone *git.Error
		if (rerr == nil && now != head) || (errors.As(rerr, &gone) && gone.Status() == 1) {
			return "", refuse("HEAD moved while the backup was saved (%s)", strings.TrimSpace(ge.Stderr))
		}
		return "", fmt.Errorf("rollback: save backup: %w; nothing was changed", err)
	}
	return "", errors.New("rollback: save backup: could not find a free backup ref name")
}

// clearStaleLocks removes the ref lock files a killed git left where the
// rollback's ref transaction needs them (git.Repo.ClearStaleRefLocks),
// tells git.OnStaleLock of each, and reports
// whether it removed any.
func (s *State) clearStaleLocks(branch string) bool {
	stale := s.Repo.ClearStaleRefLocks(branch) // the index's is the rollback's own
	for _, l := range stale {
		if git.OnStaleLock != nil {
			git.OnStaleLock(l.Path, l.Age)
		}
	}
	return len(stale) > 0
}

// Backup saves HEAD plus every uncommitted (tracked and untracked, not
// ignored, and the changed files the index hides: see withHidden) file as one commit under refs/wiggum/backup/, leaving the index
// and working tree untouched. It returns the ref.
func (s *State) Backup(ctx context.Context, reason string) (string, error) {
	now, err := s.Repo.Status(ctx)
	if err != nil {
		return "", fmt.Errorf("backup: read HEAD and status: %w", err)
	}
	// The files the index hides from status are saved as a checkpoint
	// saves them: a restore writes over them next.
	return s.backupOf(ctx, s.withHidden(now), reason)
}

// backupOf is Backup of the tree as the status now read it.
func (s *State) backupOf(ctx context.Context, now *git.Status, reason string) (string, error) {
	if now.Head == "" {
		return "", errors.New("backup: the repository has no commits yet")
	}
	msg := fmt.Sprintf("wiggum backup: %s\n\nhead: %s\nbranch: %s\n", reason, now.Head, BranchName(now.Branch))
	commit, _, _, _, err := s.snapshot(ctx, now, msg, false, nil, nil)
	if err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	ref, err := s.createBackupRef(ctx, commit)
	if err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	// Every caller discards what it saved next: the backup is on disk
	// first (git wrote its objects and ref without fsync).
	if err := git.SyncFS(s.Repo.CommonDir); err != nil {
		return "", fmt.Errorf("backup: %s could not be made durable: %w", ref, err)
	}
	return ref, nil
}

// BackupInfo describes one saved state.
type BackupInfo struct {
	Ref     string    `json:"ref"`
	Commit  string    `json:"commit"`
	Head    string    `json:"head"` // the HEAD it saved
	Time    time.Time `json:"time"`
	Reason  string    `json:"reason"`
	Commits int       `json:"commits"` // commits it holds beyond the checkpoint, when known
	Files   int       `json:"files"`   // uncommitted files it holds
	Lines   int       `json:"lines"`   // lines added plus removed by those files
}

// Backups lists saved states, newest first, with what each holds: one
// for-each-ref for the list and the commits a rollback's backup recorded
// it holds beyond its checkpoint, one git log for every backup's files and
// lines, and for backups made before the count was recorded one cat-file
// counting them all (countCommits).
func (s *State) Backups(ctx context.Context) ([]BackupInfo, error) {
	list, checkpoints, err := s.backupRefs(ctx)
	if err != nil || len(list) == 0 {
		return list, err
	}
	s.countCommits(ctx, list, checkpoints)
	// Every backup's uncommitted files, from its HEAD to it, in one git.
	var in strings.Builder
	at := make(map[string][]int, len(list))
	for i, b := range list {
		if len(at[b.Commit]) == 0 {
			in.WriteString(b.Commit + "\n")
		}
		at[b.Commit] = append(at[b.Commit], i)
	}
	out, err := s.Repo.RunEnv(ctx, nil, []byte(in.String()), "log", "--stdin", "--no-walk=unsorted", "--first-parent", "--diff-merges=first-parent", "--no-renames", "--format=%x01%H", "--numstat")
	if err != nil {
		return list, nil // the list stands without its counts
	}
	for _, rec := range strings.Split(out, "\x01")[1:] {
		lines := strings.Split(strings.TrimSpace(rec), "\n")
		files, sum := 0, 0
		for _, l := range lines[1:] {
			p := strings.Fields(l)
			if len(p) < 3 {
				continue
			}
			files++
			a, _ := strconv.Atoi(p[0])
			d, _ := strconv.Atoi(p[1])
			sum += a + d
		}
		for _, i := range at[strings.TrimSpace(lines[0])] {
			list[i].Files, list[i].Lines = files, sum
		}
	}
	return list, nil
}

// CountBackups is how many saved states there are: one for-each-ref.
func (s *State) CountBackups(ctx context.Context) (int, error) {
	out, err := s.Repo.Run(ctx, "for-each-ref", "--format=x", BackupPrefix)
	if err != nil {
		return 0, fmt.Errorf("list backups: %w", err)
	}
	return strings.Count(out, "\n"), nil
}

// backupRefs lists saved states, newest first, with what their refs and
// messages say (not what they hold), and the checkpoint line of each whose
// commits are still to be counted: one for-each-ref, however many there
// are.
func (s *State) backupRefs(ctx context.Context) (list []BackupInfo, checkpoints []string, err error) {
	out, err := s.Repo.Run(ctx, "for-each-ref", "--sort=-refname",
		"--format=%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents:subject)%00%(contents:body)%01", BackupPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("list backups: %w", err)
	}
	for _, rec := range strings.Split(out, "\x01") {
		f := strings.Split(strings.TrimLeft(rec, "\n"), "\x00")
		if len(f) < 5 {
			continue
		}
		secs, _ := strconv.ParseInt(f[2], 10, 64)
		b := BackupInfo{Ref: f[0], Commit: f[1], Time: time.Unix(secs, 0).UTC(),
			Reason: strings.TrimPrefix(f[3], "wiggum backup: ")}
		var cp string
		counted := false
		for _, line := range strings.Split(f[4], "\n") {
			if v, ok := strings.CutPrefix(line, "head: "); ok {
				b.Head = v
			}
			if v, ok := strings.CutPrefix(line, "checkpoint: "); ok && b.Head != "" {
				cp = v
			}
			if v, ok := strings.CutPrefix(line, "commits: "); ok {
				n, err := strconv.Atoi(v)
				b.Commits, counted = n, err == nil
			}
		}
		if counted {
			cp = "" // nothing left to count
		}
		list = append(list, b)
		checkpoints = append(checkpoints, cp)
	}
	return list, checkpoints, nil
}

// resolveBackup turns a full ref, a name under BackupPrefix, or a unique
// prefix of one into a full backup ref.
func (s *State) resolveBackup(ctx context.Context, name string) (string, error) {
	if strings.ContainsAny(name, " \t\n\x00") || strings.Contains(name, "..") {
		return "", fmt.Errorf("%q is not a backup name", name)
	}
	full := name
	if !strings.HasPrefix(full, BackupPrefix) {
		full = BackupPrefix + strings.TrimPrefix(name, "backup/")
	}
	list, _, err := s.backupRefs(ctx)
	if err != nil {
		return "", err
	}
	var hits []string
	for _, b := range list {
		if b.Ref == full {
			return full, nil
		}
		if strings.HasPrefix(b.Ref, full) {
			hits = append(hits, b.Ref)
		}
	}
	switch len(hits) {
	case 0:
		return "", fmt.Errorf("no backup %q (see 'wiggum recover' for the list)", name)
	case 1:
		return hits[0], nil
	}
	return "", fmt.Errorf("%q names %d backups; give more of the name", name, len(hits))
}

// RestoreResult says what a restore did.
type RestoreResult struct {
	Ref       string `json:"ref"`
	Head      string `json:"head"`
	BackupRef string `json:"backup_ref,omitempty"` // the state saved before restoring
}

// Restore brings back a saved state: HEAD moves forward to the HEAD it saved
// and the working tree gets its files back byte for byte. The current state
// is saved first, as a checkpoint saves it: with the files the index hides
// (skip-worktree, assume-unchanged), and with every ignored file the saved
// state would write over. Only the paths where the saved state differs
// from the working tree are written, as a rollback writes them, so
// untouched files keep their mtime; a hidden file the saved state did not
// change keeps its content, an ignored file it does not hold is left
// alone, untracked files it does not hold stay, and hidden files keep
// their flags. It refuses when HEAD is not an ancestor of the saved HEAD,
// because moving there would drop commits. The caller must hold the lock.
func (s *State) Restore(ctx context.Context, name string) (*RestoreResult, error) {
	res, err := s.restore(ctx, name)
	var refused *RefusedError
	if errors.As(err, &refused) {
		refused.Op = "recover"
	}
	return res, err
}

func (s *State) restore(ctx context.Context, name string) (*RestoreResult, error) {
	ref, err := s.resolveBackup(ctx, name)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	if op := s.Repo.InProgress(); op != "" {
		return nil, refuse("a %s is in progress; finish or abort it first", op)
	}
	cat := s.Repo.Cat(ctx)
	defer cat.Close()
	found, err := cat.Read(ref+"^1", ref+"^{tree}", ref+"^1^{tree}")
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	if found[0].ID == "" || found[1].ID == "" || found[2].ID == "" {
		return nil, fmt.Errorf("recover: %s has no saved HEAD", ref)
	}
	saved, backupTree, savedTree := found[0].ID, found[1].ID, found[2].ID
	status, err := s.Repo.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("recover: read HEAD and status: %w", err)
	}
	if status.Head == "" {
		return nil, errors.New("recover: the repository has no commits yet")
	}
	now := s.withHidden(status)
	head := now.Head
	anc, err := s.Repo.OK(ctx, "merge-base", "--is-ancestor", head, saved)
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	if !anc {
		return nil, refuse("HEAD %s is not an ancestor of the saved HEAD %s, so restoring would drop commits; to look at it instead: git switch -c rescue %s^1 && git checkout %s -- .", short(head), short(saved), ref, ref)
	}
	headTree, err := cat.Read(head + "^{tree}")
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	msg := fmt.Sprintf("wiggum backup: before recover %s\n\nhead: %s\nbranch: %s\n", strings.TrimPrefix(ref, BackupPrefix), head, BranchName(now.Branch))
	// The state before, as a checkpoint takes it; taken again with the
	// ignored files the saved state would write over, when there are.
	var plan *restorePlan
	for pass := 0; ; pass++ {
		plan, err = s.planRestore(ctx, cat, now, msg, backupTree, savedTree, headTree[0].ID)
		if err != nil {
			return nil, fmt.Errorf("recover: %w", err)
		}
		if len(plan.ignored) == 0 {
			break
		}
		plan.idx.remove()
		if pass > 0 {
			return nil, refuse("the ignored file(s) %s, which %s would write over, could not be saved first", strings.Join(plan.ignored, ", "), ref)
		}
		with := *now
		with.Untracked = append(append([]string(nil), now.Untracked...), plan.ignored...)
		now = &with
	}
	defer plan.idx.remove()
	res := &RestoreResult{Ref: ref, Head: saved}
	if res.BackupRef, err = s.createBackupRef(ctx, plan.commit); err != nil {
		return nil, fmt.Errorf("recover: save the state before: %w", err)
	}
	if err := git.SyncFS(s.Repo.CommonDir); err != nil {
		return nil, fmt.Errorf("recover: the state before, saved in %s, could not be made durable: %w", res.BackupRef, err)
	}
	lk, err := s.lockIndex()
	if err != nil {
		return nil, err
	}
	defer lk.release()
	// From here HEAD moves and files are written: a kill leaves the mark
	// (Interrupted); an error says itself, naming the backup.
	if err := s.markRestore("recover", ref, res.BackupRef); err != nil {
		return nil, err
	}
	defer s.unmarkRestore()
	branch, err := s.Repo.Branch(ctx)
	if err != nil {
		return nil, err
	}
	args := []string{"update-ref", "-m", "wiggum recover " + ref}
	if branch == "" {
		args = append(args, "--no-deref", "HEAD")
	} else {
		args = append(args, branch)
	}
	if _, err := s.Repo.Run(ctx, append(args, saved, head)...); err != nil {
		return nil, refuse("HEAD moved while restoring (%v); your state is saved in %s", err, res.BackupRef)
	}
	killpoint.At("recover-head-moved")
	cp := &Checkpoint{Head: saved}
	index := s.startIndex(ctx, plan.idx, plan.tracked, cp, plan.index, plan.uncommitted, now.Changes)
	plan.idx = nil // startIndex's now; restoreTree removes it
	if err := s.restoreTree(ctx, cat, lk, index, cp, plan.write); err != nil {
		return nil, fmt.Errorf("recover: write files (your previous state is in %s): %w", res.BackupRef, err)
	}
	return res, nil
}

// restorePlan is what a restore writes, from a snapshot of the working
// tree (commit, its tree, and the private index or tracked changes the
// rollback's index edit starts from).
type restorePlan struct {
	commit  string
	idx     *treeIndex
	tracked []treeChange
	// write: the working-tree paths to change (the diff from the working
	// tree to the saved state, less the hidden files and untracked files
	// kept); index: the same diff for the index edit; uncommitted: the
	// saved state's uncommitted changes, as its HEAD has those paths.
	write, index, uncommitted []treeChange
	// ignored: files on disk git does not list (ignored) at paths the
	// saved state writes, not in the snapshot yet.
	ignored []string
}

// planRestore snapshots now and diffs it against the saved state
// (backupTree, over its HEAD's savedTree; HEAD's tree is headTree).
func (s *State) planRestore(ctx context.Context, cat *git.Cat, now *git.Status, msg, backupTree, savedTree, headTree string) (*restorePlan, error) {
	p := &restorePlan{}
	var tree string
	var err error
	p.commit, tree, p.idx, p.tracked, err = s.snapshot(ctx, now, msg, true, nil, cat)
	if err != nil {
		return nil, fmt.Errorf("save the state before: %w", err)
	}
	diffs, err := diffTrees(cat, nil, [2]string{tree, backupTree}, [2]string{backupTree, tree}, [2]string{backupTree, savedTree}, [2]string{headTree, savedTree})
	if err != nil {
		p.idx.remove()
		return nil, fmt.Errorf("diff: %w", err)
	}
	changes, nowHas, uncommitted := diffs[0], map[string]string{}, diffs[2]
	for _, c := range diffs[1] {
		nowHas[c.path] = c.mode // "" when the working tree has no such path
	}
	changedBySave := map[string]bool{}
	for _, c := range uncommitted {
		changedBySave[c.path] = true
	}
	headToSaved := map[string]treeChange{}
	for _, c := range diffs[3] {
		headToSaved[c.path] = c
	}
	untracked := map[string]bool{}
	for _, u := range now.Untracked {
		untracked[u] = true
	}
	keep := map[string]bool{}
	for _, h := range now.Changes {
		if (!h.AssumeUnchanged && !h.SkipWorktree) || changedBySave[h.Path] {
			continue
		}
		// A hidden file the saved state did not change: the person's
		// content stays, and its entry becomes the saved HEAD's.
		keep[h.Path] = true
		entry := treeChange{path: h.Path, mode: h.HeadMode, oid: h.HeadOID}
		if c, ok := headToSaved[h.Path]; ok {
			entry = c
		}
		p.uncommitted = append(p.uncommitted, entry)
	}
	p.uncommitted = append(p.uncommitted, uncommitted...)
	removed := map[string]bool{}
	for _, c := range changes {
		if c.mode == "" {
			removed[c.path] = true
		}
	}
	seen := map[string]bool{}
	for _, c := range changes {
		if keep[c.path] {
			continue
		}
		p.index = append(p.index, c)
		if c.mode == "" && untracked[c.path] {
			continue // an untracked file the saved state does not hold stays
		}
		p.write = append(p.write, c)
		if c.mode == "" {
			continue
		}
		// What git does not list but the write would replace: an ignored
		// file at the path or at one of its directories.
		for dir := c.path; ; {
			if m, ok := nowHas[dir]; (!ok || m == "") && !seen[dir] {
				seen[dir] = true
				fi, err := os.Lstat(filepath.Join(s.Repo.Root, filepath.FromSlash(dir)))
				switch {
				case err != nil:
				case fi.IsDir() && dir == c.path:
					// A directory where the saved state has a file goes
					// whole: what in it git does not list is saved first.
					if err := s.unlisted(dir, removed, &p.ignored); err != nil {
						p.idx.remove()
						return nil, refuse("%s is a directory where %s has a file, and what it holds could not be read (%v); move it away first", dir, "the saved state", err)
					}
				case !fi.IsDir():
					p.ignored = append(p.ignored, dir)
				}
			}
			i := strings.LastIndexByte(dir, '/')
			if i < 0 {
				break
			}
			dir = dir[:i]
		}
	}
	return p, nil
}

// unlisted appends to out the files under dir (from the root) that are
// not among listed: the ones the snapshot does not hold.
func (s *State) unlisted(dir string, listed map[string]bool, out *[]string) error {
	return filepath.WalkDir(filepath.Join(s.Repo.Root, filepath.FromSlash(dir)), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(s.Repo.Root, path)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !listed[rel] {
			*out = append(*out, rel)
		}
		return nil
	})
}

// Prune deletes backups older than age and returns their refs.
func (s *State) Prune(ctx context.Context, age time.Duration, dryRun bool) ([]string, error) {
	list, _, err := s.backupRefs(ctx)
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-age)
	var gone []string
	for _, b := range list {
		if !b.Time.Before(cutoff) {
			continue
		}
		if !dryRun {
			if _, err := s.Repo.Run(ctx, "update-ref", "-d", b.Ref, b.Commit); err != nil {
				return gone, fmt.Errorf("prune %s: %w", b.Ref, err)
			}
		}
		gone = append(gone, b.Ref)
	}
	out, err := s.Repo.Run(ctx, "for-each-ref", "--format=%(refname) %(objectname) %(committerdate:unix)", SubmoduleBackupPrefix)
	if err != nil {
		return gone, fmt.Errorf("list submodule backups: %w", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		secs, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || !time.Unix(secs, 0).Before(cutoff) {
			continue
		}
		if !dryRun {
			if _, err := s.Repo.Run(ctx, "update-ref", "-d", f[0], f[1]); err != nil {
				return gone, fmt.Errorf("prune %s: %w", f[0], err)
			}
		}
		gone = append(gone, f[0])
	}
	return gone, nil
}

// maxCountWalk bounds the first-parent chain countCommits walks from a
// backup's head to its checkpoint.
const maxCountWalk = 1000

// countCommits sets the commits each backup's head has beyond its
// checkpoint (checkpoints[i], "" when there is nothing to count), for the
// backups made before a rollback recorded that count: one cat-file walks
// every head's first-parent chain down to its checkpoint, a round per
// step, reading each distinct pair once. A chain that meets a merge, or no
// checkpoint within maxCountWalk commits, is counted by a rev-list of its
// own - only ever for such older backups.
func (s *State) countCommits(ctx context.Context, list []BackupInfo, checkpoints []string) {
	type walk struct {
		cp, head, at string
		n            int
		of           []int // the backups it counts for
	}
	walks := map[string]*walk{}
	var open, apart []*walk
	for i, cp := range checkpoints {
		if cp == "" || list[i].Head == "" {
			continue
		}
		key := cp + ".." + list[i].Head
		if w := walks[key]; w != nil {
			w.of = append(w.of, i)
			continue
		}
		w := &walk{cp: cp, head: list[i].Head, at: list[i].Head, of: []int{i}}
		walks[key] = w
		open = append(open, w)
	}
	done := func(w *walk) {
		for _, i := range w.of {
			list[i].Commits = w.n
		}
	}
	if len(open) > 0 {
		cat := s.Repo.Cat(ctx)
		defer cat.Close()
		for step := 0; len(open) > 0; step++ {
			if step > maxCountWalk {
				apart = append(apart, open...)
				break
			}
			names := make([]string, len(open))
			for i, w := range open {
				names[i] = w.at
			}
			objs, err := cat.Read(names...)
			if err != nil {
				apart = append(apart, open...)
				break
			}
			next := open[:0]
			for i, w := range open {
				o := objs[i]
				switch parents := parentsOf(o.Data); {
				case o.ID == w.cp:
					done(w)
				case o.Type != "commit" || len(parents) != 1:
					apart = append(apart, w)
				default:
					w.at, w.n = parents[0], w.n+1
					next = append(next, w)
				}
			}
			open = next
		}
	}
	for _, w := range apart {
		if n, err := s.Repo.Line(ctx, "rev-list", "--count", w.cp+".."+w.head); err == nil {
			w.n, _ = strconv.Atoi(n)
			done(w)
		}
	}
}
