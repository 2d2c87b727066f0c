package checkpoint

import (
	"fmt"

	"github.com/wiggum-dev/wiggum/internal/git"
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
	Session    string // the session rolling back
	// SnapshotTree is the tree of the checkpoint's snapshot ("" when the
	// checkpoint has none, or it is gone).
	SnapshotTree string
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
	if f.Checkpoint == nil {
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

// foreignCommit: with the journal on, every commit to discard must be
// journaled as made by the session rolling back.
func foreignCommit(f *rollbackFacts) string {
	if !f.JournalOn {
		return ""
	}
	for _, c := range f.Commits {
		e, ok := f.Journal[c]
		switch {
		case !ok:
			return fmt.Sprintf("commit %s is not in the commit journal (made while wiggum's post-commit hook was not running), so it may not be this session's to discard", short(c))
		case e.Session != f.Session:
			return fmt.Sprintf("commit %s was made %s, not by this session; rolling back would destroy it", short(c), describeSession(e.Session))
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
