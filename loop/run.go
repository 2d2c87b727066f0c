package loop

import (
	"context"
	"errors"
	"fmt"
	"github.com/google/renameio/v2"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/install"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/gitlock"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/proc"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/internal/signals"
	"github.com/wiggum-dev/wiggum/internal/statefile"
	"github.com/wiggum-dev/wiggum/worktree"
)

// run is what the serial and the parallel driver share: the main tree and
// its agent lock, the plan, the journal-backed ledger, the records, and the
// usage-limit gate every worker waits at.
type run struct {
	// gitAtStart is the repository's git rails as the run found them,
	// before any agent ran (read at the first attempt's start): how git
	// makes wiggum's commits is put back to it after every attempt.
	gitAtStart     install.GitRails
	gitAtStartOnce sync.Once
	st             *checkpoint.State // the main tree
	opts           Options
	lock           *layout.Lock
	session        string
	disp           *display
	commit         *committer // the main tree's
	branch         string     // the branch checked out in the main tree, from preflight
	planRel        string
	// planKept: the resume's rollback kept stories a person queued in
	// the plan after the crash (recoverMain); the plan is not dirty work.
	planKept bool
	// msg: the commit message template of the run's stories.
	msg commitTemplate
	// planIgnored: git ignores the plan, so ticks are never committed.
	planIgnored bool
	started     time.Time
	logPath     string
	led         *ledger
	gate        *gate
	resumed     bool
	// iterBase is the last iteration of the run resumed (0 for a new
	// one): this run's iterations are numbered on from it.
	iterBase int
	// autoCap: the iteration cap is the run's own (stories x attempts),
	// raised as the plan grows; false when --max-iterations set it.
	autoCap bool
	// appliedStash: stash entries workers put back in their trees, to
	// drop when no worker runs (dropAppliedStash).
	stashMu      sync.Mutex
	appliedStash []string
	// killed: the journal records a run that did not end by itself (this
	// plan's or, with --fresh, another's), so its crash may have left ticks
	// or an index to repair.
	killed bool
	sum    Summary
	sumMu  sync.Mutex
	// added: per story, the stories its worker's agent added to the plan
	// in its worktree, which the story's landing adds to the run's plan.
	addedMu sync.Mutex
	added   map[string]*addedStories
	// strays: the linked worktrees, not wiggum's, that an attempt named
	// as made by a worker's agent, its own or another's (worktreesMade),
	// under addedMu.
	strays map[string]bool
	// reopen, in a parallel run, tells the workers a landing gave them
	// more to do (landings.reopen).
	reopen func()
	// retried: per story, the kept branches of its earlier attempts that
	// conflicted and gave it another (conflictRetry), for its landing to
	// settle (settleRetried); under addedMu.
	retried map[string][]string
	last    string // the last attempt's outcome, for run.json
	// busy: in a parallel run, the attempt each worker runs now, which
	// the main tree's run record lists (writeMainRun); under busyMu, which
	// also orders the writes of that record.
	busyMu sync.Mutex
	busy   map[int]session.Worker
	trace  spans
	// noDispatch: a usage limit stops the run (no --wait-on-limit); no
	// worker starts another attempt.
	noDispatch atomic.Bool
	// atStart: the stories the plan had when the run began, each with
	// whether it was done.
	atStart map[string]bool
	// lookAt: what the run's end names for the person to look at - a
	// story's commit that deleted or switched off tests, stories an agent
	// took out of the plan - said as it happened, but long scrolled away
	// by the end of an unattended run; under lookMu.
	lookAt []string
	lookMu sync.Mutex
	// toLand: in a --remote run, the stories whose attempt finished and
	// whose landing the server did not take (unreachable, hung, refused),
	// each with where its work is kept: the run stays open for the next
	// to land them (keepToLand); under lookMu.
	toLand []string
	// outages counts the model-service outages in a row, for the back-off
	// (outageWait); any attempt the service answered resets it.
	outages atomic.Int32
	// pool keeps the agents' supervisors between attempts: starting
	// wiggum's binary anew for each attempt cost more than the agent's
	// own start.
	pool *proc.Pool
	// unlanded: stories the killed run finished and never landed, for
	// the merge coordinator (resume.go).
	unlanded []unlanded
	// abandoned: the main tree's attempt a killed run of another plan
	// left open, when --fresh starts over instead of resuming it.
	abandoned *journalRec
	// prior is the journal a new run replaced (hadPrior: there was one),
	// put back if the run is refused before its first attempt.
	prior    []byte
	hadPrior bool
	// muxDir is the run's private directory for its agents' multiplexer
	// sockets, muxDirs every one it made (an agent may remove it), muxN
	// the subdirectories made in them (agentMuxDir); under muxMu.
	muxMu   sync.Mutex
	muxDir  string
	muxDirs []string
	muxN    int
	// sandboxTemp: the codex sandbox's directories missing from the
	// temporary directories when the first of the codex attempts in
	// flight (sandboxBusy) started (executor.watchSandbox); under
	// sandboxMu.
	sandboxMu   sync.Mutex
	sandboxBusy int
	sandboxTemp []string
	// eventsWarned: eventsFailed has said the event log cannot be written.
	eventsWarned atomic.Bool
}

// open takes the agent lock and sets up the run: its journal (resuming a
// killed run's), then what a killed run left behind is saved and cleaned,
// then the preflight checks.
func open(ctx context.Context, st *checkpoint.State, opts Options, disp *display) (*run, error) {
	lock, err := st.Acquire(ctx, layout.AcquireOptions{Command: opts.Command})
	var held *layout.HeldError
	if errors.As(err, &held) && held.Holder != nil && held.Holder.PID != os.Getpid() && !layout.PIDAlive(held.Holder.PID) {
		// The holder was killed and its agents are still dying with the
		// lock they inherited (their supervisor ends them on its
		// parent's death): wait for that, briefly.
		lock, err = st.Acquire(ctx, layout.AcquireOptions{Command: opts.Command, Wait: dyingWait})
	}
	if err != nil {
		return nil, err
	}
	r := &run{
		st: st, opts: opts, lock: lock, session: lock.Holder.Session,
		disp: disp, started: time.Now(), led: newLedger(), gate: &gate{}, pool: proc.NewPool(),
		planRel: relPath(st.Repo.Root, opts.Plan.Path()),
	}
	if err := r.setup(ctx); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *run) setup(ctx context.Context) error {
	var err error
	// Before the resume, which may commit a story the killed run
	// finished: with the message this run gives its stories.
	if err := r.commitTemplate(ctx); err != nil {
		return err
	}
	if r.logPath, err = r.st.Runtime(ProgressFile); err != nil {
		return err
	}
	if err := r.openJournal(); err != nil {
		return err
	}
	// A new run refused before its first attempt has nothing to resume:
	// the next run is a new one, not "the interrupted run".
	refused := func(err error) error {
		if !r.killed {
			r.unrecord(err)
		}
		return err
	}
	if err := r.canCommit(ctx); err != nil {
		return refused(err)
	}
	// Before the resume, so that what a killed run left is settled on the
	// branch the run works on - unless its unfinished attempt is on
	// another: that is rolled back or committed where it was, first.
	later := r.attemptElsewhere()
	if !later {
		if err := r.switchBranch(ctx, false); err != nil {
			return refused(err)
		}
	}
	if err := r.recover(ctx); err != nil {
		if !r.killed {
			return refused(err) // a plan that does not read, say
		}
		if refusedHere(err) || stoppedUncommitted(err) != nil {
			// Still open; wiggum status says why it stopped.
			_ = r.led.record(journalRec{T: "stuck", Note: err.Error()}, true)
		}
		return err
	}
	if later {
		if err := r.switchBranch(ctx, true); err != nil {
			return err
		}
	}
	if err := r.preflight(ctx); err != nil {
		return refused(err)
	}
	if err := r.landKept(ctx); err != nil {
		return err
	}
	if r.opts.MaxIter == 0 {
		r.opts.MaxIter, r.autoCap = r.defaultMaxIter(), true
	}
	// What this run leaves out of its commits, for a resume that commits
	// an attempt it finished (resume.go): once per run, not synced.
	return r.led.record(journalRec{T: "dirty", Paths: r.commit.keep}, false)
}

func (r *run) close() {
	// Every supervisor is gone, and with it every agent process, before
	// the lock is free.
	r.pool.Close()
	r.removeMuxDirs()
	r.dropAppliedStash()
	r.releaseUnlanded()
	if r.led.j != nil {
		_ = r.led.j.close()
	}
	_ = r.lock.Release()
}

