package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// RefusedError is a rollback that was not safe. Nothing was changed.
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string {
	return "rollback refused: " + e.Reason + "; nothing was changed"
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
}

// RollbackResult says what a rollback did (or, dry, would do).
type RollbackResult struct {
	Checkpoint  *Checkpoint `json:"checkpoint"`
	BackupRef   string      `json:"backup_ref,omitempty"`
	Commits     []string    `json:"commits"`       // discarded commits, newest first
	Files       []string    `json:"files"`         // paths whose content returns to the checkpoint
	Removed     []string    `json:"removed"`       // untracked files removed
	NothingToDo bool        `json:"nothing_to_do"` // already at the checkpoint
	DryRun      bool        `json:"dry_run"`
}

// Rollback returns HEAD and the working tree to the checkpoint when that is
// provably safe, after saving everything it discards under
// refs/wiggum/backup/. Otherwise it returns a *RefusedError and changes
// nothing. The caller must hold the agent lock or act inside its session.
func (s *State) Rollback(ctx context.Context, opts RollbackOptions) (*RollbackResult, error) {
	f, err := s.rollbackFacts(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("rollback: %w", err)
	}
	if err := judge(f); err != nil {
		return nil, err
	}
	cp, now := f.Checkpoint, f.Now
	head, dirty := now.Head, now.Dirty()
	res := &RollbackResult{Checkpoint: cp, DryRun: opts.DryRun, Commits: f.Commits}

	// What the working tree holds now, and what the checkpoint held.
	nowTree, err := s.treeOf(ctx, head)
	if err != nil {
		return nil, fmt.Errorf("rollback: %w", err)
	}
	var current string // snapshot commit of the working tree, when dirty
	if dirty {
		current, err = s.snapshot(ctx, head, backupMessage(opts.Reason, head, cp))
		if err != nil {
			return nil, fmt.Errorf("rollback: snapshot the working tree: %w", err)
		}
		if nowTree, err = s.treeOf(ctx, current); err != nil {
			return nil, fmt.Errorf("rollback: %w", err)
		}
	}
	wantTree := f.SnapshotTree
	if wantTree == "" {
		if wantTree, err = s.treeOf(ctx, cp.Head); err != nil {
			return nil, fmt.Errorf("rollback: %w", err)
		}
	}
	if len(res.Commits) == 0 && nowTree == wantTree {
		res.NothingToDo = true
		return res, nil
	}
	out, err := s.Repo.Run(ctx, "diff", "--name-only", "-z", "--no-renames", wantTree, nowTree)
	if err != nil {
		return nil, fmt.Errorf("rollback: diff: %w", err)
	}
	res.Files = git.SplitZ(out)
	res.Removed = newUntracked(cp, now.Untracked)
	if opts.DryRun {
		return res, nil
	}

	// Save first: nothing is discarded that is not in a backup ref.
	if current == "" {
		current, err = s.backupCommit(ctx, head, backupMessage(opts.Reason, head, cp))
		if err != nil {
			return nil, fmt.Errorf("rollback: save backup: %w", err)
		}
	}
	if res.BackupRef, err = s.createBackupRef(ctx, current); err != nil {
		return nil, fmt.Errorf("rollback: save backup: %w", err)
	}

	// Move the branch only if it still is where we checked it: a commit
	// that lands meanwhile makes this fail instead of being lost.
	ref := cp.Branch
	args := []string{"update-ref", "-m", "wiggum rollback to " + short(cp.Head)}
	if ref == "" {
		args = append(args, "--no-deref", "HEAD")
	} else {
		args = append(args, ref)
	}
	if _, err := s.Repo.Run(ctx, append(args, cp.Head, head)...); err != nil {
		return nil, refuse("HEAD moved while rolling back (%v); your state is saved in %s", err, res.BackupRef)
	}
	if _, err := s.Repo.Run(ctx, "reset", "--hard", "--quiet"); err != nil {
		return nil, fmt.Errorf("rollback: reset to %s (everything is saved in %s): %w", short(cp.Head), res.BackupRef, err)
	}
	if cp.Snapshot != "" {
		if err := s.checkoutTree(ctx, cp.Snapshot); err != nil {
			return nil, fmt.Errorf("rollback: restore uncommitted files of the checkpoint (everything is saved in %s): %w", res.BackupRef, err)
		}
	}
	if err := s.removeUntracked(ctx, cp); err != nil {
		return nil, fmt.Errorf("rollback: remove new files (everything is saved in %s): %w", res.BackupRef, err)
	}
	return res, nil
}

