package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
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
		return "", refuse("HEAD moved while rolling back (%s)", strings.TrimSpace(ge.Stderr))
	}
	return "", errors.New("rollback: save backup: could not find a free backup ref name")
}

// Backup saves HEAD plus every uncommitted (tracked and untracked, not
// ignored) file as one commit under refs/wiggum/backup/, leaving the index
// and working tree untouched. It returns the ref.
func (s *State) Backup(ctx context.Context, reason string) (string, error) {
	now, err := s.Repo.Status(ctx)
	if err != nil {
		return "", fmt.Errorf("backup: read HEAD and status: %w", err)
	}
	return s.backupOf(ctx, now, reason)
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

// Backups lists saved states, newest first.
func (s *State) Backups(ctx context.Context) ([]BackupInfo, error) {
	out, err := s.Repo.Run(ctx, "for-each-ref", "--sort=-refname",
		"--format=%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents:subject)%00%(contents:body)%01", BackupPrefix)
	if err != nil {
		return nil, fmt.Errorf("list backups: %w", err)
	}
	var list []BackupInfo
	for _, rec := range strings.Split(out, "\x01") {
		f := strings.Split(strings.TrimLeft(rec, "\n"), "\x00")
		if len(f) < 5 {
			continue
		}
		secs, _ := strconv.ParseInt(f[2], 10, 64)
		b := BackupInfo{Ref: f[0], Commit: f[1], Time: time.Unix(secs, 0).UTC(),
			Reason: strings.TrimPrefix(f[3], "wiggum backup: ")}
		for _, line := range strings.Split(f[4], "\n") {
			if v, ok := strings.CutPrefix(line, "head: "); ok {
				b.Head = v
			}
			if v, ok := strings.CutPrefix(line, "checkpoint: "); ok && b.Head != "" {
				if n, err := s.Repo.Line(ctx, "rev-list", "--count", v+".."+b.Head); err == nil {
					b.Commits, _ = strconv.Atoi(n)
				}
			}
		}
		if stat, err := s.Repo.Run(ctx, "diff", "--numstat", b.Commit+"^1", b.Commit); err == nil {
			for _, l := range strings.Split(strings.TrimSpace(stat), "\n") {
				p := strings.Fields(l)
				if len(p) < 3 {
					continue
				}
				b.Files++
				a, _ := strconv.Atoi(p[0])
				d, _ := strconv.Atoi(p[1])
				b.Lines += a + d
			}
		}
		list = append(list, b)
	}
	return list, nil
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
	list, err := s.Backups(ctx)
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
// is saved first. It refuses when HEAD is not an ancestor of the saved HEAD,
// because moving there would drop commits. The caller must hold the lock.
func (s *State) Restore(ctx context.Context, name string) (*RestoreResult, error) {
	ref, err := s.resolveBackup(ctx, name)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	if op := s.Repo.InProgress(); op != "" {
		return nil, refuse("a %s is in progress; finish or abort it first", op)
	}
	saved, err := s.Repo.Line(ctx, "rev-parse", "--verify", ref+"^1")
	if err != nil {
		return nil, fmt.Errorf("recover: %s has no saved HEAD: %w", ref, err)
	}
	head, err := s.Repo.Head(ctx)
	if err != nil {
		return nil, fmt.Errorf("recover: read HEAD: %w", err)
	}
	anc, err := s.Repo.OK(ctx, "merge-base", "--is-ancestor", head, saved)
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	if !anc {
		return nil, refuse("HEAD %s is not an ancestor of the saved HEAD %s, so restoring would drop commits; to look at it instead: git switch -c rescue %s^1 && git checkout %s -- .", short(head), short(saved), ref, ref)
	}
	res := &RestoreResult{Ref: ref, Head: saved}
	if res.BackupRef, err = s.Backup(ctx, "before recover "+strings.TrimPrefix(ref, BackupPrefix)); err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
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
	if _, err := s.Repo.Run(ctx, "reset", "--hard", "--quiet"); err != nil {
		return nil, fmt.Errorf("recover: reset (your previous state is in %s): %w", res.BackupRef, err)
	}
	if err := s.checkoutTree(ctx, ref); err != nil {
		return nil, fmt.Errorf("recover: write files (your previous state is in %s): %w", res.BackupRef, err)
	}
	// Files the saved state had deleted without committing stay deleted.
	out, err := s.Repo.Run(ctx, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=D", saved, ref)
	if err != nil {
		return nil, err
	}
	for _, rel := range git.SplitZ(out) {
		if err := os.Remove(filepath.Join(s.Repo.Root, filepath.FromSlash(rel))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return res, nil
}

// Prune deletes backups older than age and returns their refs.
func (s *State) Prune(ctx context.Context, age time.Duration, dryRun bool) ([]string, error) {
	list, err := s.Backups(ctx)
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