// capReached reports whether the run has used its iterations, done of
// them. A cap the run set itself (no --max-iterations) follows the plan:
// stories added while the run goes - a person queuing work - get their
// attempts too, so it is raised to done plus what the plan's open stories
// have left before it is called reached.
func (r *run) capReached(done int) bool {
	if done < r.opts.MaxIter {
		return false
	}
	if r.autoCap {
		if n := min(done+r.defaultMaxIter(), MaxIterationsLimit); n > r.opts.MaxIter {
			r.opts.MaxIter = n
		}
	}
	return done >= r.opts.MaxIter
}

// defaultMaxIter allows every open story its remaining attempts.
func (r *run) defaultMaxIter() int {
	stories, err := r.opts.Plan.Stories()
	if err != nil {
		return MaxIterationsLimit
	}
	n := 0
	for _, s := range stories {
		if !s.Done {
			n += max(1, r.opts.Retries+1-r.led.failed(s.ID))
		}
	}
	return min(max(n, 1), MaxIterationsLimit)
}

// openJournal reads the run journal: an open one (its run was killed or
// interrupted) is resumed when it is this plan's; a closed or missing one
// starts a new run. A damaged journal is an error naming the file.
func (r *run) openJournal() error {
	path, err := r.st.Runtime(JournalFile)
	if err != nil {
		return err
	}
	link := journalLink(r.st)
	restored := restoreJournal(path, link)
	recs, good, torn, err := readJournal(path)
	if isCorrupt(err) && r.opts.Fresh {
		// Starting over needs nothing from it; kept for whoever wants
		// to look into what damaged it.
		aside, aerr := setJournalAside(path)
		if aerr != nil {
			return aerr
		}
		r.disp.printf("the run journal %s is corrupt (%v): --fresh starts a new run, and the damaged journal is kept as %s", relPath(r.st.Repo.Root, path), errors.Unwrap(err), relPath(r.st.Repo.Root, aside))
		recs, good, torn, err = nil, 0, false, nil
	}
	if err != nil {
		return journalAdvice(err, link)
	}
	open := len(recs) > 0 && recs[len(recs)-1].T != "close"
	if restored && open {
		r.disp.printf("the run journal %s was gone (an agent's rm -rf .ralph?): put back from its second name %s", relPath(r.st.Repo.Root, path), relPath(r.st.Repo.Root, link))
	}
	r.killed = open
	if open && recs[0].Plan != r.planRel && !r.opts.Fresh {
		return badinput.Errorf("run: %s records an interrupted run of the plan %s; resume it with the same plan (wiggum run --plan %s), or pass --fresh to start over with %s", relPath(r.st.Repo.Root, path), recs[0].Plan, recs[0].Plan, r.planRel)
	}
	if open && recs[0].Plan == r.planRel && !r.opts.Fresh {
		if err := r.sameSharing(recs, path); err != nil {
			return err
		}
	}
	if open && recs[0].Plan == r.planRel {
		for _, rec := range recs {
			r.led.replay(rec)
		}
		r.resumed = true
		r.iterBase = r.led.lastIter
	} else {
		if open {
			// --fresh: the killed run is not resumed, but what its
			// attempt left in the main tree is still saved and cleaned.
			old := newLedger()
			for _, rec := range recs {
				old.replay(rec)
			}
			for _, o := range old.openAttempts() {
				if o.Worktree == "" {
					r.abandoned = &o
				}
			}
		}
		if !open {
			// Put back if this run is refused before its first attempt
			// (unrecord): such a run did nothing, and is not the last run
			// wiggum status shows.
			if r.prior, err = os.ReadFile(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("run journal: %w", err)
			}
			r.hadPrior = err == nil
		}
		recs, torn = nil, false
		if good, err = rewriteJournal(path, nil); err != nil {
			return err
		}
	}
	if r.led.j, err = openJournal(path, good); err != nil {
		return err
	}
	r.led.j.link = link
	layout.LinkSecondName(path, link)
	if torn {
		r.disp.printf("the run journal's last record was cut short by the crash and is dropped (%s)", relPath(r.st.Repo.Root, path))
	}
	if r.opts.MaxCost == 0 {
		r.opts.MaxCost = r.led.maxCost
	}
	if r.opts.MaxStoryCost == 0 {
		r.opts.MaxStoryCost = r.led.maxStoryCost
	}
	if r.resumed {
		spent, _, _ := r.led.spending()
		pending, _, _ := r.led.pendingCost()
		spent += pending
		r.disp.printf("resuming the interrupted run of %s (started %s; %s so far)", r.planRel, r.led.first.Local().Format("Jan 2 15:04"), spentText(spent))
	}
	err = r.led.record(journalRec{T: "run", Plan: r.planRel, Kind: r.opts.Plan.Kind(), Session: r.session, PID: os.Getpid(), Workers: max(r.opts.Workers, 1),
		Remote: r.remoteName(), MaxCost: r.opts.MaxCost, MaxStoryCost: r.opts.MaxStoryCost}, true)
	if err != nil && !r.resumed {
		// A new journal without its run record (a disk that filled just
		// now) records no run, yet would read as a damaged journal and
		// refuse every run after it: removed, with its second name, so
		// that freeing space is all the next run needs.
		r.led.j.drop()
		r.led.j = nil
	}
	return err
}

// sameSharing refuses to resume an interrupted run (recs, its journal at
// path) that was shared through a remote as a run that is not, or is
// shared through another: a shared run resumed locally did its stories
// again here, next to the machines that took them over, and left its
// claims on the server; a local run resumed as a shared one would land
// what it never claimed.
func (r *run) sameSharing(recs []journalRec, path string) error {
	var last journalRec
	for _, rec := range recs {
		if rec.T == "run" {
			last = rec
		}
	}
	if last.Remote == r.remoteName() {
		return nil
	}
	resume := resumeCommand(last.Kind, last.Plan, last.Workers, last.Remote)
	was := "was shared through --remote " + last.Remote
	if last.Remote == "" {
		was = "was not shared (no --remote)"
	}
	return badinput.Errorf("run: %s records an interrupted run of %s that %s; resume it the same way (%s), or pass --fresh to start over", relPath(r.st.Repo.Root, path), last.Plan, was, resume)
}

// unrecord takes back the run record of a new run refused before its
// first attempt (a dirty tree, no commits yet): the journal is put back
// as it was - the last run's, or none. (A killed run's journal, resumed or
// started over with --fresh, is not: refused, it stays open.)
func (r *run) unrecord(why error) {
	j := r.led.j
	if j == nil {
		return
	}
	if !r.hadPrior {
		r.led.j = nil
		j.drop()
		return
	}
	if err := statefile.Write(j.path, r.prior); err == nil {
		r.led.j = nil
		_ = j.close()
		layout.LinkSecondName(j.path, j.link)
		return
	}
	// Not put back: closed, with why, rather than left to read as a run
	// a crash interrupted.
	_ = r.led.record(journalRec{T: "close", Note: closeNote(why)}, true)
}

