package loop

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// ledger is what the run knows about its stories and its spending, kept in
// the run journal so that a resumed run carries on with the same counts:
// failed attempts, cost and tokens per story and for the run, the budgets.
// Safe for concurrent workers.
type ledger struct {
	mu sync.Mutex
	j  *journal
	// lastIter is the highest iteration the journal records: a resumed
	// run numbers its iterations on from it.
	lastIter int
	stories  map[string]*storyBook
	spent    float64
	in, out  int
	// budgets in USD; 0 is none.
	maxCost, maxStoryCost float64
	// first is when the run first started: failures recorded since then
	// are this run's, and carry over into a resumed run's prompts.
	first time.Time
	// open: attempts started and never ended (a killed run's), by story.
	open map[string]journalRec
	// merged: the stories whose landing a worker recorded, with the
	// target's commit.
	merged map[string]string
	// finished: the stories whose last record is a done attempt in a
	// worktree, not landed since - where that attempt left its branch.
	finished map[string]finishedAt
	// passed: the attempts (in the main tree or a worktree) whose agent
	// finished and whose checks passed, and whose end is not recorded - a
	// kill came between the checks and the commit's record.
	passed map[string]journalRec
	// reported: the attempts whose agent reported what it cost (its
	// stream's result, or its exit 0 with a cost) and whose end is not
	// recorded - a kill came while the agent was still running, while its
	// checks ran, or later. The latest report counts.
	reported map[string]journalRec
	// failing: the attempts in the main tree that failed and whose end is
	// not recorded - a kill came during or after their rollback.
	failing map[string]journalRec
	// held: stories this run leaves alone, and why (a branch of theirs an
	// earlier run kept still conflicts: landKept).
	held map[string]string
	// unmerged: per story, the kept branch whose conflict gave it another
	// attempt (conflictRetry), so that a resume finding it conflicting
	// again does not count it twice.
	unmerged map[string]string
	// keptBranch: per story, the finished branch that could not land
	// and is kept for the person (keptbranch records), until the story
	// starts again or lands. Only ReadRunState's count reads it: the
	// resume decides nothing by it.
	keptBranch map[string]string
	// keep: the paths the last run left out of every commit.
	keep []string
}

// finishedAt is where a worker's done attempt left its story: its branch,
// at the commit the attempt ended at.
type finishedAt struct {
	Branch, Head string
	// Unlanded: why the run that finished it could not land it (a --remote
	// run whose server was gone or refused: keepToLand); "" when a kill
	// kept it from landing.
	Unlanded string
}

// storyBook is one story's account.
type storyBook struct {
	failed      int // attempts that count against --retries
	interrupted int // attempts cut short by a kill, a signal or a usage limit
	cost        float64
	in, out     int
	done        bool
}

func newLedger() *ledger {
	return &ledger{stories: map[string]*storyBook{}, open: map[string]journalRec{}, merged: map[string]string{}, finished: map[string]finishedAt{}, passed: map[string]journalRec{}, reported: map[string]journalRec{}, failing: map[string]journalRec{}, held: map[string]string{}}
}

func (l *ledger) book(id string) *storyBook {
	b := l.stories[id]
	if b == nil {
		b = &storyBook{}
		l.stories[id] = b
	}
	return b
}

// replay applies one journal record.
func (l *ledger) replay(r journalRec) {
	l.lastIter = max(l.lastIter, r.Iter)
	switch r.T {
	case "run":
		if l.first.IsZero() {
			l.first = r.Time
		}
		l.maxCost, l.maxStoryCost = r.MaxCost, r.MaxStoryCost
	case "start":
		delete(l.keptBranch, r.Story)
		l.open[r.Story] = r
		delete(l.finished, r.Story)
		delete(l.passed, r.Story)
		delete(l.reported, r.Story)
		delete(l.failing, r.Story)
	case "pass":
		if _, ok := l.open[r.Story]; ok {
			l.passed[r.Story] = r
		}
	case "usage", "exited": // "exited": the name of an older build's record
		if _, ok := l.open[r.Story]; ok {
			l.reported[r.Story] = r
		}
	case "fail":
		if _, ok := l.open[r.Story]; ok {
			l.failing[r.Story] = r
		}
	case "dirty":
		l.keep = r.Paths
	case "end":
		start := l.open[r.Story]
		delete(l.open, r.Story)
		delete(l.finished, r.Story)
		delete(l.passed, r.Story)
		delete(l.reported, r.Story)
		delete(l.failing, r.Story)
		if r.Outcome == "done" && r.Head != "" && start.Worktree != "" && start.Branch != "" {
			l.finished[r.Story] = finishedAt{Branch: start.Branch, Head: r.Head}
		}
		b := l.book(r.Story)
		b.cost += r.Cost
		b.in += r.In
		b.out += r.Out
		l.spent += r.Cost
		l.in += r.In
		l.out += r.Out
		switch r.Outcome {
		case "done":
			b.done = true
		case "failed":
			b.failed++
		default:
			b.interrupted++
		}
	case "kept":
		if f, ok := l.finished[r.Story]; ok {
			f.Unlanded = r.Note
			l.finished[r.Story] = f
		}
	case "merge":
		delete(l.keptBranch, r.Story)
		l.merged[r.Story] = r.Commit
		delete(l.finished, r.Story)
	case "keptbranch":
		if l.keptBranch == nil {
			l.keptBranch = map[string]string{}
		}
		l.keptBranch[r.Story] = r.Branch
	case "unmerged":
		// Its finished branch conflicted at landing, and the story goes
		// on (--retry-conflicts): a failed attempt, the story not done.
		b := l.book(r.Story)
		b.failed++
		b.done = false
		delete(l.finished, r.Story)
		if l.unmerged == nil {
			l.unmerged = map[string]string{}
		}
		l.unmerged[r.Story] = r.Branch
	case "drop":
		delete(l.keptBranch, r.Story)
		delete(l.stories, r.Story)
		delete(l.open, r.Story)
		delete(l.merged, r.Story)
		delete(l.finished, r.Story)
		delete(l.passed, r.Story)
		delete(l.reported, r.Story)
		delete(l.failing, r.Story)
	}
}

