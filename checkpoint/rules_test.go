package checkpoint

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// Each rule is judged alone on hand-made facts: no git, no repository.

const (
	shaA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	shaB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	shaC = "cccccccccccccccccccccccccccccccccccccccc"
)

// safeFacts is a rollback every rule allows: one commit of this session's
// since a checkpoint on main.
func safeFacts() *rollbackFacts {
	return &rollbackFacts{
		Checkpoint: &Checkpoint{Head: shaA, Branch: "refs/heads/main", Session: "s1", Time: time.Now()},
		HeadExists: true,
		Now:        &git.Status{Head: shaB, Branch: "refs/heads/main"},
		Ancestor:   true,
		Commits:    []string{shaB},
		JournalOn:  true,
		Journal:    map[string]JournalEntry{shaB: {SHA: shaB, Session: "s1"}},
		Session:    "s1",
		Recorded:   shaA,
		RecordRef:  "refs/wiggum/checkpoints/main",
	}
}

func TestRulesAllowASafeRollback(t *testing.T) {
	for _, r := range rollbackRules {
		if why := r.check(safeFacts()); why != "" {
			t.Errorf("rule %q objects to a safe rollback: %s", r.name, why)
		}
	}
	if err := judge(safeFacts()); err != nil {
		t.Fatal(err)
	}
}

func TestEachRuleAlone(t *testing.T) {
	cases := []struct {
		rule   func(*rollbackFacts) string
		break_ func(f *rollbackFacts)
		says   string
	}{
		{noCheckpoint, func(f *rollbackFacts) { f.Checkpoint, f.Recorded = nil, "" }, "no checkpoint recorded"},
		{noCheckpoint, func(f *rollbackFacts) { f.Checkpoint = nil }, "checkpoint.json was deleted after the checkpoint was taken"},
		{operationInProgress, func(f *rollbackFacts) { f.InProgress = "rebase" }, "a rebase is in progress"},
		{checkpointGone, func(f *rollbackFacts) { f.HeadExists = false }, "no longer exists"},
		{branchChanged, func(f *rollbackFacts) { f.Now.Branch = "refs/heads/feature" }, "was main, now feature"},
		{branchChanged, func(f *rollbackFacts) { f.Now.Branch = "" }, "now detached HEAD"},
		{notAncestor, func(f *rollbackFacts) { f.Ancestor = false }, "no longer an ancestor"},
		{foreignCommit, func(f *rollbackFacts) { delete(f.Journal, shaB) }, "not in the commit journal"},
		{foreignCommit, func(f *rollbackFacts) { f.Journal[shaB] = JournalEntry{SHA: shaB, Session: "s2"} }, "another wiggum session"},
		{foreignCommit, func(f *rollbackFacts) { f.Journal[shaB] = JournalEntry{SHA: shaB} }, "outside any wiggum session"},
		{recordMismatch, func(f *rollbackFacts) { f.Recorded = "" }, "refs/wiggum/checkpoints/main) is missing"},
		{recordMismatch, func(f *rollbackFacts) { f.Checkpoint.Head = shaC }, "does not match what wiggum recorded"},
		{recordMismatch, func(f *rollbackFacts) { f.Checkpoint.Snapshot, f.SnapshotParent = shaC, shaA }, "is at aaaaaaaaaaaa, the file names cccccccccccc"},
		{recordMismatch, func(f *rollbackFacts) { f.Checkpoint.Snapshot, f.Recorded, f.SnapshotParent = shaC, shaC, shaB }, "was taken on bbbbbbbbbbbb, not on aaaaaaaaaaaa"},
		{foreignCommit, func(f *rollbackFacts) { f.Session = ""; f.Journal[shaB] = JournalEntry{SHA: shaB} }, "this rollback runs outside any wiggum session"},
		{foreignCommit, func(f *rollbackFacts) { f.Session = "" }, "outside any wiggum session, so commit bbbbbbbbbbbb (made by another wiggum session (s1"},
		{snapshotGone, func(f *rollbackFacts) { f.Checkpoint.Snapshot, f.Recorded, f.SnapshotParent = shaC, shaC, shaA }, "snapshot " + shaC[:12] + " is gone"},
	}
	for _, c := range cases {
		f := safeFacts()
		c.break_(f)
		why := c.rule(f)
		if !strings.Contains(why, c.says) {
			t.Errorf("rule said %q, want it to say %q", why, c.says)
		}
		var re *RefusedError
		if err := judge(f); !errors.As(err, &re) || re.Reason != why {
			t.Errorf("judge: %v, want the rule's refusal %q", err, why)
		}
	}
}

func TestForeignCommitRuleNeedsTheJournal(t *testing.T) {
	f := safeFacts()
	f.JournalOn, f.Journal = false, nil
	if why := foreignCommit(f); why != "" {
		t.Fatalf("with the journal off the ancestry check is the rule; got %q", why)
	}
}

func TestDiscardForeignPassesOnlyTheJournalRule(t *testing.T) {
	for _, breakIt := range []func(f *rollbackFacts){
		func(f *rollbackFacts) { delete(f.Journal, shaB) },
		func(f *rollbackFacts) { f.Journal[shaB] = JournalEntry{SHA: shaB, Session: "s2"} },
		func(f *rollbackFacts) { f.Session = "" },
	} {
		f := safeFacts()
		breakIt(f)
		if foreignCommit(f) == "" {
			t.Fatal("the broken facts should be refused without --discard-foreign")
		}
		f.DiscardForeign = true
		if err := judge(f); err != nil {
			t.Fatalf("--discard-foreign: %v", err)
		}
	}
	// It is no licence to rewrite history or trust an edited record.
	f := safeFacts()
	f.DiscardForeign, f.Ancestor = true, false
	if judge(f) == nil {
		t.Fatal("--discard-foreign let a non-ancestor checkpoint through")
	}
	f = safeFacts()
	f.DiscardForeign, f.Recorded = true, shaC
	if judge(f) == nil {
		t.Fatal("--discard-foreign let a mismatched record through")
	}
}

func TestRulesObjectInOrder(t *testing.T) {
	// Everything is wrong at once: the earliest rule is the reason given.
	f := safeFacts()
	f.InProgress = "merge"
	f.Ancestor = false
	delete(f.Journal, shaB)
	var re *RefusedError
	if err := judge(f); !errors.As(err, &re) || !strings.Contains(re.Reason, "merge is in progress") {
		t.Fatalf("got %v, want the in-progress refusal first", err)
	}
	// Facts the check phase could not read (no checkpoint, so no status)
	// never reach the rules that need them.
	if err := judge(&rollbackFacts{}); !errors.As(err, &re) || !strings.Contains(re.Reason, "no checkpoint") {
		t.Fatalf("got %v", err)
	}
	if err := judge(&rollbackFacts{Checkpoint: &Checkpoint{Head: shaA}}); !errors.As(err, &re) || !strings.Contains(re.Reason, "no longer exists") {
		t.Fatalf("got %v", err)
	}
}