// recover saves and cleans what a killed run left: its unfinished attempt
// in the main tree (rolled back to that attempt's checkpoint, saved first),
// its worktrees and branches (saved, then removed; a branch it had already
// merged lands its story), and stories the plan no longer has.
func (r *run) recover(ctx context.Context) error {
	if err := r.waitGitLocks(ctx); err != nil {
		return err
	}
	stories, err := r.opts.Plan.Stories()
	if err != nil {
		return err
	}
	inPlan := make(map[string]*plan.Story, len(stories))
	for i := range stories {
		inPlan[stories[i].ID] = &stories[i]
	}
	if r.resumed {
		r.led.mu.Lock()
		var gone []string
		for id := range r.led.stories {
			if inPlan[id] == nil {
				gone = append(gone, id)
			}
		}
		for id := range r.led.open {
			if inPlan[id] == nil && r.led.stories[id] == nil {
				gone = append(gone, id)
			}
		}
		r.led.mu.Unlock()
		for _, id := range gone {
			note := "no longer in the plan: dropped from the run (its spending stays in the run's total)"
			if err := r.led.record(journalRec{T: "drop", Story: id, Note: note}, false); err != nil {
				return err
			}
			r.disp.printf("%s is %s", id, note)
		}
	}
	// A holder record written when the killed run took the lock, cut
	// between its temp file and the rename, leaves the temp file beside it
	// (outside the excluded runtime directory); nothing else writes there.
	// Removed before the main tree's attempt is finished or rolled back:
	// a finished attempt's commit must not sweep it in.
	if tmps, _ := filepath.Glob(r.st.Path(path.Dir(layout.HolderFile) + "/." + path.Base(layout.HolderFile) + "*")); len(tmps) > 0 {
		for _, tmp := range tmps {
			if filepath.Base(tmp) != filepath.Base(layout.HolderFile) {
				_ = os.Remove(tmp)
			}
		}
	}
	// A plan write killed between its temp file and the rename leaves the
	// temp file (never anyone's work: the plan is only written by ticks).
	if tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(r.opts.Plan.Path()), "."+filepath.Base(r.opts.Plan.Path())+".tmp-*")); len(tmps) > 0 {
		for _, tmp := range tmps {
			_ = os.Remove(tmp)
		}
	}
	if err := r.rollbackAbandoned(ctx); err != nil {
		return err
	}
	if err := r.recoverMain(ctx, inPlan); err != nil {
		return err
	}
	// Only a killed run can have left uncommitted ticks or an index
	// behind its last commit: after a run that ended by itself (or none)
	// the two git processes of the check are saved.
	if r.killed {
		restored, err := r.untick(ctx)
		if err != nil {
			return err
		}
		if restored {
			if stories, err = r.opts.Plan.Stories(); err != nil {
				return err
			}
			for i := range stories {
				inPlan[stories[i].ID] = &stories[i]
			}
		}
	}
	if err := r.tickLanded(ctx, inPlan); err != nil {
		return err
	}
	target, _ := r.st.Repo.Branch(ctx)
	var recl []worktree.Reclaimed
	// A branch the killed run merged before it ticked the story: tick it
	// now, before its worktree goes, and never merge it again.
	ticked := map[string]bool{}
	landed := func(rc worktree.Reclaimed) error {
		s := inPlan[rc.Story]
		if s == nil || s.Done {
			return nil
		}
		if err := r.opts.Plan.MarkDone(s.ID); err != nil {
			return err
		}
		if _, err := r.commitTick(ctx, s); err != nil {
			return fmt.Errorf("run: tick %s, whose branch a killed run merged: %w", s.ID, err)
		}
		s.Done, ticked[s.ID] = true, true
		_ = r.led.record(journalRec{T: "end", Story: s.ID, Outcome: "done", Note: "merged by the killed run"}, true)
		r.disp.printf("%s: its branch was merged before the crash; ticked it", s.ID)
		return nil
	}
	// A story a parallel run finished and never landed is landed by this
	// run's merge coordinator rather than redone, when its worktree is
	// exactly as its attempt left it (resume.go); in a run shared with
	// other machines, it is claimed again and landed on the server
	// (landResumed). A serial run redoes it.
	opts := worktree.ReclaimOptions{Landed: landed, Command: r.opts.Command, Skip: map[string]bool{}}
	switch {
	case r.opts.Workers > 1 || r.opts.Coordinator != nil:
		opts.Finished = func(lo worktree.Leftover) (bool, string) { return r.finishedThere(ctx, lo, target, inPlan) }
	default:
		opts.Finished = func(lo worktree.Leftover) (bool, string) {
			if ok, why := r.finishedThere(ctx, lo, target, inPlan); !ok {
				return false, why
			}
			return false, "this run is serial, and only a parallel run's merge coordinator lands a worker's branch (resume with --workers to have such a story landed)"
		}
	}
	for deadline := time.Now().Add(dyingWait); ; {
		got, err := worktree.Reclaim(ctx, r.st.Repo, target, opts)
		for _, rc := range got {
			if rc.Worker != nil {
				opts.Skip[rc.Worker.Path] = true
				r.landPassed(ctx, rc.Worker)
				r.keepFinished(rc.Worker, inPlan)
			}
		}
		if err != nil {
			return fmt.Errorf("run: clean up the worktrees a killed run left: %w", err)
		}
		recl = append(recl, got...)
		live := ""
		for _, rc := range got {
			if rc.Live {
				live = rc.Story
			}
		}
		if live == "" {
			break
		}
		// We hold the main lock, so no live run owns it: the killed
		// run's agents are still dying with its lease.
		if time.Now().After(deadline) {
			return fmt.Errorf("run: the worktree %s is still leased by a process of a run that is gone; stop it first (wiggum worktree list names its pid)", live)
		}
		time.Sleep(100 * time.Millisecond)
	}
	attempted := map[string]bool{}
	for _, o := range r.led.openAttempts() {
		attempted[o.Story] = true
	}
	for _, rc := range recl {
		if rc.Foreign != nil {
			r.disp.printf("%s is not a worktree of wiggum's: %s; left as it is", relPath(r.st.Repo.Root, rc.Foreign.Path), rc.Foreign.ForeignNote())
			continue
		}
		if rc.Live {
			continue
		}
		s := inPlan[rc.Story]
		redo := s != nil && !s.Done && r.led.failed(s.ID) <= r.opts.Retries
		if rc.NotLanded != "" {
			r.disp.printf("%s finished before the crash but is not landed: %s", rc.Story, rc.NotLanded)
		}
		switch {
		case rc.Worker != nil:
			f, _ := r.led.finishedAt(rc.Story)
			when := "before the crash"
			if f.Unlanded != "" {
				when = "in an earlier run, which could not land it (" + f.Unlanded + ")"
			}
			r.disp.printf("landing %s: it finished %s (%s at %.12s, the commit its attempt recorded); not redoing it", rc.Story, when, checkpoint.BranchName(rc.Branch), f.Head)
		case rc.Merged && s != nil && s.Done && !ticked[rc.Story]:
			r.disp.printf("%s: landed before the crash; removed the worktree it left", rc.Story)
		case rc.Merged:
		case rc.Backup != "" && redo:
			r.addBackup(rc.Backup)
			r.disp.printf("redoing %s: saved its partial work as %s (the killed run's worktree, now removed)", rc.Story, rc.Backup)
			r.interruptedAttempt(rc.Story, rc.Backup)
		case rc.Backup != "":
			r.addBackup(rc.Backup)
			r.disp.printf("%s: the killed run's worktree is saved in %s and removed", rc.Story, rc.Backup)
			if s != nil && !s.Done {
				r.interruptedAttempt(rc.Story, rc.Backup)
			}
		case redo && attempted[rc.Story] && len(rc.Submodules) == 0:
			r.disp.printf("redoing %s: the killed run's attempt at it had changed nothing", rc.Story)
		}
		if rc.Also != "" {
			r.addBackup(rc.Also)
			r.disp.printf("%s: commits only its worktree's branch or reflogs held (its agent had left them) are saved in %s", rc.Story, rc.Also)
		}
		for _, b := range rc.Submodules {
			r.disp.printf("%s: the killed run's worktree is removed; %s", rc.Story, b)
		}
	}
	// Attempts left open with no worktree or tree to show for them.
	for _, o := range r.led.openAttempts() {
		end := journalRec{T: "end", Story: o.Story, Attempt: o.Attempt, Outcome: "interrupted", Source: "crash"}
		end.Cost, end.In, end.Out = r.led.crashCost(o.Story)
		r.killedEnd(o, end, events.OutcomeInterrupted, false)
	}
	return nil
}

// waitGitLocks clears what the killed run's git processes left (see
// git.Settle): the caller holds the agent lock, so a git still at work
// here is someone else's, waited for up to dyingWait.
func (r *run) waitGitLocks(ctx context.Context) error {
	err := gitlock.Settle(ctx, gitlock.SettleOptions{Root: r.st.Repo.Root, CommonDir: r.st.Repo.CommonDir,
		Exclusive: true, Wait: dyingWait, Grace: orphanGrace, Say: r.disp.printf})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("run: %w", err)
	}
	return err
}

// untick undoes ticks a killed merge coordinator wrote into the plan and
// never committed (it died between the two), by restoring the committed
// plan - only when ticks are all that differ: a worktree whose branch was
// merged is then ticked again, and committed, by recover. It reports
// whether it restored the plan.
func (r *run) untick(ctx context.Context) (bool, error) {
	if r.opts.Plan.Kind() == "issues" {
		return false, nil
	}
	head, err := r.st.Repo.Run(ctx, "show", "HEAD:"+r.planRel)
	if err != nil {
		return false, nil // not committed (or ignored): nothing to compare
	}
	now, err := statefile.ReadFile(r.opts.Plan.Path())
	if err != nil {
		return false, nil
	}
	if string(now) == head {
		// A tick commit killed after moving HEAD and before writing the
		// index leaves the index behind HEAD for the plan alone.
		if same, err := r.st.Repo.OK(ctx, "diff", "--cached", "--quiet", "HEAD", "--", r.planRel); err == nil && !same {
			if _, err := r.st.Repo.Run(ctx, "reset", "-q", "--", r.planRel); err != nil {
				return false, fmt.Errorf("run: bring the index of the plan up to date after a killed commit: %w", err)
			}
		}
		return false, nil
	}
	was, is := strings.Split(head, "\n"), strings.Split(string(now), "\n")
	if len(was) != len(is) {
		return false, nil
	}
	for i := range was {
		if was[i] != is[i] && strings.Replace(was[i], "[ ]", "[x]", 1) != is[i] && strings.Replace(was[i], "false", "true", 1) != is[i] {
			return false, nil
		}
	}
	if _, err := r.st.Repo.Run(ctx, "checkout", "HEAD", "--", r.planRel); err != nil {
		return false, fmt.Errorf("run: restore the plan a killed run ticked without committing: %w", err)
	}
	r.disp.printf("the plan had ticks the last run never committed; restored it (stories whose branch was merged are ticked again)")
	return true, nil
}

