package checkpoint

import (
	"fmt"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// A rollback is two phases: read the facts below (git reads only), judge
// them with the rules in order, and act only when every rule passes. The
// first rule that objects is the refusal; nothing has been changed then.

// rollbackFacts is what the refusal rules judge.
type rollbackFacts struct {
	Checkpoint *Checkpoint // nil when none is recorded
	InProgress string      // a half-done merge, rebase, ... ("" when none)
	HeadExists bool        // the checkpoint commit is still in the object store
	Now        *git.Status // HEAD, branch and uncommitted changes now
	Ancestor   bool        // the checkpoint commit is an ancestor of HEAD
	Commits    []string    // commits a rollback would discard, newest first
	JournalOn  bool        // every commit is journaled by wiggum's post-commit hook
	Journal    map[string]JournalEntry
	// Elsewhere: commits to discard that another ref keeps (a merged
	// branch's), read only when some commit is not journaled.
	Elsewhere map[string]bool
	Session   string // the session rolling back; "" outside any session
	// DiscardForeign lets the rollback discard (after saving) commits it
	// cannot prove are the session's own.
	DiscardForeign bool
	// Recorded is what wiggum's own checkpoint ref points at (the snapshot,
	// or the checkpoint commit when the tree was clean); "" when missing.
	Recorded string
	// SnapshotParent is the first parent of the checkpoint's snapshot.
	SnapshotParent string
	RecordRef      string // the ref Recorded was read from
	// The trees of HEAD and the checkpoint commit, read with the rest for
	// the acting phase.
	HeadTree, CheckpointTree string
	// SnapshotTree is the tree of the checkpoint's snapshot ("" when the
	// checkpoint has none, or it is gone).
	SnapshotTree string
	// Trees are HEAD's trees along the changed paths, read with the rest
	// for the snapshot of the working tree (not judged).
	Trees map[string]git.Object
}

// rule is one reason a rollback can be unsafe: check returns why, or "".
type rule struct {
	name  string
	check func(f *rollbackFacts) string
}

// rollbackRules are checked in order; the first objection wins.
var rollbackRules = []rule{
	{"checkpoint recorded", noCheckpoint},
	{"no operation in progress", operationInProgress},
	{"checkpoint commit exists", checkpointGone},
	{"checkpoint record matches wiggum's own ref", recordMismatch},
	{"same branch", branchChanged},
	{"checkpoint is an ancestor of HEAD", notAncestor},
	{"every discarded commit is this session's", foreignCommit},
	{"checkpoint snapshot exists", snapshotGone},
}

// judge returns the first rule's objection as a *RefusedError, or nil.
func judge(f *rollbackFacts) error {
	for _, r := range rollbackRules {
		if why := r.check(f); why != "" {
			return &RefusedError{Reason: why}
		}
	}
	return nil
}

func noCheckpoint(f *rollbackFacts) string {
	switch {
	case f.Checkpoint == nil && f.Recorded != "":
		// A new checkpoint would move the rollback point past the work
		// done since the one whose record is gone.
		return fmt.Sprintf("wiggum's checkpoint record %s/%s was deleted after the checkpoint was taken (wiggum's ref %s still names it); do not take a new checkpoint over the work since: a wiggum run puts the record back when the attempt ends", layout.RuntimeDir, layout.CheckpointFile, f.RecordRef)
	case f.Checkpoint == nil:
		return "no checkpoint recorded (run 'wiggum checkpoint' first)"
	}
	return ""
}

func operationInProgress(f *rollbackFacts) string {
	if f.InProgress != "" {
		return fmt.Sprintf("a %s is in progress; finish or abort it first", f.InProgress)
	}
	return ""
}

func checkpointGone(f *rollbackFacts) string {
	if !f.HeadExists {
		return fmt.Sprintf("the checkpoint commit %s no longer exists", short(f.Checkpoint.Head))
	}
	return ""
}

func branchChanged(f *rollbackFacts) string {
	if f.Now.Branch != f.Checkpoint.Branch {
		return fmt.Sprintf("the branch changed since the checkpoint (was %s, now %s)", BranchName(f.Checkpoint.Branch), BranchName(f.Now.Branch))
	}
	return ""
}

func notAncestor(f *rollbackFacts) string {
	if !f.Ancestor {
		return fmt.Sprintf("the checkpoint %s is no longer an ancestor of HEAD %s: history was rewritten (reset, rebase or amend) since it was taken, and rolling back would lose commits it cannot account for", short(f.Checkpoint.Head), short(f.Now.Head))
	}
	return ""
}

// recordMismatch: checkpoint.json is a plain file; a rollback trusts it
// only as far as it agrees with the ref wiggum moved when it wrote it. An
// edited head (say, to an older commit) would otherwise discard commits
// made before the real checkpoint.
func recordMismatch(f *rollbackFacts) string {
	cp := f.Checkpoint
	want := cp.recordedValue()
	switch {
	case f.Recorded == "":
		return fmt.Sprintf("wiggum's record of the checkpoint (%s) is missing, so %s cannot be verified; take a new checkpoint", f.RecordRef, layout.CheckpointFile)
	case f.Recorded != want:
		return fmt.Sprintf("%s does not match what wiggum recorded when it took the checkpoint (%s is at %s, the file names %s); it was changed by hand or by another tool - take a new checkpoint", layout.CheckpointFile, f.RecordRef, short(f.Recorded), short(want))
	case cp.Snapshot != "" && f.SnapshotParent != cp.Head:
		return fmt.Sprintf("%s does not match what wiggum recorded: its snapshot %s was taken on %s, not on %s; take a new checkpoint", layout.CheckpointFile, short(cp.Snapshot), short(f.SnapshotParent), short(cp.Head))
	}
	return ""
}

// foreignCommit: with the journal on, every commit to discard must be
// journaled as made by the session rolling back. Outside a session no
// commit is provably the rollback's own. --discard-foreign goes ahead (the
// backup still saves them).
func foreignCommit(f *rollbackFacts) string {
	if !f.JournalOn || f.DiscardForeign {
		return ""
	}
	const howto = "; nothing is discarded that cannot be proven this session's own (pass --discard-foreign to discard it anyway - it is saved in a backup first)"
	for _, c := range f.Commits {
		e, ok := f.Journal[c]
		switch {
		case !ok && f.Elsewhere[c]:
			// A merged branch's: still on that branch after the rollback.
		case !ok:
			return fmt.Sprintf("commit %s is not in the commit journal (made while wiggum's post-commit hook was not running), so it may not be this session's to discard%s", short(c), howto)
		case f.Session == "":
			return fmt.Sprintf("this rollback runs outside any wiggum session, so commit %s (made %s) cannot be proven its own%s", short(c), describeSession(e.Session), howto)
		case e.Session != f.Session:
			return fmt.Sprintf("commit %s was made %s, not by this session; rolling back would destroy it%s", short(c), describeSession(e.Session), howto)
		}
	}
	return ""
}

func snapshotGone(f *rollbackFacts) string {
	if f.Checkpoint.Snapshot != "" && f.SnapshotTree == "" {
		return fmt.Sprintf("the checkpoint's snapshot %s is gone", short(f.Checkpoint.Snapshot))
	}
	return ""
}