// counted reports whether the conflict of story's kept branch gave it
// another attempt already.
func (l *ledger) counted(story, branch string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unmerged[story] == branch
}

// record appends r to the journal and applies it.
func (l *ledger) record(r journalRec, durable bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	if l.j != nil {
		if err := l.j.add(r, durable); err != nil {
			return err
		}
	}
	l.replay(r)
	return nil
}

// keepJournal puts the run journal back at its path when something
// deleted or replaced it (journal.keep); false without a journal.
func (l *ledger) keepJournal() (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.j == nil {
		return false, nil
	}
	return l.j.keep()
}

// failed returns the failed attempts counted for story.
func (l *ledger) failed(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.stories[id]; b != nil {
		return b.failed
	}
	return 0
}

// runOver says why the run's budget allows no new attempt, or "".
func (l *ledger) runOver() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxCost > 0 && l.spent >= l.maxCost {
		return fmt.Sprintf("the run spent %s, reaching --max-cost %s", usd(l.spent), usd(l.maxCost))
	}
	return ""
}

// storyOver says why story's budget allows no new attempt, or "" (or why
// the run leaves it alone: hold).
func (l *ledger) storyOver(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if why := l.held[id]; why != "" {
		return why
	}
	b := l.stories[id]
	if l.maxStoryCost > 0 && b != nil && b.cost >= l.maxStoryCost {
		return fmt.Sprintf("%s spent %s, reaching --max-story-cost %s", id, usd(b.cost), usd(l.maxStoryCost))
	}
	return ""
}

// spending is the run's total, for messages.
func (l *ledger) spending() (float64, int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spent, l.in, l.out
}

// finishedAt returns where the done attempt at story left its branch, when
// that attempt is the story's last record and no landing followed it.
func (l *ledger) finishedAt(id string) (finishedAt, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.finished[id]
	return f, ok
}

// passedThere returns where the open attempt at story, in a worktree,
// left its branch when its checks passed (its pass record), and that
// record: a kill then cut its commit or its end's record short.
func (l *ledger) passedThere(id string) (finishedAt, journalRec, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.passed[id]
	start := l.open[id]
	if !ok || start.Worktree == "" || start.Branch == "" || p.Head == "" {
		return finishedAt{}, journalRec{}, false
	}
	return finishedAt{Branch: start.Branch, Head: p.Head}, p, true
}

// passedAt returns the pass record of story's open attempt: its agent
// finished and its checks passed, and its end was never recorded.
func (l *ledger) passedAt(id string) (journalRec, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.passed[id]
	return p, ok
}

// crashCost is what story's open attempt, whose end a kill kept from being
// recorded, is known to have cost: what its agent reported when its checks
// passed (its pass record), else its agent's latest report of its cost
// (its usage record); zero when it reported nothing.
func (l *ledger) crashCost(id string) (cost float64, in, out int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.crashCostLocked(id)
}

func (l *ledger) crashCostLocked(id string) (cost float64, in, out int) {
	if p, ok := l.passed[id]; ok {
		return p.Cost, p.In, p.Out
	}
	u := l.reported[id]
	return u.Cost, u.In, u.Out
}

// pendingCost is what the open attempts are known to have cost (crashCost
// of each): spending a killed run's journal holds outside its end records,
// which a resume records as each attempt's end.
func (l *ledger) pendingCost() (cost float64, in, out int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.open {
		c, i, o := l.crashCostLocked(id)
		cost, in, out = cost+c, in+i, out+o
	}
	return cost, in, out
}

// failingAt returns the fail record of story's open attempt: it failed,
// and its end was never recorded.
func (l *ledger) failingAt(id string) (journalRec, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.failing[id]
	return f, ok
}

// keepPaths returns the paths the last run left out of every commit.
func (l *ledger) keepPaths() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.keep...)
}

// openAttempts returns the attempts a killed run left unended, by story id.
func (l *ledger) openAttempts() []journalRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]journalRec, 0, len(l.open))
	for _, r := range l.open {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Story < out[j].Story })
	return out
}

func usd(v float64) string { return fmt.Sprintf("$%.2f", v) }

// spentText is what the agents reported spent: "cost unknown" when none
// reported any (codex, gemini), not "$0.00 spent".
func spentText(v float64) string {
	if v <= 0 {
		return "cost unknown"
	}
	return usd(v) + " spent"
}

// budgetNote describes spending against the budgets, for stop messages.
func (l *ledger) budgetNote() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	parts := []string{"spent " + usd(l.spent)}
	if l.maxCost > 0 {
		parts = append(parts, fmt.Sprintf("%s of --max-cost %s left", usd(max(0, l.maxCost-l.spent)), usd(l.maxCost)))
	}
	return strings.Join(parts, ", ")
}

// hold keeps the run from giving story to an agent, saying why.
func (l *ledger) hold(id, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held[id] = why
}