// tickLanded ticks and commits each story whose landing the journal
// records and the plan does not have done: the run that landed it stopped
// when git would not commit its tick (TickError), or was killed before it
// could. Nothing is done again; a commit git still refuses stops this run
// the same way.
func (r *run) tickLanded(ctx context.Context, inPlan map[string]*plan.Story) error {
	r.led.mu.Lock()
	landed := make([]journalRec, 0, len(r.led.merged))
	for id, commit := range r.led.merged {
		if s := inPlan[id]; s != nil && !s.Done {
			landed = append(landed, journalRec{Story: id, Commit: commit})
		}
	}
	r.led.mu.Unlock()
	slices.SortFunc(landed, func(a, b journalRec) int { return strings.Compare(a.Story, b.Story) })
	for _, l := range landed {
		s := inPlan[l.Story]
		if err := r.opts.Plan.MarkDone(s.ID); err != nil {
			return fmt.Errorf("run: tick %s, which the last run landed: %w", s.ID, err)
		}
		if _, err := r.commitTick(ctx, s); err != nil {
			return r.tickRefused(ctx, s, l.Commit, err)
		}
		s.Done = true
		r.disp.printf("%s: landed by the last run, which could not commit its tick; ticked it now", s.ID)
	}
	return nil
}

// interruptedAttempt records a killed attempt: not a failure of the agent,
// so it does not count against --retries, but the next prompt says where
// its work is, and the run's spending keeps what a finished agent cost. An
// attempt that had failed before the kill is recorded as that failure.
func (r *run) interruptedAttempt(story, backup string) {
	var open journalRec
	for _, a := range r.led.openAttempts() {
		if a.Story == story {
			open = a
		}
	}
	if f, ok := r.led.failingAt(story); ok {
		// It had failed, and the kill came during or after its rollback:
		// recorded as the failure it was, counted against --retries, its
		// output in the next prompt.
		f.T, f.Time, f.Outcome, f.Backup = "end", time.Time{}, "failed", backup
		f.Note = "failed; the kill came during its rollback, finished on resume"
		r.killedEnd(open, f, "failed ("+f.Source+")", true)
		_ = session.AppendFailure(r.st, session.Failure{
			Time: time.Now().UTC(), Story: story, Iteration: f.Iter, Source: f.Source,
			Command: f.Command, Output: f.Output, Rollback: backup,
		})
		return
	}
	end := journalRec{T: "end", Story: story, Attempt: open.Attempt, Outcome: "interrupted", Source: "crash", Backup: backup}
	end.Cost, end.In, end.Out = r.led.crashCost(story)
	r.killedEnd(open, end, events.OutcomeInterrupted, true)
	_ = session.AppendFailure(r.st, session.Failure{
		Time: time.Now().UTC(), Story: story, Source: "interrupted",
		Output: "wiggum was killed during this attempt; what it had done is saved", Rollback: backup,
	})
}

// killedEnd records end, which closes open - an attempt a killed run left
// open - in the journal, and logs the iteration_end the killed run never
// wrote, with outcome: report, watch and status then count what the
// attempt cost and list its backup.
func (r *run) killedEnd(open, end journalRec, outcome string, durable bool) {
	_ = r.led.record(end, durable)
	fields := map[string]any{"iteration": open.Iter, "story": end.Story, "attempt": end.Attempt, "outcome": outcome}
	if !open.Time.IsZero() {
		fields["started"] = open.Time.UTC().Format(time.RFC3339Nano)
	}
	if end.Backup != "" {
		fields["backup"] = end.Backup
	}
	withUsage(fields, end.Cost, end.In, end.Out)
	r.event("iteration_end", fields)
}

// withUsage adds what an attempt or a run spent to an event's fields,
// when it reported anything, and says whether it did.
func withUsage(fields map[string]any, cost float64, in, out int) bool {
	if cost+float64(in+out) <= 0 {
		return false
	}
	fields["cost_usd"], fields["input_tokens"], fields["output_tokens"] = cost, in, out
	return true
}

// mainAttempt is the unfinished attempt a killed run left in the main
// tree, with its checkpoint - when the checkpoint on disk is still that
// attempt's; nil, nil otherwise.
func (r *run) mainAttempt() (*journalRec, *checkpoint.Checkpoint, error) {
	var open *journalRec
	for _, o := range r.led.openAttempts() {
		if o.Worktree == "" {
			open = &o
		}
	}
	if open == nil {
		return nil, nil, nil
	}
	cp, err := r.attemptCheckpoint(open)
	return open, cp, err
}

// attemptCheckpoint is the checkpoint on disk when it is the one attempt a
// took (same session and commit), else nil: none, or a later one's.
func (r *run) attemptCheckpoint(a *journalRec) (*checkpoint.Checkpoint, error) {
	cp, err := r.st.Load()
	if errors.Is(err, checkpoint.ErrNoCheckpoint) {
		return r.reinstateCheckpoint(a)
	}
	if err != nil {
		return nil, err
	}
	if cp.Session != a.Session || cp.Head != a.Commit {
		return nil, nil
	}
	return cp, nil
}

// reinstateCheckpoint puts back the checkpoint record of the attempt a,
// which an agent's rm -rf .ralph took while the run was killed before it
// could put it back itself (checkRails): a clean checkpoint is whole in
// the journal's start record (its commit and branch), and wiggum's
// checkpoint ref, outside the tree, still naming that commit proves it
// is the checkpoint the attempt took. Nil when it cannot be proven (a
// dirty checkpoint's snapshot, a ref that moved, a journal from before
// the start record named the branch).
func (r *run) reinstateCheckpoint(a *journalRec) (*checkpoint.Checkpoint, error) {
	if a.Commit == "" || a.Session == "" || (a.OnBranch == "" && !a.Detached) {
		return nil, nil
	}
	cp := &checkpoint.Checkpoint{Head: a.Commit, Branch: a.OnBranch, Session: a.Session, Time: a.Time}
	ok, err := r.st.Reinstate(context.Background(), cp)
	if err != nil || !ok {
		return nil, err
	}
	r.disp.printf("%s: the checkpoint record of the attempt a crash interrupted was gone (an agent's rm -rf .ralph?): put back from wiggum's checkpoint ref", a.Story)
	return cp, nil
}

// rollbackAbandoned rolls the main tree back from the attempt a killed run
// of another plan left open, when --fresh starts over instead of resuming
// that run - saved first, like every rollback, and said - when the
// checkpoint on disk is still that attempt's.
func (r *run) rollbackAbandoned(ctx context.Context) error {
	a := r.abandoned
	if a == nil {
		return nil
	}
	cp, err := r.attemptCheckpoint(a)
	if cp == nil {
		return err
	}
	res, err := r.st.Rollback(ctx, checkpoint.RollbackOptions{Session: cp.Session, Reason: a.Story + " interrupted by a crash (attempt " + fmt.Sprint(a.Attempt) + "); not resumed: --fresh", SetAsideRepos: true})
	if err != nil {
		var refused *checkpoint.RefusedError
		errors.As(err, &refused)
		return fmt.Errorf("run: roll back the attempt at %s that a crash interrupted (a run of another plan, not resumed: --fresh): %w%s%s", a.Story, err, foreignHint(refused), rewriteHint(refused, cp.Head))
	}
	if res.BackupRef != "" {
		r.disp.printf("%s: rolled back the attempt a crash interrupted in the run of another plan (not resumed: --fresh); its work is saved in %s", a.Story, res.BackupRef)
	}
	return nil
}