// rollbackFacts reads what the rules judge, changing nothing. It stops
// early when a fact makes the rest meaningless (no checkpoint, its commit
// gone): the rule for that fact comes first.
func (s *State) rollbackFacts(ctx context.Context, opts RollbackOptions) (*rollbackFacts, error) {
	f := &rollbackFacts{Session: opts.Session, DiscardForeign: opts.DiscardForeign, InProgress: s.Repo.InProgress(), RecordRef: s.snapshotRef()}
	cp, err := s.currentCheckpoint(ctx)
	if errors.Is(err, ErrNoCheckpoint) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	f.Checkpoint = cp
	objs := []string{cp.Head + "^{commit}", f.RecordRef}
	if cp.Snapshot != "" {
		objs = append(objs, cp.Snapshot+"^{tree}", cp.Snapshot+"^1")
	}
	found, err := s.Repo.Objects(ctx, objs...)
	if err != nil {
		return nil, err
	}
	f.HeadExists, f.Recorded = found[0] != "", found[1]
	if cp.Snapshot != "" {
		f.SnapshotTree, f.SnapshotParent = found[2], found[3]
	}
	if !f.HeadExists {
		return f, nil
	}
	if f.Now, err = s.Repo.Status(ctx); err != nil {
		return nil, fmt.Errorf("read HEAD and status: %w", err)
	}
	f.Ancestor = true
	if f.Now.Head != cp.Head {
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
	}
	return f, nil
}

func backupMessage(reason, head string, cp *Checkpoint) string {
	if reason == "" {
		reason = "rollback"
	}
	return fmt.Sprintf("wiggum backup: %s\n\nhead: %s\ncheckpoint: %s\nbranch: %s\n", reason, head, cp.Head, BranchName(cp.Branch))
}

// checkoutTree writes every file of commit's tree into the working tree
// through a temporary index, leaving the real index alone.
func (s *State) checkoutTree(ctx context.Context, commit string) error {
	tmp := filepath.Join(s.Repo.GitDir, fmt.Sprintf("wiggum-index-%d", os.Getpid()))
	defer os.Remove(tmp)
	env := []string{"GIT_INDEX_FILE=" + tmp}
	if _, err := s.Repo.RunEnv(ctx, env, nil, "read-tree", commit+"^{tree}"); err != nil {
		return err
	}
	_, err := s.Repo.RunEnv(ctx, env, nil, "checkout-index", "-a", "-f")
	return err
}

// newUntracked lists the files of now (untracked ones) that did not exist
// at checkpoint time.
func newUntracked(cp *Checkpoint, now []string) []string {
	keep := make(map[string]bool, len(cp.Untracked))
	for _, p := range cp.Untracked {
		keep[p] = true
	}
	var out []string
	for _, p := range now {
		if !keep[p] {
			out = append(out, p)
		}
	}
	return out
}

// removeUntracked deletes untracked files that did not exist at checkpoint
// time, and directories that become empty. Missing is fine: a file that is
// already gone is the wanted outcome.
func (s *State) removeUntracked(ctx context.Context, cp *Checkpoint) error {
	now, err := s.Repo.Untracked(ctx)
	if err != nil {
		return err
	}
	for _, rel := range newUntracked(cp, now) {
		path := filepath.Join(s.Repo.Root, filepath.FromSlash(rel))
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for dir := filepath.Dir(path); dir != s.Repo.Root && strings.HasPrefix(dir, s.Repo.Root); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
		}
	}
	return nil
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