// recoverMain rolls back the main tree's unfinished attempt, when the
// checkpoint on disk is that attempt's (same session, taken after the last
// attempt ended). An attempt whose agent finished and whose checks passed
// (its pass record) is committed with its tick instead, not redone. Only
// that record says an attempt finished: a tick and a commit in the tree
// may be the agent's own, made before its checks ran. (A power cut that
// takes the unsynced record leaves the story rolled back, saved, and
// redone.)
func (r *run) recoverMain(ctx context.Context, inPlan map[string]*plan.Story) error {
	open, cp, err := r.mainAttempt()
	if cp == nil {
		return err
	}
	s := inPlan[open.Story]
	unfinished := "its agent had not finished or its checks had not passed"
	fail, failed := r.led.failingAt(open.Story)
	if failed {
		unfinished = "it had failed: " + fail.Detail
	}
	if pass, ok := r.led.passedAt(open.Story); ok && s != nil {
		why, err := r.finishPassed(ctx, cp, pass, s)
		if err != nil || why == "" {
			return err
		}
		unfinished = "it had finished, but " + why
	}
	// The kill came while its agent had another branch checked out (git
	// checkout -b, before the attempt's end brought it back): HEAD goes
	// back to the attempt's branch as at an attempt's end, its commits
	// carried or saved, so that the rollback - which refuses a branch
	// that changed - can go ahead; each resume stopped on "the branch
	// changed" for good.
	ex := &executor{run: r, st: r.st, disp: r.disp, attemptStarted: open.Time}
	if detail, err := ex.backToBranch(context.WithoutCancel(ctx), cp.Branch); err != nil {
		return fmt.Errorf("run: put HEAD back on %s, the branch of the attempt at %s that a crash interrupted: %w", checkpoint.BranchName(cp.Branch), open.Story, err)
	} else if detail != "" {
		r.disp.printf("%s: %s", open.Story, detail)
	}
	// What a person did between the crash and this resume is in the tree
	// too, and goes back with the attempt: the stories they queued in the
	// plan are kept, as a live rollback keeps them, and what else goes is
	// said (saved in the backup first, like all of it).
	edit := r.planAtCheckpoint(ctx, cp).editSince(r.opts.Plan, open.Story)
	res, err := r.st.Rollback(ctx, checkpoint.RollbackOptions{Session: cp.Session, Reason: open.Story + " interrupted by a crash (attempt " + fmt.Sprint(open.Attempt) + ")", SetAsideRepos: true})
	if err != nil {
		var refused *checkpoint.RefusedError
		errors.As(err, &refused)
		hint := foreignHint(refused) + rewriteHint(refused, cp.Head)
		if partial := (*checkpoint.PartialError)(nil); errors.As(err, &partial) {
			hint = ". Mend that, then run again: the run resumes and finishes putting the tree back"
		}
		return fmt.Errorf("run: roll back the unfinished attempt at %s, which the last run left (%s): %w%s", open.Story, unfinished, err, hint)
	}
	switch {
	case res.BackupRef != "":
		r.addBackup(res.BackupRef)
		r.disp.printf("%s: rolled back the attempt a crash interrupted (%s); its work is saved in %s", open.Story, unfinished, res.BackupRef)
	case failed:
		r.disp.printf("%s: its attempt had failed (%s) and was rolled back; counted as a failed attempt", open.Story, fail.Detail)
	}
	if n := len(res.Commits); n > 0 && res.BackupRef != "" {
		r.disp.printf("  %d commit(s) made since the attempt's checkpoint went with it - its agent's, or anyone's since the crash: %s; saved in %s (wiggum recover restores it)",
			n, r.describeCommits(ctx, res.Commits), res.BackupRef)
	}
	if files := slices.Compact(slices.Sorted(slices.Values(slices.Concat(res.Files, res.Removed)))); len(files) > 0 && res.BackupRef != "" {
		r.disp.printf("  %d file(s) changed or made since then returned to the checkpoint (%s); saved there too", len(files), summarize(files, 5))
	}
	for _, n := range res.Notes() {
		r.disp.printf("  %s", n)
	}
	note, err := edit.keep(r.opts.Plan.Path(), r.planRel, res.BackupRef)
	if note != "" {
		r.disp.printf("  %s", note)
	}
	if err != nil {
		return err
	}
	r.planKept = edit != nil && len(edit.changed) == 0 && !edit.ownTick
	if inPlan[open.Story] != nil {
		r.interruptedAttempt(open.Story, res.BackupRef)
	}
	return nil
}

// planAtCheckpoint is the plan file as cp holds it (its snapshot's, or
// its commit's when the tree was clean): what the attempt a crash cut off
// found; nil when it cannot be read there.
func (r *run) planAtCheckpoint(ctx context.Context, cp *checkpoint.Checkpoint) *planAtStart {
	if r.opts.Plan == nil || r.opts.Plan.Kind() == "issues" || strings.HasPrefix(r.planRel, "../") {
		return nil
	}
	rev := cp.Head
	if cp.Snapshot != "" {
		rev = cp.Snapshot
	}
	data, err := r.st.Repo.Run(ctx, "cat-file", "blob", rev+":"+r.planRel)
	if err != nil {
		return nil
	}
	return &planAtStart{path: r.opts.Plan.Path(), data: []byte(data)}
}

// describeCommits names commits by short id and subject, the first few.
func (r *run) describeCommits(ctx context.Context, commits []string) string {
	show := commits[:min(len(commits), 5)]
	out, err := r.st.Repo.Run(ctx, append([]string{"log", "--no-walk=unsorted", "--format=%h %s"}, show...)...)
	if err != nil {
		return strings.Join(show, ", ")
	}
	s := strings.Join(strings.Split(strings.TrimSpace(out), "\n"), "; ")
	if len(commits) > len(show) {
		s += fmt.Sprintf("; and %d more", len(commits)-len(show))
	}
	return s
}

// bounded is ctx with the run's --timeout, for what runs the user's git
// hooks or signing program outside a commit (a hook that hangs is
// stopped there, as in a commit).
func (r *run) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.opts.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, r.opts.Timeout)
}

// canCommit checks that git can make the loop's commits here, before a
// killed run's finished work is committed (the resume, which would
// otherwise give that work up to be done again) and before any agent runs:
// that a commit can be signed with nobody at the terminal, when git signs
// them, and that the commit-msg hook takes the messages of the plan's
// first open story and of every story a killed run finished and did not
// commit.
func (r *run) canCommit(ctx context.Context) error {
	repo := r.st.Repo
	signs, err := repo.SignsCommits(ctx)
	if err != nil {
		return fmt.Errorf("run: read commit.gpgSign: %w", err)
	}
	bctx, cancel := r.bounded(ctx)
	defer cancel()
	if repo.Sign = signs; signs {
		// Every story's commit is signed: a signing that cannot work
		// unattended would fail (or, on a terminal, wait for ever) at
		// the first commit, after the agent's work.
		if err := repo.SignProbe(bctx); err != nil {
			return &SigningError{Err: err}
		}
	}
	stories, err := r.opts.Plan.Stories()
	if err != nil {
		return nil // the run reports it itself
	}
	first := true
	for i := range stories {
		s := &stories[i]
		// A story whose attempt passed and was not committed is ticked
		// in the tree already (the tick goes first, into the same
		// commit).
		_, finished := r.led.passed[s.ID]
		if b := r.led.stories[s.ID]; b != nil && b.done {
			finished = false
		}
		switch {
		case finished:
		case s.Done || !first:
			continue
		default:
			first = false
		}
		if err := checkMessage(bctx, repo, r.msg.story(s)); err != nil {
			var refused *MessageRefusedError
			if errors.As(err, &refused) {
				return badinput.Wrap(err)
			}
			return err
		}
	}
	return nil
}

// commitTemplate sets the run's commit message template: --commit-message,
// else git config wiggum.commitMessage, else DefaultCommitMessage.
func (r *run) commitTemplate(ctx context.Context) error {
	t, from := r.opts.CommitMessage, "--commit-message"
	if t == "" {
		v, err := r.st.Repo.ConfigValue(ctx, CommitMessageKey)
		if err != nil {
			return fmt.Errorf("run: read git config %s: %w", CommitMessageKey, err)
		}
		t, from = v, "git config "+CommitMessageKey
	}
	if t == "" {
		t = DefaultCommitMessage
	}
	if err := checkCommitMessage(t, from); err != nil {
		return err
	}
	r.msg = commitTemplate(t)
	return nil
}

// stateIgnored lists, one a line, wiggum's state paths the repository's
// ignore rules hide (git check-ignore, by the rules alone); "" when the
// check fails.
//
// A path beyond a symbolic link (.ralph/wiggum or .ralph a link to state
// kept on another disk) is hidden: git adds nothing beyond a link, and
// check-ignore refuses such a path, failing the whole check.
func (r *run) stateIgnored(ctx context.Context) string {
	args := []string{"check-ignore", "--no-index", "--"}
	var beyond []string
	for _, g := range layout.Gitignores {
		for _, p := range g.Hides {
			if beyondLink(r.st.Repo.Root, p) {
				beyond = append(beyond, p)
			} else {
				args = append(args, p)
			}
		}
	}
	out := ""
	if len(args) > 3 {
		out, _ = r.st.Repo.Run(ctx, args...)
	}
	for _, p := range beyond {
		out += p + "\n"
	}
	return out
}

// beyondLink reports whether a directory on the way to rel (a path in the
// tree at root) is a symbolic link.
func beyondLink(root, rel string) bool {
	dir := root
	parts := strings.Split(rel, "/")
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		if fi, err := os.Lstat(dir); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return err == nil
		}
	}
	return false
}

// hideState writes the .gitignore files of layout.Gitignores where the
// repository's own .gitignore shows wiggum's state past
// .git/info/exclude: the agent's `git add -A && git commit` took the lock
// record, the checkpoint and the run journal into the history, and the
// rollback of a later attempt then rewound the journal. ignored is what
// stateIgnored found hidden.
func (r *run) hideState(ignored string) error {
	hidden := map[string]bool{}
	for _, l := range strings.Split(ignored, "\n") {
		hidden[strings.TrimSpace(l)] = true
	}
	for _, g := range layout.Gitignores {
		if !slices.ContainsFunc(g.Hides, func(p string) bool { return !hidden[p] }) {
			continue
		}
		file := r.st.Path(g.Path)
		if _, err := os.Lstat(file); err == nil {
			var rules []string
			for _, p := range g.Hides {
				rules = append(rules, "/"+strings.TrimPrefix(p, path.Dir(g.Path)+"/"))
			}
			r.disp.printf("the repository's .gitignore shows wiggum's %s to git, and %s is not wiggum's to change: add %s to it, or an agent's git add -A commits them",
				strings.Join(g.Hides, ", "), g.Path, strings.Join(rules, " and "))
			continue
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return fmt.Errorf("run: %w", err)
		}
		if err := renameio.WriteFile(file, []byte(g.Content), 0o644); err != nil {
			return fmt.Errorf("run: hide wiggum's state from the repository's .gitignore: %w", err)
		}
	}
	return nil
}

// preflight refuses a tree the loop could not commit from safely, and
// records what was dirty before the run so it is never committed.
func (r *run) preflight(ctx context.Context) error {
	repo := r.st.Repo
	// The identity and the plan's ignore rule are read beside the status:
	// three reads of one unchanging state, and the run's first agent
	// waits for all of them. Their answers are judged in the order below.
	var identErr, ignoredErr, journalErr error
	var ignored bool
	var stateIgnored string
	var reads sync.WaitGroup
	reads.Go(func() { _, identErr = repo.Run(ctx, "var", "GIT_COMMITTER_IDENT") })
	// Every rollback reads the commit journal whole: damaged, it would
	// refuse the first failed attempt's rollback only after the agent's
	// paid work, leaving that work in the tree. Read it before.
	reads.Go(func() { _, journalErr = r.st.Journal() })
	reads.Go(func() { ignored, ignoredErr = repo.OK(ctx, "check-ignore", "-q", "--", r.planRel) })
	reads.Go(func() { stateIgnored = r.stateIgnored(ctx) })
	defer reads.Wait()
	// One git status answers HEAD, its branch and the tree's changes.
	now, err := repo.Status(ctx)
	if err != nil {
		return fmt.Errorf("run: git status: %w", err)
	}
	if now.Head == "" {
		return badinput.Errorf("run: the repository has no commits yet; commit something first")
	}
	if op := repo.InProgress(); op != "" {
		return badinput.Errorf("run: a %s is in progress; finish or abort it first", op)
	}
	if now.Branch == "" {
		return badinput.Errorf("run: HEAD is detached; switch to the branch the loop should commit to, or name it with --branch (made from HEAD if it does not exist)")
	}
	// Without an identity every commit would fail, after the agent's work.
	reads.Wait()
	if identErr != nil {
		// Only a git var that ran and said no is a missing identity: one
		// that could not start (out of file descriptors, processes or
		// memory) or was killed says nothing of the config, and sending
		// the person to fix theirs would be wrong.
		var ge *git.Error
		if !errors.As(identErr, &ge) || ge.Status() <= 0 {
			return fmt.Errorf("run: read git's committer identity: %w", identErr)
		}
		return badinput.Errorf("run: git does not know who commits here; set it with git config user.name and git config user.email")
	}
	if journalErr != nil {
		return fmt.Errorf("run: the commit journal, which every rollback reads, cannot be read: %w", journalErr)
	}
	r.branch = now.Branch
	if err := r.hideState(stateIgnored); err != nil {
		return err
	}
	ts := changesOf(now)
	left := r.neverCommitted(ctx, now)
	if len(left) > 0 {
		ts.paths = slices.DeleteFunc(ts.paths, func(p string) bool { return slices.Contains(left, p) })
	}
	if r.planKept {
		// The stories a person queued in the plan after a crash, kept
		// through the resume's rollback: the next tick commits them
		// with the plan, as after a live rollback that keeps them.
		ts.paths = slices.DeleteFunc(ts.paths, func(p string) bool { return p == r.planRel })
	}
	if len(ts.paths) > 0 && !r.opts.AllowDirty {
		return refuseDirty(ctx, repo, now, ts.paths)
	}
	if len(ts.staged) > 0 {
		return badinput.Errorf("run: staged changes (%s) would end up in the loop's commits; commit them or unstage them (git restore --staged) first", summarize(ts.staged, 5))
	}
	if r.opts.Coordinator == nil && len(ts.paths) == 0 {
		// A shared run's landings are commits wiggum writes itself; its
		// workers commit on branches of their own.
		bctx, cancel := r.bounded(ctx)
		err := protectedBranch(bctx, repo, checkpoint.BranchName(now.Branch))
		cancel()
		if err != nil {
			return badinput.Wrap(err)
		}
	}
	// The person's local settings in files hidden from git status: out
	// of every commit, even once an agent takes the flag off.
	hidden := r.st.HiddenPaths(now)
	env := []string{layout.SessionEnv + "=" + r.session}
	r.commit = r.newCommitter(repo, env, append(append(slices.Clip(ts.paths), left...), hidden...))
	if r.planIgnored, err = ignored, ignoredErr; err != nil {
		return fmt.Errorf("run: %w", err)
	}
	// Files only: no process unless husky wrote over wiggum's shims.
	if fixed, err := install.RepairHusky(repo); err != nil {
		return fmt.Errorf("run: put wiggum's git hooks back in front of husky's: %w", err)
	} else if len(fixed) > 0 {
		r.disp.printf("husky wrote its git hooks again since 'wiggum install --git' (an npm install?): wiggum's %s put back in front of them", strings.Join(fixed, ", "))
	}
	if r.planIgnored {
		r.disp.printf("the plan %s is ignored by git: stories are ticked in the file, not committed", r.planRel)
	}
	if len(ts.paths) > 0 {
		r.disp.printf("leaving %d pre-existing change(s) out of every commit: %s", len(ts.paths), summarize(ts.paths, 5))
	}
	if len(left) > 0 {
		r.disp.printf("leaving in the tree, out of every commit, what no commit of the loop's takes (a clone, a worktree of this repository, a new file over --max-file-size, as an earlier run left them): %s", summarize(left, 5))
	}
	if len(hidden) > 0 {
		r.disp.printf("leaving out of every commit the local changes git status does not show (skip-worktree, assume-unchanged), even if an agent takes the flag off: %s", summarize(hidden, 5))
	}
	return nil
}

// refuseDirty is the refusal of a tree with changes of its own (paths),
// saying for each kind what to do. A submodule is not a file to commit or
// stash: one with changed or new files of its own needs them committed in
// it first; one whose checkout is behind the commit HEAD records (a
// landing or a pull moved that commit, and the checkout did not follow)
// needs git submodule update - its files stashed around it, if it has any
// - for committing it as it is would record the older commit and undo
// that change; one at another commit is the person's to commit only if
// they moved it.
func refuseDirty(ctx context.Context, repo *git.Repo, now *git.Status, paths []string) error {
	subs := map[string]git.Change{}
	for _, c := range now.Changes {
		if c.Submodule && !c.Staged && !c.Unmerged {
			subs[c.Path] = c
		}
	}
	var plain, parts []string
	more := 0
	for _, p := range paths {
		c, ok := subs[p]
		switch {
		case !ok || !c.SubCommit && !c.SubModified && !c.SubUntracked:
			plain = append(plain, p)
		case len(parts) == 5:
			more++
		default:
			parts = append(parts, "submodule "+p+" "+submoduleAdvice(ctx, repo, p, c))
		}
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more submodule(s) (git submodule status)", more))
	}
	if len(plain) > 0 {
		parts = append([]string{fmt.Sprintf("the working tree has uncommitted changes (%s); commit or stash them", summarize(plain, 5))}, parts...)
	}
	return badinput.Errorf("run: %s, or pass --allow-dirty to leave them out of every commit the loop makes", strings.Join(parts, "; "))
}

// submoduleAdvice says what the submodule at p, changed as c says, has
// and what to do about it (refuseDirty).
func submoduleAdvice(ctx context.Context, repo *git.Repo, p string, c git.Change) string {
	dirty := c.SubModified || c.SubUntracked
	behind := c.SubCommit && submoduleBehind(ctx, filepath.Join(repo.Root, filepath.FromSlash(p)), c.HeadOID)
	switch {
	case dirty && !c.SubCommit:
		return fmt.Sprintf("has changes of its own, uncommitted in it: commit them there (git -C %s commit) and the submodule here (git add %s), or discard them there", p, p)
	case dirty && behind:
		return fmt.Sprintf("has changes of its own and is checked out behind the commit HEAD records for it: stash them there (git -C %s stash -u), run git submodule update -- %s, then git -C %s stash pop (committing it as it is would undo that change)", p, p, p)
	case dirty:
		return fmt.Sprintf("has changes of its own and is checked out at another commit than HEAD records for it: commit them there (git -C %s commit) and, if you moved it, the submodule here (git add %s)", p, p)
	case behind:
		return fmt.Sprintf("is checked out behind the commit HEAD records for it: run git submodule update -- %s (committing it as it is would undo that change)", p)
	}
	return fmt.Sprintf("is checked out at another commit than HEAD records for it: if you moved it, commit that (git add %s); if not, git submodule update -- %s returns it", p, p)
}

// submoduleBehind reports whether the submodule checked out at dir is at
// an ancestor of recorded, the commit its superproject's HEAD records.
func submoduleBehind(ctx context.Context, dir, recorded string) bool {
	ok, err := (&git.Repo{Root: dir}).OK(ctx, "merge-base", "--is-ancestor", "HEAD", recorded)
	return ok && err == nil
}

// neverCommitted lists the untracked paths in now that the loop's commits
// leave out whoever made them: a clone (a repository of its own with a
// remote, which git would record as a gitlink), a linked worktree of this
// repository (an agent's .worktrees/NAME) and a new file over
// --max-file-size. A run leaves them in the tree, saying so; they are no
// reason for the next run to refuse the tree as dirty.
func (r *run) neverCommitted(ctx context.Context, now *git.Status) []string {
	var left []string
	root := r.st.Repo.Root
	for _, p := range now.Untracked {
		full := filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(p, "/")))
		if strings.HasSuffix(p, "/") {
			gitDir := filepath.Join(full, ".git")
			fi, err := os.Lstat(gitDir)
			switch {
			case err != nil:
			case fi.IsDir() && cloneOf(ctx, r.st.Repo, gitDir) != "",
				fi.Mode().IsRegular() && git.InRepository(full, r.st.Repo.CommonDir):
				left = append(left, p)
			}
			continue
		}
		if r.opts.MaxFileSize <= 0 {
			continue
		}
		if fi, err := os.Lstat(full); err == nil && fi.Mode().IsRegular() && fi.Size() > r.opts.MaxFileSize {
			left = append(left, p)
		}
	}
	return left
}

// commitTick commits the plan after story was ticked in it, unless git
// ignores the plan or it was dirty before the run.
func (r *run) commitTick(ctx context.Context, story *plan.Story) (string, error) {
	if r.commit == nil {
		// During recovery, before preflight: the tree was clean apart
		// from what recovery itself put back.
		r.commit = r.newCommitter(r.st.Repo, []string{layout.SessionEnv + "=" + r.session}, nil)
		defer func() { r.commit = nil }()
	}
	switch {
	case r.planIgnored:
		return "", nil
	case r.commit.keepM[r.planRel]:
		r.disp.printf("  the plan %s had uncommitted changes before the run; marked %s done there but left it out of the commit", r.planRel, story.ID)
		return "", nil
	}
	return r.commit.commitPath(ctx, r.msg.tick(story), r.planRel, r.opts.Plan.Kind() == "issues")
}

// tickInTree says whether the story's tick goes into the commit with its
// work (the plan is tracked and was clean before the run).
func (r *run) tickInTree() bool {
	return !r.planIgnored && !r.commit.keepM[r.planRel]
}

func (r *run) event(name string, fields map[string]any) {
	fields["session"] = r.session
	if err := session.AppendEvent(r.st, name, fields); err != nil {
		r.eventsFailed(err)
	}
}

// eventsFailed says, once per run, that the event log could not be
// written (permissions, a full disk): without it the run was missing from
// watch and report without a word, which showed the run before as the
// last. A symbolic link in its place linkEvents has said already.
func (r *run) eventsFailed(err error) {
	if r.disp == nil || !r.eventsWarned.CompareAndSwap(false, true) {
		return
	}
	path := r.st.RuntimePath(layout.EventFile)
	if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return
	}
	cause := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		cause = pe.Err
	}
	r.disp.printf("warning: cannot write %s (%v): this run records no events from here on; watch and report will not see them", relPath(r.st.Repo.Root, path), cause)
}

func (r *run) begin(workers int) {
	w := ""
	if workers > 1 {
		w = fmt.Sprintf(" · %d workers", workers)
	}
	resumed := ""
	if r.resumed {
		resumed = " · resumed"
	}
	appendLine(r.logPath, fmt.Sprintf("\n## run %s · plan %s · agent %s%s%s", r.started.UTC().Format(time.RFC3339), r.planRel, commandLine(r.opts.Agent.Argv), w, resumed))
	fields := map[string]any{"plan": r.planRel, "agent": r.opts.Agent.Argv, "pid": os.Getpid(), "resumed": r.resumed,
		"branch": strings.TrimPrefix(r.branch, "refs/heads/")}
	if workers > 1 {
		fields["workers"] = workers
	}
	if r.resumed {
		// What the killed run spent, for a view that starts here.
		cost, in, out := r.led.spending()
		withUsage(fields, cost, in, out)
	}
	fields, r.atStart = planCounts(r.opts.Plan, fields)
	r.event("run_start", fields)
	r.linkEvents()
	r.traceStart(workers)
}

// finish reports the run's end and closes its journal when the run ended
// by itself; a run stopped by a signal, a usage limit, a full disk under
// its worktrees (NoRoomError) or an attempt it could not roll back
// (StuckError, or a rollback the rules refused) stays
// open, to be resumed, and so does a --remote run that keeps finished
// stories the server did not take (toLand): the next run lands them.
func (r *run) finish(ctx context.Context, err error) {
	spent, _, _ := r.led.spending()
	r.sum.Spent = spent
	r.sum.Resumed = r.resumed
	var b strings.Builder
	fmt.Fprintf(&b, "%d iteration(s): %d story(ies) done", r.sum.Iterations, len(r.sum.Completed))
	if len(r.sum.Unchanged) > 0 {
		fmt.Fprintf(&b, " (%s with no change by the agent)", strings.Join(r.sum.Unchanged, ", "))
	}
	if len(r.sum.Kept) > 0 {
		fmt.Fprintf(&b, ", %d kept, not merged (%s)", len(r.sum.Kept), strings.Join(r.sum.Kept, ", "))
	}
	if len(r.sum.Skipped) > 0 {
		fmt.Fprintf(&b, ", %d skipped (%s)", len(r.sum.Skipped), strings.Join(r.sum.Skipped, ", "))
	}
	// A skipped story, and a kept one, is still open in the plan (Left):
	// counted once.
	aside := map[string]bool{}
	for _, id := range slices.Concat(r.sum.Skipped, r.sum.Kept) {
		aside[id] = true
	}
	open := max(0, r.sum.Left-len(aside))
	fmt.Fprintf(&b, ", %d open", open)
	if spent > 0 {
		fmt.Fprintf(&b, "; %s", r.led.budgetNote())
	}
	if len(r.sum.Backups) > 0 {
		fmt.Fprintf(&b, "; work rolled back or rewritten is saved in %s (wiggum recover)", strings.Join(r.sum.Backups, ", "))
	}
	var stuck *StuckError
	// A full disk (a worktree that could not be made, a state file that
	// could not be written) leaves the journal open: once space is freed,
	// the next run resumes as after a crash.
	// An agent that could not be started, the same: once the system has
	// room.
	var unstarted *AgentNotStartedError
	resumable := DiskFull(err) || errors.As(err, &unstarted)
	unsigned := stoppedUncommitted(err)
	refused := refusedHere(err)
	if errors.Is(err, context.Canceled) || errors.As(err, &stuck) || unsigned != nil || resumable {
		fmt.Fprintf(&b, "; resume with: %s", resumeCommand(r.opts.Plan.Kind(), r.planRel, r.opts.Workers, r.remoteName()))
	}
	r.disp.printf("%s", b.String())
	r.lookMu.Lock()
	if len(r.lookAt) > 0 {
		r.disp.printf("to look at: %s (wiggum report lists them)", strings.Join(r.lookAt, "; "))
	}
	toLand := slices.Clone(r.toLand)
	r.lookMu.Unlock()
	kept := ""
	if len(toLand) > 0 {
		name := r.opts.Coordinator.Remote()
		kept = fmt.Sprintf("finished work not landed, kept for the next run: %s; run again when %s is reachable and accepts the landing (%s): it lands that work without running an agent on it again",
			strings.Join(toLand, ", "), name, resumeCommand(r.opts.Plan.Kind(), r.planRel, r.opts.Workers, name))
		r.disp.printf("%s", kept)
	}
	// open is the summary's count, so that watch, report and the
	// notifications say what the run said.
	fields := map[string]any{"iterations": r.sum.Iterations, "completed": r.sum.Completed, "skipped": r.sum.Skipped, "open": open, "cost_usd": spent}
	if open > 0 {
		if list := r.openStories(aside); len(list) > 0 {
			fields["open_stories"] = list
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		fields["error"] = events.InterruptedBy(signals.Name(signals.Caught(ctx)))
	case err != nil:
		fields["error"] = err.Error()
	}
	r.event("run_end", fields)
	r.traceEnd(err)
	var lim *limitStop
	if stuck != nil {
		_ = r.led.record(journalRec{T: "stuck", Story: stuck.Story, Note: stuck.Error()}, true)
	}
	if unsigned != nil {
		_ = r.led.record(journalRec{T: "stuck", Story: unsigned.Story, Note: err.Error()}, true)
	}
	if refused {
		_ = r.led.record(journalRec{T: "stuck", Note: err.Error()}, true)
	}
	if kept != "" {
		_ = r.led.record(journalRec{T: "stuck", Note: kept}, true)
	}
	if resumable && stuck == nil {
		_ = r.led.record(journalRec{T: "stuck", Note: err.Error()}, true)
	}
	if !errors.Is(err, context.Canceled) && !errors.As(err, &lim) && stuck == nil && unsigned == nil && !refused && kept == "" && !resumable {
		_ = r.led.record(journalRec{T: "close", Note: closeNote(err)}, true)
	}
	_ = session.ClearRun(r.st)
}

// maxOpenListed bounds the bytes of the open stories the run_end event
// names, well within a line of the log (events.MaxLine); its count of them
// goes on.
const maxOpenListed = 256 << 10

// openStories are the plan's open stories at the run's end but for those
// set aside (skipped, kept), for wiggum report to list the ones the run
// never reached; nil for a --remote run, whose open stories are the
// server's.
func (r *run) openStories(aside map[string]bool) []events.StoryRef {
	if r.opts.Coordinator != nil {
		return nil
	}
	stories, err := r.opts.Plan.Stories()
	if err != nil {
		return nil
	}
	var list []events.StoryRef
	size := 0
	for _, s := range stories {
		if s.Done || aside[s.ID] {
			continue
		}
		ref := events.StoryRef{ID: s.ID, Title: eventTitle(s.Title)}
		if size += len(ref.ID) + len(ref.Title) + 32; size > maxOpenListed {
			break
		}
		list = append(list, ref)
	}
	return list
}

// remoteName is the git remote a --remote run shares its plan through, ""
// for a run of this clone alone.
func (r *run) remoteName() string {
	if r.opts.Coordinator == nil {
		return ""
	}
	return r.opts.Coordinator.Remote()
}

// uncount takes story out of the run's count of stories done: its work
// did not land.
func (r *run) uncount(story string) {
	r.sumMu.Lock()
	defer r.sumMu.Unlock()
	if i := slices.Index(r.sum.Completed, story); i >= 0 {
		r.sum.Completed = slices.Delete(r.sum.Completed, i, i+1)
	}
}

// keptUnmerged counts story, finished, as kept rather than done: its
// branch could not land and is kept. The journal says so too, for wiggum
// status's account of the run (the resume reads nothing from it).
func (r *run) keptUnmerged(story, branch string) {
	_ = r.led.record(journalRec{T: "keptbranch", Story: story, Branch: branch}, false)
	r.uncount(story)
	r.sumMu.Lock()
	r.sum.Kept = append(r.sum.Kept, story)
	r.sumMu.Unlock()
}

// keepToLand records that story's finished work is kept on branch, in
// the worktree dir, for the next run to land - its landing failed with
// err - and notes it for the run's end.
func (r *run) keepToLand(story, branch, dir string, err error) {
	_ = r.led.record(journalRec{T: "kept", Story: story, Branch: branch, Note: err.Error()}, true)
	// Not done in this run's count: the next run lands it.
	r.uncount(story)
	r.lookMu.Lock()
	defer r.lookMu.Unlock()
	r.toLand = append(r.toLand, fmt.Sprintf("%s on %s (worktree %s)", story, branch, dir))
}

// toLookAt adds what, about story, to what the run's end names (lookAt).
func (r *run) toLookAt(story, what string) {
	r.lookMu.Lock()
	defer r.lookMu.Unlock()
	r.lookAt = append(r.lookAt, story+" "+what)
}

func closeNote(err error) string {
	if err == nil {
		return "done"
	}
	return err.Error()
}

func (r *run) logIteration(iter int, story *plan.Story, attempt int, result string, out outcome, backup string, took time.Duration, started time.Time, worker int) {
	// One event per iteration: run.json says what is running now, so the
	// log records only finished iterations (each append is a write under an flock).
	fields := map[string]any{"iteration": iter, "story": story.ID, "title": eventTitle(story.Title), "attempt": attempt,
		"outcome": result, "duration_ms": took.Milliseconds(), "started": started.UTC().Format(time.RFC3339Nano)}
	if worker > 0 {
		fields["worker"] = worker
	}
	line := fmt.Sprintf("- %s iteration %d · %s · %s · %s", time.Now().UTC().Format(time.RFC3339), iter, story.ID, result, took.Round(10*time.Millisecond))
	if out.commit != "" {
		fields["commit"] = out.commit
		line += " · commit " + out.commit
	}
	if out.empty {
		fields["empty"] = true
		line += " · the agent changed nothing"
	}
	if backup != "" {
		fields["backup"] = backup
		line += " · backup " + backup
	}
	if u := out.res; u != nil && withUsage(fields, u.Usage.CostUSD, u.Usage.InputTokens, u.Usage.OutputTokens) {
		line += " · " + u.Usage.String()
	}
	if out.detail != "" && !out.ok {
		line += " · " + out.detail
	}
	r.event("iteration_end", fields)
	appendLine(r.logPath, line)
}

// dyingWait bounds the wait for a killed run's agents to die, freeing the
// locks and leases they inherited.
const dyingWait = 15 * time.Second

// orphanGrace is how long a git a dead wiggum started may go on before the
// next run kills it: its SIGTERM came with that wiggum's death, and a git
// that heeds it is gone in milliseconds.
const orphanGrace = 2 * time.Second

// gate is the run's usage-limit pause: when any attempt reports a limit,
// no worker starts another until the reset.
type gate struct {
	mu     sync.Mutex
	until  time.Time
	leader bool // someone is showing the countdown
}

// pause closes the gate until reset (plus jitter, so many runs do not all
// return at once), or for a fixed back-off when the reset is unknown. It
// reports the time and whether the caller leads the wait.
func (g *gate) pause(reset time.Time) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if reset.IsZero() {
		reset = time.Now().Add(unknownResetWait)
	}
	// Jitter: a tenth of the wait, at most limitJitter.
	jitter := min(limitJitter, max(time.Until(reset)/10, time.Millisecond))
	until := reset.Add(time.Duration(rand.Int64N(int64(jitter))))
	if until.After(g.until) {
		g.until = until
	}
	lead := !g.leader
	g.leader = true
	return g.until, lead
}

// backoff is when to try again after a model-service outage: the wait
// the gate is closed for already, when it is (the other workers' attempts
// failing in the same outage join it), else the next step of the back-off,
// counted in outages.
func (g *gate) backoff(outages *atomic.Int32) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if time.Until(g.until) > 0 {
		return g.until
	}
	return time.Now().Add(outageWait(int(outages.Add(1))))
}

// wait blocks while the gate is closed.
func (g *gate) wait(ctx context.Context) error {
	for {
		g.mu.Lock()
		left := time.Until(g.until)
		g.mu.Unlock()
		if left <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, time.Second)):
		}
	}
}

// open reports whether the gate lets workers start now.
func (g *gate) open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Until(g.until) <= 0
}

func (g *gate) done() {
	g.mu.Lock()
	g.leader = false
	g.mu.Unlock()
}

// unknownResetWait is how long a run waits for a usage limit that did not
// say when it resets (a variable for the tests); limitJitter is added to
// every wait.
var unknownResetWait = 15 * time.Minute

const limitJitter = 30 * time.Second

// outageWait is how long a run waits before trying again after the n-th
// model-service outage in a row (n >= 1): 1, 2, 4, 8 minutes, then 15. The
// client has already retried for itself, so the first wait is not short;
// an outage that lasts is not hammered.
func outageWait(n int) time.Duration {
	return min(outageBase<<min(max(n-1, 0), 4), unknownResetWait)
}

// outageBase is the first outage's wait (a variable for the tests).
var outageBase = time.Minute

// limitStop is a run stopped by a usage limit without --wait-on-limit:
// work is left (exit 5), and the run stays open to be resumed.
type limitStop struct{ StopError }

func (e *limitStop) Unwrap() error { return &e.StopError }
