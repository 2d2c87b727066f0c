package loop

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/killpoint"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/install"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/lazyre"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/proc"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/internal/telemetry"
	"github.com/wiggum-dev/wiggum/internal/termtext"
)

// executor runs attempts at stories in one working tree - the main tree
// for the serial driver, a story's worktree for a parallel worker - and
// records them in the run: checkpoint, prompt, agent, gate, then commit or
// roll back. The drivers decide what happens between attempts.
type executor struct {
	run     *run
	st      *checkpoint.State // the tree the agent works in
	lock    *layout.Lock      // its lock (the main lock, or the worktree's lease)
	session string
	disp    *display
	commit  *committer
	// ticks: the story is marked done in the plan before the success
	// commit, so work and tick land in one commit (the main tree); false
	// for a worker, whose story the merge coordinator ticks in the main
	// tree.
	ticks bool
	// attemptStarted is when the current attempt began; attemptNo is its
	// number for its story.
	attemptStarted time.Time
	// indexAtStart: the index file's modification time and size once the
	// checkpoint was made (changedNothing).
	indexAtStart indexStat
	attemptNo    int
	storyID      string // the current attempt's story
	worktree     string // for the journal: "" in the main tree
	// worker numbers a parallel worker (1..N) in its events; 0 is serial.
	worker int
	branch string
	// attemptBranch is the branch the current attempt started on (its
	// checkpoint's; "" detached), which backToBranch keeps it on.
	attemptBranch string
	// attemptHead is the commit the current attempt started from (its
	// checkpoint's HEAD), which keepHistory keeps on the branch.
	attemptHead string
	// attemptCP is the checkpoint the current attempt started from, as
	// recorded (checkRails puts its record back when an agent deleted it).
	attemptCP *checkpoint.Checkpoint
	// planStart is the plan file as the attempt found it; wplan is a
	// worker's own copy of the plan (plan()).
	planStart *planAtStart
	wplan     plan.Plan
	// stashAtStart is the commits git's stash held when the attempt
	// started (nil when unknown).
	stashAtStart map[string]bool
	// worktreesAtStart: the linked worktrees git knew of when the attempt
	// began (worktreesMade).
	worktreesAtStart map[string]bool
	// made: the worktrees the attempt's agent made (worktreesMade), which
	// its rollback removes, saved first.
	made []madeWorktree
	// planAdded: the stories a worker's agent added to its worktree's plan
	// (planAtStart.settleWorkerPlan), for its landing to add to the run's
	// plan.
	planAdded *addedStories
	// refsAtStart is the branches and tags when the attempt started (nil
	// when unknown), for unref.
	refsAtStart map[string]string
	// headLogAtStart is the size of the tree's HEAD reflog when the
	// attempt started: what follows is the attempt's own (agentMoved).
	headLogAtStart int64
	span           *telemetry.Span // the current attempt's
	source         string          // what failed it, for its span
	// keep, when it says why (not ""), leaves an interrupted attempt as it
	// is rather than rolling it back: a shared story whose claim was lost
	// keeps the agent's commits on its branch (the worktree's removal
	// saves the rest).
	keep func() string
	// ran: this executor has run an agent attempt.
	ran bool
	// mux is the directory of its agents' multiplexer sockets
	// (ownMultiplexers).
	mux string
	// aside, for a parallel worker, sets its worktree aside when a failed
	// attempt's rollback is refused (worktree.Worker.SetAside); setAside
	// says it did: the worktree is gone, and the worker needs a new one.
	aside    func(ctx context.Context, why string) ([]string, error)
	setAside bool
	// reported is what the current attempt's usage record last said.
	reported agent.Usage
	// cleanHead, when not "", is the commit a worktree nobody has written
	// in yet is known to be clean at (on branch): the first attempt's
	// checkpoint records it without reading the tree.
	cleanHead string
	// unblocked lists the includes the current attempt left in git's
	// configuration that blocked every git, taken out since
	// (unblockConfig); "" when there were none.
	unblocked string
}

// startSave starts the attempt's checkpoint (StartSave); the first one in
// a worktree known clean needs no status.
func (e *executor) startSave(ctx context.Context) *checkpoint.Saving {
	if head := e.cleanHead; head != "" {
		e.cleanHead = ""
		return e.st.StartSaveClean(ctx, head, e.branch)
	}
	return e.st.StartSave(ctx)
}

// outcome of one attempt.
type outcome struct {
	ok      bool
	source  string // agent, timeout, idle, gate, commit, limit, stop
	command string
	output  string
	detail  string
	commit  string
	res     *agent.Result
	limit   *agent.Limit
	// unguarded: the agent ran shell commands that wiggum's guard hook
	// never saw; the run stops after the rollback.
	unguarded bool
	// lost: wiggum's supervisor of the agent was killed, and the agent
	// with it (proc.ErrSupervisorLost); the attempt counts as interrupted.
	lost bool
	// unstarted: the agent could not be started at all, for want of what
	// the system gives a process (the process limit, memory) or because
	// wiggum's supervisor ended before it could start it
	// (proc.StartError): no attempt of the story's, and the run stops.
	unstarted *proc.StartError
	// railsGone: the attempt broke the hooks in a way its rollback does not
	// undo (a settings file outside the tree, core.hooksPath); the run
	// stops after the rollback.
	railsGone string
	// startup: the attempt changed a shell startup file in the home
	// directory (agent.Rails.StartupChanged); the run stops after the
	// rollback, for the person to look at it.
	startup string
	// blocked: git cannot read its configuration, and wiggum could not
	// make it (unblockConfig); the run stops at once, with no rollback:
	// every git would hang.
	blocked error
	// passed: the attempt's pass is in the journal (its agent finished and
	// its checks passed); only its commit failed.
	passed bool
	// empty: the attempt passed having changed nothing git tracks.
	empty bool
	// others: the attempt failed on git work the commit journal says is
	// someone else's (othersWork): no hint to undo it.
	others bool
}

// step is what one attempt came to.
type step struct {
	done    bool
	limit   *agent.Limit // a usage limit; the attempt does not count
	skipped bool         // the story used its last attempt or its budget
	story   string
	// With a limit and --wait-on-limit: the gate is closed until then, and
	// lead says this attempt closed it (and shows the wait).
	until time.Time
	lead  bool
}

// attempt runs one attempt at story and records it. Errors stop the run: a
// refused rollback, a final condition of the agent's account, state that
// cannot be written; a signal returns context.Canceled.
func (e *executor) attempt(ctx context.Context, iter int, story *plan.Story) (res step, err error) {
	r := e.run
	started := time.Now()
	// The checkpoint's git starts first and reads the working tree while
	// this process writes its own records, which git does not see (they
	// are under the excluded runtime directory); the checkpoint is still
	// recorded after them, as before.
	saving := e.startSave(ctx)
	if err := e.writeRun(iter, story, started); err != nil {
		saving.Abandon()
		return step{}, err
	}
	attempt := r.led.failed(story.ID) + 1
	e.attemptStarted, e.attemptNo, e.reported = started, attempt, agent.Usage{}
	if e.worker > 0 {
		r.working(e.worker, &session.Worker{Story: story.ID, StoryTitle: story.Title, Iteration: iter,
			Attempt: attempt, Attempts: r.opts.Retries + 1, Started: started.UTC(), Worktree: e.worktree})
		defer r.working(e.worker, nil)
	}
	e.event("iteration_start", map[string]any{"iteration": iter, "story": story.ID, "title": eventTitle(story.Title),
		"attempt": attempt, "attempts": r.opts.Retries + 1, "worker": e.worker, "output": AgentLog(iter)})
	e.disp.printf("── iteration %d · %s: %s (attempt %d of %d)", iter, story.ID, termtext.Title(story.Title), attempt, r.opts.Retries+1)
	e.startAttempt(iter, story, attempt)
	defer func() { e.endAttempt(res, err) }()

	// The iteration's one fsync is the checkpoint's record: a power cut
	// must leave it whole (never a torn checkpoint.json for the resumed
	// run to trip on), and the rollback after it needs it. The journal
	// lines, the plan's tick, the run record and the events are not
	// synced: git's commit is the durable record of a done story.
	cp, err := saving.Finish(e.session, checkpoint.SaveOptions{})
	if err != nil {
		return step{}, err
	}
	e.attemptBranch, e.attemptHead, e.attemptCP = cp.Branch, cp.Head, cp
	e.indexAtStart = indexStamp(e.st.Repo)
	// A cut-off hook rollback's record left by an earlier run that was
	// itself stopped is that run's, whose attempt was rolled back when
	// this one resumed: not this attempt's failure.
	_, _ = session.UnfinishedHookRollbacks(e.st)
	// The tool calls earlier attempts' hooks took on (hooks.firstForCall)
	// are theirs: one file each, which would pile up over a long run.
	_ = os.RemoveAll(e.st.RuntimePath(layout.HookCallsDir))
	e.planStart = e.readPlan()
	e.stashAtStart = stashCommits(e.st.Repo)
	e.worktreesAtStart, e.made, e.planAdded = worktreeNames(e.st.Repo.CommonDir), nil, nil
	e.refsAtStart, _ = e.st.Repo.Refs(refPrefixes...)
	e.headLogAtStart = e.st.Repo.HeadReflogSize()
	// Informational until the agent has done something: a start lost to
	// a power cut leaves an attempt that had nothing to roll back.
	if err := r.led.record(journalRec{T: "start", Story: story.ID, Attempt: attempt, Iter: iter, Session: e.session,
		Commit: cp.Head, Worktree: e.worktree, Branch: e.branch, OnBranch: cp.Branch, Detached: cp.Branch == ""}, false); err != nil {
		return step{}, err
	}
	prompt, err := e.prompt(iter, story)
	if err != nil {
		return step{}, err
	}
	// A limit another worker hit while this one was getting ready.
	if err := r.gate.wait(ctx); err != nil {
		return step{}, err
	}
	e.disp.begin(fmt.Sprintf("%s (iteration %d)", story.ID, iter))
	out := e.run1(ctx, iter, story, prompt)
	e.disp.end()
	e.traceOutcome(story, out)
	if out.blocked != nil {
		// No end, and no rollback: its git would hang. The attempt
		// stays open in the journal, and the resumed run rolls it back.
		e.log(iter, story, attempt, "failed ("+out.source+"); not rolled back", out, "", time.Since(started))
		return step{}, &StuckError{Story: story.ID, Failure: "it left git unable to read its configuration", Err: out.blocked, Untried: true}
	}
	if !out.ok && out.passed {
		// The commit failed after the agent's work passed: when the
		// repository is why (see commitRefused), that is no failure of
		// the agent's, and rolling its work back to have another agent
		// redo it would fail the same way. The work stays, with the pass
		// in the journal.
		if err := e.commitRefused(context.WithoutCancel(ctx), iter, story, attempt, out, started); err != nil {
			return step{}, err
		}
	}
	first := !e.ran
	e.ran = true
	end := journalRec{T: "end", Story: story.ID, Attempt: attempt, Iter: iter}
	if out.res != nil {
		u := out.res.Usage
		end.Cost, end.In, end.Out = u.CostUSD, u.InputTokens, u.OutputTokens
	}

	if out.ok {
		killpoint.At("attempt-committed")
		end.Outcome, end.Commit = "done", out.commit
		if e.worktree != "" {
			end.Head = e.head(ctx)
		}
		// Not synced: git holds the durable record of a done story - a
		// resume after a power cut finds it ticked in the committed plan,
		// or a worker's branch merged or, if not yet, saved and retried.
		if err := r.led.record(end, false); err != nil {
			return step{}, err
		}
		killpoint.At("attempt-done")
		r.addCompleted(story.ID)
		if out.empty {
			r.sumMu.Lock()
			r.sum.Unchanged = append(r.sum.Unchanged, story.ID)
			r.sumMu.Unlock()
		}
		r.setLast("done")
		e.log(iter, story, attempt, "done", out, "", time.Since(started))
		empty := ""
		if out.empty {
			empty = " - the agent changed no tracked file and made no commit: ticked on its exit status alone"
		}
		e.disp.printf("✔ %s done in %s%s%s", story.ID, time.Since(started).Round(10*time.Millisecond), commitNote(out.commit), empty)
		return step{done: true}, nil
	}
	if out.limit == nil && ctx.Err() == nil {
		out.limit = limitIn(out)
	}
	if lim := out.limit; lim != nil && !lim.Outage && !lim.Reset.IsZero() && lim.Reset.Before(started) {
		// A reset already past when the attempt began (a skewed clock, a
		// limit the service has not lifted at its time): the limit is in
		// force all the same, and waiting until then was no wait at all -
		// a new session a second, each refused at once. It is taken as a
		// reset not given, and said so.
		lim.Message += fmt.Sprintf(" (the reset it gave, %s, has already passed)", lim.Reset.Local().Format("15:04 MST, Jan 2"))
		lim.Reset = time.Time{}
	}
	var held step
	if out.limit != nil && out.limit.Outage {
		if r.opts.WaitOnLimit && out.limit.Reset.IsZero() {
			out.limit.Reset = r.gate.backoff(&r.outages)
		}
	} else if out.res != nil {
		// The service answered (or the agent's failure was its own).
		r.outages.Store(0)
	}
	if out.limit != nil {
		// Every worker stops starting attempts now, before this one's
		// rollback: waiting at the gate, or not at all when the run stops.
		if r.opts.WaitOnLimit {
			held.until, held.lead = r.gate.pause(out.limit.Reset)
		} else {
			r.noDispatch.Store(true)
		}
	}
	// A story committed before the signal stays committed; only an
	// unfinished attempt is rolled back.
	if ctx.Err() != nil && out.limit == nil {
		end.Outcome, end.Source = "interrupted", "signal"
		return step{}, e.interrupted(iter, story, attempt, cp, end)
	}
	end.Source, end.Command, end.Detail = out.source, out.command, out.detail
	end.Output = session.Tail(out.output, 4<<10)
	if out.limit == nil && !out.unguarded && !out.lost && out.unstarted == nil && e.worktree == "" {
		// The failure, before its rollback: a kill during or after the
		// rollback must not cost the resumed run this attempt's count or
		// its failure context. Written, not synced, like the pass.
		fail := end
		fail.T = "fail"
		if err := r.led.record(fail, false); err != nil {
			return step{}, err
		}
		killpoint.At("attempt-failed")
	}
	backup, rerr := e.rollback(ctx, story, attempt, out)
	end.Backup = backup
	var stuck *StuckError
	if errors.As(rerr, &stuck) {
		// No end: the attempt stays open in the journal for the resume.
		e.log(iter, story, attempt, "failed ("+out.source+"); rollback failed", out, "", time.Since(started))
		return step{}, rerr
	}
	if refusedHere(rerr) {
		// No end either: the next run finds the attempt open and asks
		// its rollback again - refused, with the same way on, until the
		// person has done what it says. Closed, the next run went on
		// from the rewritten branch as if nothing had happened (a clean
		// tree), or took the attempt's leftovers for the person's.
		e.log(iter, story, attempt, "failed ("+out.source+"); rollback refused", out, "", time.Since(started))
		return step{}, rerr
	}
	if rerr != nil {
		end.Outcome = "failed"
		_ = r.led.record(end, true)
		return step{}, rerr
	}
	killpoint.At("attempt-rolled-back")
	if lim := out.limit; lim != nil {
		end.Outcome, end.Detail = "limit", lim.Message
		if err := r.led.record(end, true); err != nil {
			return step{}, err
		}
		e.log(iter, story, attempt, "usage limit", out, backup, time.Since(started))
		if lim.Outage {
			e.disp.printf("⏸ %s: %s; rolled back%s (not counted as a failed attempt)", story.ID, lim.Message, backupNote(backup))
			e.event("usage_limit", map[string]any{"story": story.ID, "message": lim.Message, "outage": true})
		} else {
			e.disp.printf("⏸ %s hit a usage limit: %s; rolled back%s (not counted as a failed attempt)", story.ID, lim.Message, backupNote(backup))
			e.event("usage_limit", map[string]any{"story": story.ID, "message": lim.Message, "reset": lim.Reset})
		}
		held.limit, held.story = lim, story.ID
		return held, nil
	}
	if out.unguarded {
		// The agent's setup failed, not its work: the attempt does not
		// count against the story, and its failure is no context for the
		// next prompt.
		end.Outcome = "hooks"
		if err := r.led.record(end, true); err != nil {
			return step{}, err
		}
		e.log(iter, story, attempt, "stopped: hooks did not run", out, backup, time.Since(started))
		e.disp.printf("✘ %s stopped: its hooks did not run; rolled back%s (not counted as a failed attempt)", story.ID, backupNote(backup))
		e.event("hooks_unseen", map[string]any{"story": story.ID, "shell_calls": out.res.ShellCalls})
		return step{}, &agent.UnusableError{Agent: r.opts.Agent.Name, Reason: out.detail}
	}
	if out.unstarted != nil {
		// The agent never ran: nothing of the story's was tried, and the
		// next attempt would fail the same way until the system has room.
		end.Outcome = "interrupted"
		if err := r.led.record(end, true); err != nil {
			return step{}, err
		}
		e.log(iter, story, attempt, "not started", out, backup, time.Since(started))
		e.disp.printf("⟲ %s: its agent could not be started; rolled back%s (not counted as a failed attempt)", story.ID, backupNote(backup))
		e.event("agent_not_started", map[string]any{"iteration": iter, "story": story.ID, "reason": out.unstarted.Error()})
		return step{}, &AgentNotStartedError{Story: story.ID, Err: out.unstarted}
	}
	if out.lost {
		// wiggum's own process was killed, not the agent's work judged:
		// as an interrupted attempt, it does not count against the story,
		// and its failure is no context for the next prompt.
		end.Outcome = "interrupted"
		if err := r.led.record(end, true); err != nil {
			return step{}, err
		}
		e.log(iter, story, attempt, "interrupted", out, backup, time.Since(started))
		e.disp.printf("⟲ %s interrupted: %s; rolled back%s (not counted as a failed attempt)", story.ID, out.detail, backupNote(backup))
		e.event("interrupted", map[string]any{"iteration": iter, "story": story.ID, "reason": out.detail})
		return step{}, nil
	}
	end.Outcome = "failed"
	r.setLast("failed: " + out.source)
	if err := r.led.record(end, true); err != nil {
		return step{}, err
	}
	_ = session.AppendFailure(r.st, session.Failure{
		Time: time.Now().UTC(), Story: story.ID, Iteration: iter, Source: out.source,
		Command: out.command, Output: session.Tail(out.output, 4<<10), Rollback: backup,
	})
	e.log(iter, story, attempt, "failed ("+out.source+")", out, backup, time.Since(started))
	undone := "rolled back"
	if e.setAside {
		undone = "its worktree set aside"
	}
	e.disp.printf("✘ %s failed: %s; %s%s", story.ID, out.detail, undone, backupNote(backup))
	if out.startup != "" {
		return step{}, fmt.Errorf("run: stopped: an attempt %s; no rollback reaches the home directory, and every later session's shell would run what it added: "+
			"look at the file (keep what you want, remove the rest), then run again to resume", out.startup)
	}
	if out.source == "commit" && branchRefusedIn(out.output) {
		// Every story's commit would be refused the same way: stop
		// before the next attempt, rather than roll back story after
		// story (the work is in its backup).
		e.event("commit_branch_refused", map[string]any{"story": story.ID, "hook": protectHook, "backup": backup})
		return step{}, &BranchRefusedError{Story: story.ID, Backup: backup, Branch: checkpoint.BranchName(e.attemptBranch), Output: out.output}
	}
	if out.railsGone != "" {
		return step{}, fmt.Errorf("run: stopped: an attempt %s, which its rollback does not undo, so the next one would work without wiggum's guard; "+
			"undo that ('wiggum status' shows where wiggum's hooks are; 'wiggum install' writes them again), then run again to resume", out.railsGone)
	}
	if why := finalCondition(out); why != "" {
		return step{}, &FinalError{Reason: why}
	}
	if first && out.res != nil && (out.res.Unstarted() || out.res.CannotStart()) {
		// An agent that fails its first attempt before doing anything (no
		// auth, an untrusted folder, a refusal; a command not found, or
		// not executable) fails every attempt the same way: stop now, in
		// its own words.
		e.event("agent_unusable", map[string]any{"story": story.ID, "exit_code": out.res.ExitCode})
		return step{}, out.res.Unusable(r.opts.Agent.Name)
	}
	if n := r.led.failed(story.ID); n > r.opts.Retries {
		e.disp.printf("  skipping %s after %d failed attempts", story.ID, n)
		e.event("story_skipped", map[string]any{"story": story.ID, "attempts": n})
		return step{skipped: true}, nil
	}
	if why := r.led.storyOver(story.ID); why != "" {
		e.disp.printf("  skipping %s: %s", story.ID, why)
		e.event("story_skipped", map[string]any{"story": story.ID, "budget": why})
		return step{skipped: true}, nil
	}
	return step{}, nil
}

// commitRefused says why git would not commit a passed attempt, when the
// reason is the repository's: git could not write to it (a full disk, a
// read-only file system, an I/O error: CommitWriteError), signing fails
// now (a key gone from its agent, a passphrase cache expired), or the
// user's commit-msg hook refuses the story's message. nil when none is
// why.
func (e *executor) commitRefused(ctx context.Context, iter int, story *plan.Story, attempt int, out outcome, started time.Time) error {
	r := e.run
	// A full disk shows in git's words, or only in what it left free:
	// git removes what it could not finish writing, and some of its
	// failures (a commit message it could not save) name no cause.
	full := almostFull(e.st.Repo.CommonDir)
	if full || repoWriteFailed(out.detail) && !canWrite(e.st.Repo.CommonDir) {
		e.log(iter, story, attempt, "passed; git could not write its commit", out, "", time.Since(started))
		e.event("commit_failed", map[string]any{"story": story.ID, "error": out.detail})
		e.disp.printf("✘ %s passed, but git could not write its commit; its work is left uncommitted", story.ID)
		return &CommitWriteError{passedWork: passedWork{Story: story.ID}, Full: full, Err: errors.New(out.detail)}
	}
	ctx, cancel := r.bounded(ctx)
	defer cancel()
	if r.st.Repo.Sign {
		if err := e.st.Repo.SignProbe(ctx); err != nil {
			e.log(iter, story, attempt, "passed; its commit could not be signed", out, "", time.Since(started))
			e.event("commit_unsigned", map[string]any{"story": story.ID, "error": signingWords(err)})
			e.disp.printf("✘ %s passed, but git could not sign its commit; its work is left uncommitted", story.ID)
			return &SigningError{passedWork: passedWork{Story: story.ID}, Err: err}
		}
	}
	msg := r.msg.story(story)
	err := checkMessage(ctx, e.st.Repo, msg)
	var refused *MessageRefusedError
	if !errors.As(err, &refused) {
		return nil
	}
	refused.Story = story.ID
	e.log(iter, story, attempt, "passed; the commit-msg hook refused its message", out, "", time.Since(started))
	e.event("commit_message_refused", map[string]any{"story": story.ID, "message": msg, "error": refused.Output})
	e.disp.printf("✘ %s passed, but the commit-msg hook refused its message %q; its work is left uncommitted", story.ID, msg)
	return refused
}

// run1 runs the agent and the gate, and commits on success.
func (e *executor) run1(ctx context.Context, iter int, story *plan.Story, prompt string) outcome {
	r := e.run
	// git variables wiggum was started with (git exports GIT_DIR to a
	// "!" alias run in a linked worktree) would point the agent's git, and
	// the gate's, at that repository and index instead of the tree the
	// attempt runs in: a parallel worker's commits landed on the main
	// tree's branch, from its index.
	env := append(git.WithoutRepoEnv(os.Environ()),
		layout.SessionEnv+"="+e.session,
		layout.RootEnv+"="+e.st.Repo.Root,
		"WIGGUM_STORY="+story.ID,
		"WIGGUM_ITERATION="+strconv.Itoa(iter),
		session.EventLogEnv+"="+r.st.Path(layout.RuntimeDir+"/"+layout.EventFile),
	)
	if e.worktree != "" {
		// The worktree sits inside the main tree: if the agent removes
		// its .git, its git must fail, not find the main repository.
		env = append(env, git.CeilingEnv(e.st.Repo.Root))
		// Every worktree shares git's stash: the shim shows this agent
		// the entries of its own branch (hooks.GitShim).
		env = append(env, layout.SharedStashEnv+"="+e.st.Repo.CommonDir)
		if target := strings.TrimPrefix(r.branch, "refs/heads/"); target != "" {
			env = append(env, layout.TargetBranchEnv+"="+target)
		}
	}
	env = git.WithConfig(env, git.NoAutoMaintenance...)
	// A worktree's git runs the main tree's hooks where it would find
	// none (worktree.withMainHooks): the agent's git too.
	env = git.WithConfig(env, e.st.Repo.Config...)
	// Nobody is there to answer: the agent runs with no terminal (its
	// supervisor starts it in a session of its own), and gpg and ssh
	// are not pointed at one either.
	env = git.UnattendedEnv(env)
	env = e.ownMultiplexers(env)
	if r.opts.GitShim != "" {
		env = prependPath(env, r.opts.GitShim)
		if os.Getenv(layout.AllowPushEnv) != "1" {
			// A push that goes round the shim (git by its full path)
			// and git's hooks (--no-verify) reaches the shim's other
			// name, which refuses it.
			env = git.WithConfig(env, git.NoPush...)
		}
	}
	actx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	var hc *hookCheck
	if r.opts.VerifyHooks {
		hc = e.newHookCheck(&env, stopAgent)
	}
	before := e.readRails(ctx)
	r.gitAtStartOnce.Do(func() { r.gitAtStart = before.git })
	obs := e.observe(iter, story.ID)
	defer obs.close()
	hold := e.lock.Dup()
	sandbox := e.watchSandbox()
	sp := e.span.Start(telemetry.SpanAgent, telemetry.Attrs{"wiggum.agent": r.opts.Agent.Name, "process.command_line": strings.Join(r.opts.Agent.Argv, " ")})
	res, err := agent.Run(actx, r.opts.Agent, agent.Options{
		Dir: e.st.Repo.Root, Env: env, Prompt: prompt,
		Timeout: r.opts.Timeout, IdleTimeout: r.opts.IdleTimeout, Grace: r.opts.Grace, Hold: hold,
		Line: obs.line, Event: obs.event, Pool: r.pool, ShellDone: hc.shellDone,
	})
	endProcess(sp, res, err)
	if hold != nil {
		hold.Close()
	}
	// The agent's processes are all gone: what its sandbox left now
	// stays (openai/codex#31599).
	e.takeBackSandbox(sandbox)
	cmd := commandLine(r.opts.Agent.Argv)
	// Before any git of wiggum's runs: an include of a FIFO in git's
	// configuration makes every one of them wait forever.
	if berr := e.unblockConfig(ctx); berr != nil {
		return outcome{source: "git", command: cmd, detail: berr.Error(), output: berr.Error(), res: res, blocked: berr}
	}
	if err != nil {
		o := outcome{source: "agent", command: cmd, detail: err.Error(), output: err.Error(), lost: errors.Is(err, proc.ErrSupervisorLost)}
		if errors.As(err, &o.unstarted) {
			// Its own words, not the supervisor's crash dump.
			o.detail = "its agent " + o.unstarted.Error()
			o.output = o.detail
		}
		return o
	}
	o := outcome{source: "agent", command: cmd, output: res.Output, res: res}
	// A git of the agent's killed mid-command (--timeout stopped the
	// agent, say) leaves its lock files, and git then refuses every
	// command of wiggum's that follows: the commit, the rollback, and the
	// run stopped. The agent's processes are all gone now.
	if stale := e.st.Repo.ClearStaleLocks(e.attemptBranch); len(stale) > 0 {
		paths := make([]string, len(stale))
		for i, l := range stale {
			paths[i] = l.Path
			e.disp.printf("  removed git's lock %s: no git that could hold it still runs (a git killed mid-command leaves it)", l)
		}
		e.event("git_lock_removed", map[string]any{"story": story.ID, "paths": paths})
	}
	cut := e.unfinishedHookRollbacks(story.ID)
	// Before anything reads, commits or rolls back the tree: nothing half
	// done in git, and on the attempt's branch.
	left, berr := e.leftInGit(ctx)
	if berr != nil {
		left = "the agent left git half way through something that wiggum could not undo: " + berr.Error()
	}
	if left == "" {
		left, berr = e.backToBranch(ctx, e.attemptBranch)
		var others *othersWork
		switch {
		case errors.As(berr, &others):
			left, o.others = others.Error(), true
		case berr != nil:
			left = "the agent switched branches and wiggum could not bring the attempt back to its branch: " + berr.Error()
		}
	}
	// Said with the outcome: a passed attempt leaves them to the person,
	// a failed one's rollback removes them (removeMade).
	e.made = nil
	for _, m := range e.worktreesMade(ctx) {
		fields := map[string]any{"story": story.ID, "paths": []string{m.Path}, "branch": m.Branch, "commits": m.Ahead}
		if m.Stray {
			// Perhaps another worker's: named now, whatever the
			// outcome, and never rolled back.
			fields["stray"] = true
			e.disp.printf("  %s", m.say())
		} else {
			e.made = append(e.made, m)
		}
		e.event("worktree_made", fields)
	}
	if e.worktree != "" {
		// A worker's plan is the loop's to tick, in the main tree: the
		// agent's tick of its own story there would only be left over,
		// uncommitted, and saved as "work" when the worktree goes; the
		// stories it added go to that plan with its landing.
		e.planAdded = e.planStart.settleWorkerPlan(e.plan(), story.ID)
	}
	lost, gone, startup := e.checkRails(ctx, before)
	o.railsGone, o.startup = gone, startup
	if left != "" {
		o.source, o.detail, o.output = "git", left, left
		return o
	}
	if hc.missed(res) && ctx.Err() == nil {
		o.source, o.unguarded = "hooks", true
		o.detail = hc.reason(res)
		return o
	}
	switch {
	case res.Limit != nil:
		o.source, o.detail, o.limit = "limit", res.Limit.Message, res.Limit
		return o
	case res.Stopped == agent.StopTimeout:
		o.source, o.detail = "timeout", fmt.Sprintf("the agent ran longer than --timeout %s and was stopped", r.opts.Timeout)
		return o
	case res.Stopped == agent.StopIdle:
		o.source, o.detail = "idle", fmt.Sprintf("the agent printed nothing for --idle-timeout %s and was stopped", r.opts.IdleTimeout)
		return o
	case res.Stopped != "" || ctx.Err() != nil:
		o.source, o.detail = "stop", "interrupted"
		return o
	case res.ExitCode != 0:
		o.detail = fmt.Sprintf("the agent exited with status %d", res.ExitCode)
		return o
	}
	if lost != "" {
		o.source = "guard"
		o.detail = "the attempt " + lost + "; leave wiggum's hooks and the agents' hook settings as they are"
		o.output = o.detail
		return o
	}
	if cut != nil {
		o.source, o.output = "test-hook", cut.Output
		o.detail = fmt.Sprintf("a test run failed during the attempt (%s) and the agent's hook was stopped before its rollback finished (the agent's hook timeout, or the OOM killer), so the tree may be half rolled back", oneLine(cut.Command, 200))
		return o
	}
	if f := e.unrolledTestFailure(story.ID); f != nil {
		o.source, o.output = "test-hook", f.Output
		o.detail = fmt.Sprintf("a test run failed during the attempt (%s) and could not be rolled back then (%s)", oneLine(f.Command, 200), f.Rollback)
		return o
	}
	if f := e.rolledBackTestFailure(story.ID); f != nil && e.nothingSinceRollback(ctx) {
		o.source, o.output = "test-hook", f.Output
		o.detail = fmt.Sprintf("a test run failed during the attempt (%s) and the agent's hook rolled the work back; the agent changed nothing after that, so the story has none of its work", oneLine(f.Command, 200))
		return o
	}
	e.reportedUsage(iter, story.ID, res.Usage)
	killpoint.At("agent-exited")
	if r.opts.TestCmd != "" {
		e.disp.printf("  gate: %s", r.opts.TestCmd)
		sp := e.span.Start(telemetry.SpanGate, telemetry.Attrs{"process.command_line": r.opts.TestCmd})
		gate, err := agent.Run(ctx, agent.Profile{Name: "gate", Argv: []string{"sh", "-c", r.opts.TestCmd}}, agent.Options{
			Dir: e.st.Repo.Root, Env: gateEnv(env), Timeout: r.opts.Timeout, Grace: r.opts.Grace,
			Line: obs.line, Pool: r.pool,
		})
		endProcess(sp, gate, err)
		if err != nil {
			return outcome{source: "gate", command: r.opts.TestCmd, detail: err.Error(), output: err.Error(), res: res}
		}
		if ctx.Err() != nil {
			return outcome{source: "stop", detail: "interrupted", res: res}
		}
		if gate.ExitCode != 0 || gate.Stopped != "" {
			detail := fmt.Sprintf("--test-cmd exited with status %d", gate.ExitCode)
			if gate.Stopped == agent.StopTimeout {
				detail = "--test-cmd ran longer than --timeout"
			}
			return outcome{source: "gate", command: r.opts.TestCmd, output: gate.Output, detail: detail, res: res}
		}
	}
	if r.opts.KeepTests {
		if o, failed := e.keptTests(ctx, res); failed {
			return o
		}
	}
	if w := e.workElsewhere(ctx); w != "" {
		return outcome{source: "worktree", detail: w, output: w, res: res}
	}
	// From here on the iteration completes even if a signal arrives: a
	// half-made commit helps nobody.
	cctx := context.WithoutCancel(ctx)
	e.disp.phase("committing (git hooks run)")
	if left, others, err := e.keepHistory(cctx); err != nil || left != "" {
		if err != nil {
			left = "the agent rewrote commits made before its attempt and wiggum could not put them back: " + err.Error()
		}
		return outcome{source: "git", detail: left, output: left, res: res, others: others}
	}
	if kept := e.cleanAgentCommits(cctx); kept != "" {
		return outcome{source: "git", detail: kept, output: kept, res: res}
	}
	if err := e.passed(cctx, iter, story, res); err != nil {
		return outcome{source: "commit", command: "git commit", detail: err.Error(), output: err.Error(), res: res}
	}
	killpoint.At("attempt-passed")
	agentHead := e.head(cctx)
	empty := e.changedNothing(agentHead)
	// The agent's git add or commit changed the index: it may hold a
	// gitlink that the commit's own add would not name.
	e.commit.mayBeStaged = e.indexAtStart == (indexStat{}) || indexStamp(e.st.Repo) != e.indexAtStart
	e.commit.linkBase = e.attemptHead
	sha, err := e.commitWork(cctx, story)
	for i := range e.made {
		m := &e.made[i]
		moved := ""
		if e.worktree != "" && err == nil {
			moved = e.moveOut(cctx, m) // before say: it names where m is now
		}
		line := m.say()
		if moved != "" {
			line += "; " + moved
		}
		e.disp.printf("  %s", line)
	}
	for _, n := range e.commit.repos {
		e.disp.printf("  %s", n.say(e.worktree != ""))
		fields := map[string]any{"story": story.ID, "paths": []string{n.Path}, "worker": e.worker}
		for k, v := range map[string]string{"aside": n.Aside, "url": n.URL, "reason": n.Why} {
			if v != "" {
				fields[k] = v
			}
		}
		e.run.event("nested_repo", fields)
	}
	if len(e.commit.hookFixed) > 0 {
		e.disp.printf("  the pre-commit hook changed %s and failed the commit, as formatters do: staged its changes and committed again", summarize(e.commit.hookFixed, 5))
	}
	large := e.commit.leftLarge()
	for _, f := range large {
		where := "it stays in the tree"
		if e.worktree != "" {
			where = "its worktree's backup keeps it (wiggum recover)"
		}
		what := "not committed - a commit would keep it in the history for good, and git hosts refuse large files (GitHub: over 100 MB)"
		if f.Committed {
			what = "the agent committed it, and the story's commit takes it out of the tree again; the agent's commit keeps it in the history (git log --stat -- " + f.Path + ")"
		}
		e.disp.printf("  %s (%s) is a new file over --max-file-size %s: %s; %s. Commit it with git lfs, or raise --max-file-size", f.Path, megabytes(f.Size), megabytes(e.commit.maxNew), what, where)
		e.run.event("file_left_out", map[string]any{"story": story.ID, "paths": []string{f.Path}, "bytes": f.Size, "worker": e.worker})
	}
	for _, d := range e.commit.deps {
		e.sayLeftOut(story, d, d.say())
	}
	if len(e.commit.rawLFS) > 0 && err == nil {
		e.disp.printf("  %s", rawLFSNote(e.commit.rawLFS))
	}
	if h := e.commit.hiddenBy(cctx, e.attemptHead, e.attemptStarted); len(h) > 0 && err == nil {
		e.disp.printf("  the attempt's .gitignore change hides %d path(s) it made from git, so they are not in the story's commit: %s - if they are the story's work, narrow the rule (git check-ignore -v %s says which)", len(h), summarize(h, 5), h[0])
		e.event("work_ignored", map[string]any{"story": story.ID, "paths": h, "commit": sha})
	}
	if t := e.commit.deletedTests; len(t) > 0 && err == nil {
		// Not a failure - a story may remove a feature and its tests -
		// but the commonest way an agent makes a test run pass without
		// doing the work, and the person should look.
		e.disp.printf("  the attempt deleted %d test file(s): %s - a story done by taking its tests away is not done; look at what it changed (git diff --stat %.*s HEAD)", len(t), summarize(t, 5), shortID, e.attemptHead)
		e.event("tests_deleted", map[string]any{"story": story.ID, "paths": t, "commit": sha})
		e.run.toLookAt(story.ID, "deleted tests ("+summarize(t, 3)+")")
	}
	if err == nil && (len(e.commit.touchedTests) > 0 || agentHead != e.attemptHead) && e.attemptHead != "" {
		// Read only when the commit names a test file or the agent
		// committed: one git diff of those files.
		var only []string
		if agentHead == e.attemptHead {
			only = e.commit.touchedTests
		}
		if off, oerr := switchedOffSince(cctx, e.st.Repo, e.attemptHead, "HEAD", only); oerr == nil && len(off) > 0 {
			paths, what := describeSwitchedOff(off)
			e.disp.printf("  the attempt switched tests off: %s - a story made to pass by skipping its tests is not done; look at what it changed (git diff %.*s HEAD -- %s)", what, shortID, e.attemptHead, paths[0])
			e.event("tests_skipped", map[string]any{"story": story.ID, "paths": paths, "reason": what, "commit": sha})
			e.run.toLookAt(story.ID, "switched tests off ("+summarize(paths, 3)+")")
		}
	}
	if e.commit.depsErr != nil {
		e.disp.printf("  .git/info/exclude could not get the rules for them (%v): each later commit leaves them out again", e.commit.depsErr)
	}
	for _, p := range e.commit.nested {
		if m := e.madeAt(p); m != nil && m.Dir != m.Made {
			continue // moved out of the worker's worktree: said above
		}
		e.disp.printf("  %s/ is a worktree of this repository (a subagent's?): not committed - a gitlink would hold none of its work; it stays where it is", p)
	}
	if err != nil {
		return outcome{source: "commit", command: "git commit", detail: err.Error(), output: err.Error(), res: res, passed: true}
	}
	subs := e.uncommittedSubmodules(cctx)
	for _, p := range subs {
		where := "left in the tree (git -C " + p + " status)"
		if e.worktree != "" {
			where = "saved when its worktree is removed, as said then"
		}
		e.disp.printf("  the agent changed files in submodule %s without committing there: not in the story's commit, %s", p, where)
		e.run.toLookAt(story.ID, "changed files in submodule "+p+", uncommitted there")
	}
	if len(subs) > 0 {
		e.event("submodule_uncommitted", map[string]any{"story": story.ID, "paths": subs, "commit": sha})
	}
	if e.planAdded != nil {
		e.run.addedMu.Lock()
		if e.run.added == nil {
			e.run.added = map[string]*addedStories{}
		}
		e.run.added[story.ID] = e.planAdded
		e.run.addedMu.Unlock()
	}
	// What the commit left out (a clone, a large file) is a change too,
	// and so is a worktree the agent made.
	empty = empty && e.commit.staged == 0 && len(e.commit.repos)+len(large)+len(e.commit.nested)+len(e.made)+len(subs) == 0
	return outcome{ok: true, commit: sha, res: res, empty: empty}
}

// keptTests fails the attempt (--keep-tests) when its changes - in the
// tree, staged, or in the agent's own commits - delete a test file (one
// git diff against the attempt's start, whose renames are no deletion) or
// switch tests off in one (testsSwitchedOff: one git diff more).
func (e *executor) keptTests(ctx context.Context, res *agent.Result) (outcome, bool) {
	if e.attemptHead == "" {
		return outcome{}, false
	}
	gone, err := e.deletedTests(ctx)
	if err != nil {
		return outcome{source: "tests", detail: "--keep-tests could not read what it deleted: " + err.Error(), output: err.Error(), res: res}, true
	}
	if len(gone) > 0 {
		e.event("tests_deleted", map[string]any{"paths": gone, "refused": true})
		detail := fmt.Sprintf("it deleted %d test file(s) (%s), which --keep-tests keeps", len(gone), summarize(gone, 5))
		return outcome{source: "tests", command: "git diff --diff-filter=D", detail: detail, res: res,
			output: fmt.Sprintf("The previous attempt deleted these test files: %s. They stay: bring them back (git checkout %.*s -- FILE) and make them pass by doing the story's work; change a test only where the story asks for it.", strings.Join(gone, ", "), shortID, e.attemptHead)}, true
	}
	off, err := switchedOffSince(ctx, e.st.Repo, e.attemptHead, "", nil)
	if err != nil {
		return outcome{source: "tests", detail: "--keep-tests could not read what it changed in the tests: " + err.Error(), output: err.Error(), res: res}, true
	}
	if len(off) == 0 {
		return outcome{}, false
	}
	paths, what := describeSwitchedOff(off)
	e.event("tests_skipped", map[string]any{"paths": paths, "reason": what, "refused": true})
	return outcome{source: "tests", command: "git diff -U0", detail: "it switched tests off - " + what + " - which --keep-tests keeps on", res: res,
		output: fmt.Sprintf("The previous attempt switched tests off: %s. They stay on: take the skip out, put back the tests it removed (git diff %.*s -- FILE shows what changed) and make them pass by doing the story's work; change a test only where the story asks for it.", what, shortID, e.attemptHead)}, true
}

// deletedTests lists the test files the attempt's changes delete (for
// keptTests): renames are no deletion, nor is a test moved by hand.
func (e *executor) deletedTests(ctx context.Context) ([]string, error) {
	out, err := e.st.Repo.Run(ctx, "diff", "--name-only", "-z", "-M", "--diff-filter=D", e.attemptHead)
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, p := range git.SplitZ(out) {
		if isTestFile(p) {
			gone = append(gone, p)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	// A test moved by hand (mv, no git add yet) is a deletion to git's
	// diff of the tracked files: the same name among the new untracked
	// files is a move. One process more, only when a test looks deleted.
	if untracked, err := e.st.Repo.Run(ctx, "ls-files", "--others", "--exclude-standard", "-z"); err == nil {
		names := map[string]bool{}
		for _, p := range git.SplitZ(untracked) {
			names[path.Base(p)] = true
		}
		gone = slices.DeleteFunc(gone, func(p string) bool { return names[path.Base(p)] })
	}
	return gone, nil
}

// multiplexerEnv are the variables that name the person's terminal
// multiplexer session (tmux, screen, zellij): a client started with them
// talks to that session's server.
var multiplexerEnv = []string{"TMUX", "TMUX_PANE", "STY", "ZELLIJ", "ZELLIJ_SESSION_NAME", "ZELLIJ_PANE_ID"}

// ownMultiplexers keeps the person's terminal multiplexers out of the
// agent's (and the gate's) reach. A window opened in their tmux or screen
// runs as that server's child, not the agent's: no process group or
// subreaper of wiggum's holds it, and it runs on after the attempt and
// after the run, the lock free (a push then meets no session). env
// names no session of theirs, and points the socket directories at one
// of the run's own: a server the agent starts is its own descendant,
// reaped with it. A client given a socket path outright (tmux -S) is not
// held back. The directory is the executor's own, short (see mux.go),
// made again if an agent removed it.
func (e *executor) ownMultiplexers(env []string) []string {
	env = slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(multiplexerEnv, name) || name == "TMUX_TMPDIR" || name == "SCREENDIR" || name == "ZELLIJ_SOCKET_DIR"
	})
	if e.mux != "" {
		if fi, err := os.Lstat(e.mux); err != nil || !fi.IsDir() {
			e.mux = ""
		}
	}
	if e.mux == "" {
		dir, err := e.run.agentMuxDir()
		if err != nil {
			// Under the tree, made private (screen refuses a SCREENDIR
			// others can read): at a deep path, or if it cannot be
			// made, the agent's tmux fails to start, reaching no one.
			dir = e.st.Path(layout.RuntimeDir + "/" + layout.MuxDir)
			if err := os.MkdirAll(dir, 0o700); err == nil {
				os.Chmod(dir, 0o700)
			}
		}
		e.mux = dir
	}
	return append(env, "TMUX_TMPDIR="+e.mux, "SCREENDIR="+e.mux, "ZELLIJ_SOCKET_DIR="+e.mux)
}

// gateEnv is env for --test-cmd: with CI=true unless the person set CI
// (to something: an empty CI is no setting to tools). Test runners read
// it as "nobody is watching": Create React App's npm test, and Jest's
// --watch it adds, otherwise watch the files for ever -
// every attempt's gate ran until --timeout (an hour by default) and
// failed - and package managers and build tools stop asking questions
// and drawing spinners.
func gateEnv(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "CI=") && kv != "CI=" {
			return env
		}
	}
	return append(env[:len(env):len(env)], "CI=true")
}

// uncommittedSubmodules lists, after the commit of an attempt that
// passed, the submodules its agent left with changed or new files of
// their own: git records a submodule only as the commit its checkout is
// at, so that work is in no commit here (git add cannot take it) and
// stays in the checkout - which the next run finds dirty. One that had
// such changes when the attempt began is not the agent's to name. A
// tree with no .gitmodules has no submodule to look at: no process.
func (e *executor) uncommittedSubmodules(ctx context.Context) []string {
	if _, err := os.Lstat(filepath.Join(e.st.Repo.Root, ".gitmodules")); err != nil {
		return nil
	}
	st, err := e.st.Repo.Status(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range st.UncommittedInSubmodules() {
		if e.attemptCP == nil || !slices.Contains(e.attemptCP.Submodules, p) {
			out = append(out, p)
		}
	}
	return out
}

// changedNothing reports, before the commit of an attempt that passed,
// whether its agent made no commit (HEAD, read from git's files, is where
// the attempt began) and staged nothing (the index file is as the
// checkpoint left it; written for any other reason - an agent's git
// status refreshing it - it only makes the answer false, never a wrong
// true). With the commit's add staging nothing but the plan, the agent
// changed nothing git tracks, and the run says its story was ticked on
// its exit status alone (an agent that found the work done, or did none).
// It costs no git process.
func (e *executor) changedNothing(head string) bool {
	return head != "" && head == e.attemptHead && e.indexAtStart != (indexStat{}) && indexStamp(e.st.Repo) == e.indexAtStart
}

// workElsewhere says why an attempt that did the story's work only in a
// worktree of the agent's own (Claude Code's EnterWorktree, a git
// worktree add) has not done it: the loop does not land that worktree, so
// a tick would mark the story done with none of its work. "" when the
// agent made no such worktree holding work (nearly always: no git runs
// then), or changed something in the attempt's own tree - its commits,
// a change to a file other than the plan's - which the story's commit
// takes.
func (e *executor) workElsewhere(ctx context.Context) string {
	var with []string
	for _, m := range e.made {
		if m.Ahead > 0 || m.Dirty > 0 {
			with = append(with, m.Path)
		}
	}
	if len(with) == 0 || e.attemptHead == "" || e.head(ctx) != e.attemptHead {
		return ""
	}
	st, err := e.st.Repo.Status(ctx)
	if err != nil {
		return ""
	}
	planFile := ""
	if p := e.plan(); p != nil {
		planFile = p.Path()
	}
	for _, p := range st.Paths() {
		if filepath.Join(e.st.Repo.Root, filepath.FromSlash(p)) == planFile || git.IsState(p) {
			continue
		}
		holds := false // the made worktree itself, or a directory of nothing else
		for _, m := range e.made {
			d := filepath.ToSlash(m.Path) + "/"
			holds = holds || strings.HasPrefix(d, strings.TrimSuffix(p, "/")+"/")
		}
		if !holds {
			return ""
		}
	}
	return "it did the story's work in a worktree of its own (" + strings.Join(with, ", ") + "), which the loop does not land, and none in the working tree the story is committed from: do the work here, in " + e.st.Repo.Root + ", not in a worktree of your own"
}

// indexStat is what changedNothing compares of the index file.
type indexStat struct {
	mod  time.Time
	size int64
}

// indexStamp is the index file's indexStat; zero when it cannot be read.
func indexStamp(repo *git.Repo) indexStat {
	fi, err := os.Stat(filepath.Join(repo.GitDir, "index"))
	if err != nil {
		return indexStat{}
	}
	return indexStat{fi.ModTime(), fi.Size()}
}

// rails is what makes wiggum's hooks run for an attempt: the agent's hook
// settings (only for a built-in agent whose hooks are installed) and the
// repository's git hooks.
type rails struct {
	agent agent.Rails
	git   install.GitRails
}

func (e *executor) readRails(ctx context.Context) rails {
	var r rails
	home, _ := os.UserHomeDir()
	if e.run.opts.VerifyHooks {
		r.agent = agent.RailsOf(e.run.opts.Agent.Name, e.st.Repo.Root, home)
	} else {
		// No hooks to check, but wiggum's own gate reads the tools'
		// configs whatever the agent.
		r.agent = agent.ToolRailsOf(home)
	}
	// Read after an interrupt too: what the attempt planted in the git
	// config is taken out before wiggum's own git runs.
	r.git = install.GitRailsOf(context.WithoutCancel(ctx), e.st.Repo)
	if r.git.ConfigErr() != nil {
		// A read that failed for a moment (a process or file limit hit,
		// a git killed) is tried once more: with one side unknown,
		// nothing of the config is compared or put back.
		r.git = install.GitRailsOf(context.WithoutCancel(ctx), e.st.Repo)
	}
	return r
}

// unblockConfig takes out of git's configuration the includes the
// attempt left that name a file git blocks opening (install.Unblock: a
// FIFO, a device), and says so; checkRails fails the attempt for them.
// An error means git still cannot read its configuration: the run must
// stop before any git of wiggum's, each of which would wait forever.
func (e *executor) unblockConfig(ctx context.Context) error {
	e.unblocked = ""
	blocked, taken, err := install.Unblock(context.WithoutCancel(ctx), e.st.Repo)
	if err != nil {
		return fmt.Errorf("%w; until then every git on the repository waits forever", err)
	}
	if blocked == nil {
		return nil
	}
	e.unblocked = strings.Join(taken, "; ")
	e.disp.printf("  %v", blocked)
	e.disp.printf("  taken out of the git config: %s", e.unblocked)
	return nil
}

// checkRails compares the rails after the agent with before. It puts back
// git hooks the attempt removed or changed (git hooks are not in the
// tree: no rollback brings them back). lost says what the attempt broke,
// for its failure; gone what its rollback cannot undo - a settings file
// outside the tree, core.hooksPath - for which the run must stop.
//
// startup says which shell startup file in the home directory the attempt
// changed: that fails it too, and the run must stop for the person to look.
func (e *executor) checkRails(ctx context.Context, before rails) (lost, gone, startup string) {
	after := e.readRails(ctx)
	var parts, putBack []string
	if startup = before.agent.StartupChanged(after.agent); startup != "" {
		parts = append(parts, startup)
	}
	if f, what := before.agent.GoEnvChanged(after.agent); what != "" {
		// Outside the tree, no rollback reaches it; go env -w wrote it,
		// and it is written back.
		parts = append(parts, what)
		if err := before.agent.RestoreGoEnv(); err != nil {
			gone = what + " (and putting it back failed: " + err.Error() + ")"
		} else {
			e.disp.printf("  %s: put back as before the attempt", f)
		}
	}
	if what, files := before.agent.Broken(after.agent); what != "" {
		parts = append(parts, what)
		for _, f := range files {
			if rel, err := filepath.Rel(e.st.Repo.Root, f); err != nil || !filepath.IsLocal(rel) {
				gone = what
			}
		}
		// The files in the tree are put back as they were, ignored ones
		// too (which no rollback restores).
		fixed, err := before.agent.Restore(after.agent, e.st.Repo.Root)
		switch {
		case err != nil:
			gone = what + " (and putting the settings back failed: " + err.Error() + ")"
		case len(fixed) > 0:
			e.disp.printf("  %s: put back as before the attempt", strings.Join(fixed, ", "))
		}
	}
	// The session's own files: a lock file deleted or replaced would let
	// another wiggum take the lock, and the hooks find no session. The
	// main tree's lock is every worker's; a worker is blamed only for its
	// worktree's lease.
	locks := []*layout.Lock{e.lock}
	if e.run.lock != e.lock {
		locks = append(locks, e.run.lock)
	}
	for i, l := range locks {
		if l == nil {
			continue
		}
		fixed, err := l.Keep()
		switch {
		case err != nil:
			parts = append(parts, "deleted or replaced wiggum's agent lock file")
			gone = "deleted or replaced wiggum's agent lock file, and another process holds the new one (" + err.Error() + ")"
		case len(fixed) > 0:
			if i == 0 {
				parts = append(parts, "deleted or replaced "+fixed.String())
			}
			e.disp.printf("  %s deleted or replaced during the attempt: locked and written again", fixed)
			putBack = append(putBack, fixed...)
		}
	}
	// A checkpoint the agent took itself (wiggum checkpoint, with the
	// session's token): part of the session, no tampering; the attempt's
	// own is the rollback point again for the run's commit or rollback.
	e.reclaimCheckpoint(ctx)
	// The checkpoint record, which the same deletion takes (rm -rf
	// .ralph): without it the failed attempt's rollback is refused and
	// the run stops. wiggum's checkpoint ref, outside the tree, says
	// whether the record the loop made is still the checkpoint.
	if ok, err := e.st.Reinstate(context.WithoutCancel(ctx), e.attemptCP); err != nil {
		e.disp.printf("  could not put back the checkpoint record the attempt deleted: %v", err)
	} else if ok {
		record := layout.RuntimeDir + "/" + layout.CheckpointFile
		parts = append(parts, "deleted or changed wiggum's checkpoint record")
		putBack = append(putBack, record)
		e.disp.printf("  the checkpoint record %s was deleted or changed during the attempt: put back from wiggum's checkpoint ref", record)
	}
	// The run's journal, which a resume after a crash reads.
	if ok, err := e.run.led.keepJournal(); err != nil {
		e.disp.printf("  could not put back the run journal the attempt deleted: %v", err)
	} else if ok {
		journal := layout.RuntimeDir + "/" + JournalFile
		putBack = append(putBack, journal)
		e.disp.printf("  the run journal %s was deleted or replaced during the attempt: put back with every record", journal)
	}
	// The run's event log, which report and watch read (a worker's
	// attempt works in its own worktree, away from it).
	if e.worktree == "" {
		if ok, err := e.run.keepEvents(); err != nil {
			e.disp.printf("  could not put back the event log the attempt deleted: %v", err)
		} else if ok {
			events := layout.RuntimeDir + "/" + layout.EventFile
			putBack = append(putBack, events)
			e.disp.printf("  the event log %s was deleted or replaced during the attempt: put back with every record", events)
		}
	}
	if len(putBack) > 0 {
		e.event("state_put_back", map[string]any{"paths": putBack})
	}
	// The exclude lines that hide wiggum's state from git: the state is
	// never committed or rolled back without them (git.Status and the
	// committer leave it out), but a user's `git status` would list it.
	if err := layout.EnsureExcluded(e.st.Repo.InfoDir); err != nil {
		e.disp.printf("  could not restore wiggum's lines in %s: %v", filepath.Join(e.st.Repo.InfoDir, "exclude"), err)
	}
	// husky writing its hooks again (the project's npm install) is no
	// harm done: wiggum's shims go back in front of its stubs.
	var rewrote []string
	if after.git, rewrote = before.git.HuskyRewrote(after.git); len(rewrote) > 0 {
		if err := before.git.Restore(e.st.Repo); err != nil {
			gone = "husky wrote its git hooks over wiggum's " + strings.Join(rewrote, ", ") + ", and putting them back failed: " + err.Error()
		} else {
			e.disp.printf("  husky wrote its git hooks again (an npm install?): wiggum's %s put back in front of them", strings.Join(rewrote, ", "))
		}
	}
	if changed := before.git.ChangedHooks(after.git); len(changed) > 0 {
		// Git runs them in wiggum's own commit and checkout: put back
		// before anything of wiggum's runs git.
		what := "added or changed the git hook(s) " + strings.Join(changed, ", ") + " in " + e.st.Repo.HooksDir +
			", which git runs in wiggum's own commits and every later session, seen by no hook"
		if e.worktree == "" {
			parts = append(parts, what)
		}
		if err := before.git.RestoreHooks(e.st.Repo, after.git); err != nil {
			gone = what + " (and putting them back failed: " + err.Error() + ")"
		} else {
			e.disp.printf("  git hook(s) %s put back as before the attempt", strings.Join(changed, ", "))
		}
	}
	if e.unblocked != "" && e.worktree == "" {
		// Taken out already (unblockConfig). The config is shared by
		// every worktree: a parallel worker is not blamed.
		parts = append(parts, "left an include in git's configuration of a file git blocks opening, which made every git wait forever ("+e.unblocked+")")
	}
	if err := after.git.ConfigErr(); err != nil && before.git.ConfigErr() == nil {
		// What it holds is unknown, so nothing of it is compared or put
		// back: the person must look.
		what := "left a git config git cannot read (" + err.Error() + ")"
		parts = append(parts, what)
		gone = what
	}
	if added := before.git.AddedCommands(after.git); len(added) > 0 {
		// Taken out before anything of wiggum's runs git on the tree (the
		// rollback would run a core.fsmonitor at once). The config is
		// shared by every worktree: a parallel worker is not blamed.
		where := "the repository's git config"
		for _, a := range added {
			if !strings.Contains(a, "(in "+e.st.Repo.CommonDir) && !strings.Contains(a, "(in "+e.st.Repo.GitDir) {
				where = "git config (yours, read in every repository)"
			}
		}
		what := "added to " + where + " what git runs as a command, in wiggum's own git commands and every later session, seen by no hook (" + strings.Join(added, "; ") + ")"
		if e.worktree == "" {
			parts = append(parts, what)
		}
		if err := before.git.RemoveAdded(context.WithoutCancel(ctx), e.st.Repo, after.git); err != nil {
			gone = what + " (and taking it out failed: " + err.Error() + ")"
		} else {
			e.disp.printf("  taken out of the git config: %s", strings.Join(added, "; "))
		}
	}
	if files := before.git.UserConfigChanged(); len(files) > 0 {
		// Read now, after the command settings above were taken out: a
		// rewrite (a Write through a link to the home directory) drops
		// the person's identity, signing key and every other setting,
		// in every repository, and no rollback reaches it. A worker is
		// blamed as for the ignore file: the file is the person's.
		what := "changed your own git config (" + strings.Join(files, ", ") + "), which git reads in every repository and no rollback reaches"
		parts = append(parts, what)
		saved, err := before.git.RestoreUserConfig(e.st.RuntimePath("saved"))
		if err != nil {
			gone = what + " (and putting it back failed: " + err.Error() + ")"
		} else {
			kept := ""
			if len(saved) > 0 {
				kept = "; what it held is kept in " + strings.Join(saved, ", ") + " (a change of your own made while the run went on: take it from there)"
			}
			e.disp.printf("  %s: put back as before the attempt%s", strings.Join(files, ", "), kept)
		}
	}
	if f := before.git.IgnoreChanged(after.git); f != "" {
		// Outside the tree, read by every repository: a pattern there
		// hides the story's files from its commit, silently.
		what := "changed your global git ignore file " + f + ", which hides files from every commit in every repository"
		parts = append(parts, what)
		if err := before.git.RestoreIgnore(); err != nil {
			gone = what + " (and putting it back failed: " + err.Error() + ")"
		} else {
			e.disp.printf("  %s: put back as before the attempt", f)
		}
	}
	if changed := e.run.gitAtStart.ChangedSettings(after.git); len(changed) > 0 {
		// How git makes wiggum's own commits (signing them, a working
		// tree at all) is the repository's as the run found it: an agent
		// that turned commit.gpgsign on with no key to sign with failed
		// every later commit of the run. Not the story's work, and no
		// rollback undoes it: put back as the run found it (not as this
		// attempt did: in a parallel run another worker's agent may have
		// changed it first), the attempt judged on its work.
		what := strings.Join(changed, "; ")
		if err := e.run.gitAtStart.RestoreSettings(context.WithoutCancel(ctx), e.st.Repo, after.git); err != nil {
			gone = "changed the repository's git config (" + what + "), and putting it back failed: " + err.Error()
		} else {
			e.disp.printf("  the attempt changed git settings wiggum's commits and the repository's remotes rely on (%s): put back as the run found them", what)
			e.event("git_config_restored", map[string]any{"settings": changed})
		}
	}
	if what, restorable := before.git.Broken(after.git); what != "" {
		// The hooks directory and the config are shared by every
		// worktree: in a parallel run another worker's agent may have done
		// it, so the attempt is not blamed, only the hooks put back.
		if e.worktree == "" {
			parts = append(parts, what)
		}
		if err := before.git.Restore(e.st.Repo); err != nil {
			gone = what + " (and putting them back failed: " + err.Error() + ")"
		} else if !restorable {
			gone = what
		} else {
			e.disp.printf("  %s: put back", what)
		}
	}
	return strings.Join(parts, "; "), gone, startup
}

// hookCheck checks that the agent's hooks run (Options.VerifyHooks): the
// run makes a file that the guard hook removes on every shell command it
// sees (session.GuardUnseenEnv). It is looked at once during the attempt,
// when the event stream first reports a shell command's result (its
// PreToolUse hooks have run by then), and at the end. Its methods do
// nothing on a nil *hookCheck.
type hookCheck struct {
	path    string
	stop    context.CancelFunc // stops the agent
	checked atomic.Bool
	stopped atomic.Bool // the agent was stopped at its first unseen command
}

// newHookCheck makes the file and names it in env; nil when it cannot.
func (e *executor) newHookCheck(env *[]string, stop context.CancelFunc) *hookCheck {
	path, err := e.st.Runtime(layout.GuardUnseenFile)
	if err != nil || os.WriteFile(path, nil, 0o644) != nil {
		return nil
	}
	*env = append(*env, session.GuardUnseenEnv+"="+path)
	return &hookCheck{path: path, stop: stop}
}

// shellDone is agent.Options.ShellDone: at the first shell command's
// result, an agent whose hook did not see it is working unguarded, and is
// stopped at once rather than at the end of its attempt.
func (h *hookCheck) shellDone() {
	if h == nil || h.checked.Swap(true) {
		return
	}
	if _, err := os.Stat(h.path); err == nil {
		h.stopped.Store(true)
		h.stop()
	}
}

// missed reports, once the agent has exited, whether it ran shell
// commands its guard hook never saw; it removes the file.
func (h *hookCheck) missed(res *agent.Result) bool {
	if h == nil {
		return false
	}
	_, err := os.Stat(h.path)
	_ = os.Remove(h.path)
	return h.stopped.Load() || (err == nil && res.ShellCalls > 0)
}

// reason is what the run says about an agent whose hooks did not run.
func (h *hookCheck) reason(res *agent.Result) string {
	what := fmt.Sprintf("it ran %d shell command(s) and wiggum's guard hook saw none of them", res.ShellCalls)
	if h.stopped.Load() {
		what = "wiggum's guard hook did not see its first shell command, so wiggum stopped it there"
	}
	return what + ": its hooks did not run, so it worked without the guard and without test rollbacks. " +
		"Look for a setting that turns hooks off (claude: disableAllHooks or allowManagedHooksOnly; " +
		"gemini: hooksConfig.enabled or hooksConfig.disabled; codex: hooks under [features]) and check that " +
		"the hook command reaches this wiggum, then run again"
}

// passed records that the attempt's agent finished and its checks passed,
// with what the agent reported it cost: from here a kill leaves work that
// is complete. In the main tree the resumed run commits and ticks it
// rather than give the story to the agent again; in a worktree it lands
// the branch when the worktree is as the attempt left it (resume.go); and
// either way the run's spending keeps the cost. The record is written, not
// synced - it survives the process, which is what a kill takes - and costs
// no git process: the commit HEAD is at is read from git's files.
func (e *executor) passed(ctx context.Context, iter int, story *plan.Story, res *agent.Result) error {
	rec := journalRec{T: "pass", Story: story.ID, Attempt: e.attemptNo, Iter: iter, Head: e.head(ctx)}
	if res != nil {
		rec.Cost, rec.In, rec.Out = res.Usage.CostUSD, res.Usage.InputTokens, res.Usage.OutputTokens
	}
	return e.run.led.record(rec, false)
}

// reportedUsage records what the attempt's agent reported it cost, so that
// a kill before the attempt's end (the agent still running after its
// stream's result, its checks running, its commit) leaves the run's
// spending whole on resume (resume.go): called at the stream's result, and
// when the agent exits 0 (the same figures are not written twice). Written,
// not synced, like the pass; only when the agent reported a cost or
// tokens. Serial and parallel attempts alike.
func (e *executor) reportedUsage(iter int, story string, u agent.Usage) {
	u.Turns = 0
	if u == (agent.Usage{}) || u == e.reported {
		return
	}
	if e.run.led.record(journalRec{T: "usage", Story: story, Attempt: e.attemptNo, Iter: iter, Cost: u.CostUSD, In: u.InputTokens, Out: u.OutputTokens}, false) == nil {
		e.reported = u
	}
}

// commitWork commits the attempt's work; in the main tree the story's tick
// goes into the same commit (one commit per story), unless the plan is
// ignored or was dirty before the run, when the tick stays in the file.
func (e *executor) commitWork(ctx context.Context, story *plan.Story) (string, error) {
	if !e.ticks {
		return e.commit.commitAll(ctx, e.run.msg.story(story))
	}
	return e.run.commitStory(ctx, story)
}

// head is the full commit the tree's HEAD is at; "" when unreadable (the
// journal then records no branch tip, and a resume redoes the story
// rather than land what it cannot verify).
func (e *executor) head(ctx context.Context) string {
	repo := e.st.Repo
	if h := headFromFiles(repo.GitDir, repo.CommonDir); h != "" {
		return h
	}
	h, _ := repo.Head(context.WithoutCancel(ctx))
	return h
}

// LostGitError is a parallel worktree whose .git is gone (its agent
// removed it, say): git cannot read it as a repository, so its attempt can
// be neither checked, committed nor rolled back there. Only its story
// fails: the main repository and the other stories are untouched, and its
// files are saved when the worktree is removed.
type LostGitError struct {
	Story string
	Path  string // the worktree
	// Removed: the worktree went whole (its agent's rm -rf of its own
	// directory, another agent's of it), not its .git alone.
	Removed bool
}

func (e *LostGitError) Error() string {
	if e.Removed {
		return fmt.Sprintf("the worktree of %s (%s) was removed during its attempt (by its agent or another process), so its attempt can be neither checked nor rolled back there; the main repository and the other stories are untouched", e.Story, e.Path)
	}
	return fmt.Sprintf("the worktree of %s (%s) has lost its .git (did the agent remove it?), so its attempt can be neither checked nor rolled back there; the main repository and the other stories are untouched", e.Story, e.Path)
}

// StuckError is an attempt that failed and whose rollback failed too (a
// full disk, a read-only file system, an I/O error): its work is left in
// the tree as it was. The run stops with its journal open, the attempt in
// it unfinished, so that the next run - once the cause is mended - resumes
// as after a crash: it saves that work under refs/wiggum/backup/, puts the
// tree back and does the story again.
type StuckError struct {
	Story   string
	Failure string // why the attempt failed
	Err     error  // why its rollback failed
	// Passed: the agent had finished and its checks had passed (the pass
	// is in the journal); only the commit failed. The resume commits it.
	Passed bool
	// Untried: the rollback was not tried, its git would have waited
	// forever (git cannot read its configuration: unblockConfig).
	Untried bool
}

func (e *StuckError) Error() string {
	cause := ""
	if DiskFull(e.Err) {
		cause = " The disk holding the repository is full."
	}
	then := "saves that work under refs/wiggum/backup/ and puts the tree back before it goes on"
	if e.Passed {
		then = "commits that work with its tick (the agent had finished and its checks had passed) and goes on"
	}
	rolled := "its rollback failed too"
	if e.Untried {
		rolled = "it cannot be rolled back"
	}
	left := "Its work is left in the tree as it was, neither committed nor rolled back"
	var partial *checkpoint.PartialError
	if errors.As(e.Err, &partial) {
		left = "Its work is partly rolled back, neither committed nor whole"
		then = "saves what is left of that work under refs/wiggum/backup/ and finishes putting the tree back before it goes on"
	}
	return fmt.Sprintf("run: %s failed (%s) and %s: %v.%s %s; "+
		"mend that, then run again: the run resumes, %s", e.Story, e.Failure, rolled, e.Err, cause, left, then)
}

func (e *StuckError) Unwrap() error { return e.Err }

// AgentNotStartedError stops the run: a story's agent could not be started
// (proc.StartError), so no attempt of its was made or counted. The journal
// stays open; once the system has room, the next run resumes.
type AgentNotStartedError struct {
	Story string
	Err   *proc.StartError
}

func (e *AgentNotStartedError) Error() string {
	return fmt.Sprintf("run: stopped: %s's agent %v; that is no attempt of the story's and is not counted: once there is room (end other processes, or raise the limit), run again: the run resumes", e.Story, e.Err)
}

func (e *AgentNotStartedError) Unwrap() error { return e.Err }

// NoRoomError is a worktree that could not be made for a story because
// the disk under the worktree directory is full. Like a StuckError it
// stops the run with its journal open: once space is freed, the next run
// resumes.
type NoRoomError struct {
	Story string
	Dir   string // the worktree directory
	Err   error
}

func (e *NoRoomError) Error() string {
	return fmt.Sprintf("run: %s: no worktree could be made for it: the disk holding the repository is full under %s (%s); free space there, then run again: the run resumes",
		e.Story, e.Dir, firstLine(e.Err.Error()))
}

func (e *NoRoomError) Unwrap() error { return e.Err }

// CommitWriteError is a passed attempt whose commit git could not write
// into the repository: a full disk (the last pages of a tmpfs, say, taken
// by the loose objects or the branch's lock file), a read-only file
// system, an I/O error. That is no failure of the agent's - rolling its
// work back and running an agent again would fail the same way, or burn
// an attempt for nothing once other workers freed some space - so, as for
// a SigningError, the run stops with the work left uncommitted and the
// pass in the journal, and the next run, once that is mended, commits it
// without running the agent again.
type CommitWriteError struct {
	passedWork
	// Full: the file system holding the repository had almost no space
	// left when the commit failed (almostFull).
	Full bool
	Err  error
}

func (e *CommitWriteError) Error() string {
	cause := "mend what kept git from writing (a read-only file system, a failing disk)"
	if e.Full || DiskFull(e.Err) || strings.Contains(e.Err.Error(), "couldn't write '") {
		cause = "the disk holding the repository is full: free space"
	}
	return fmt.Sprintf("run: %s passed, but git could not write its commit into the repository (%s); %s. %s",
		e.Story, oneLine(e.Err.Error(), 500), cause, e.left())
}

func (e *CommitWriteError) Unwrap() error { return e.Err }

// repoWriteFailed reports whether the commit's failure, as git told it,
// is git failing to write into the repository - its objects, its index,
// a ref's lock file - for want of space or a working file system, rather
// than a hook refusing the commit: one of git's own fatal or error lines
// says so. git says only "couldn't write '<ref>.lock'" when the disk
// fills as a branch moves.
func repoWriteFailed(detail string) bool {
	if DiskFull(errors.New(detail)) {
		return true
	}
	for _, line := range strings.Split(detail, "\n") {
		i := strings.Index(line, "fatal: ")
		if i < 0 {
			i = strings.Index(line, "error: ")
		}
		if i < 0 {
			continue
		}
		line = line[i:]
		for _, w := range []string{"couldn't write '", "unable to write loose object", "unable to write new index file", "write error", "Input/output error", "Read-only file system"} {
			if strings.Contains(line, w) {
				return true
			}
		}
	}
	return false
}

// canWrite reports whether wiggum can write into the repository's object
// store now: 64 KiB, made durable, then removed. git's words of a write
// failure are only believed when it cannot - a pre-commit hook's own
// output ("No space left on device" in a message it prints) is in the
// same text, and taken at its word it stopped every later run as well.
func canWrite(commonDir string) bool {
	f, err := os.CreateTemp(filepath.Join(commonDir, "objects"), ".wiggum-probe-")
	if err != nil {
		return false
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, 64<<10))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err == nil
}

// almostFull reports whether the file system holding dir has less than
// 256 KiB left for wiggum (a git commit takes a few pages: its objects,
// the index, a ref's lock file and log). false when that cannot be read.
func almostFull(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	return uint64(st.Bavail)*uint64(st.Bsize) < 256<<10
}

// DiskFull reports whether a full disk caused err: ENOSPC in its chain,
// or git's (or another program's) "No space left on device" in its text.
func DiskFull(err error) bool {
	return err != nil && (errors.Is(err, syscall.ENOSPC) || (strings.Contains(err.Error(), "No space left on device") || strings.Contains(err.Error(), "Out of diskspace")))
}

// lostGit is the LostGitError of a worker whose worktree has no .git
// left; nil when it has one, or e works in no worktree. A worktree that
// holds nothing else but wiggum's state (the lock the attempt's end puts
// back) was removed whole.
func (e *executor) lostGit(story string) *LostGitError {
	if e.worktree == "" {
		return nil
	}
	root := e.st.Repo.Root
	if _, err := os.Lstat(filepath.Join(root, ".git")); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	ents, _ := os.ReadDir(root)
	removed := len(ents) == 0 || (len(ents) == 1 && ents[0].Name() == layout.StateDir)
	return &LostGitError{Story: story, Path: root, Removed: removed}
}

// rollback returns the tree to the attempt's checkpoint. A refusal stops
// the run: someone else changed the repository, and the loop must not
// carry on over their work.
func (e *executor) rollback(ctx context.Context, story *plan.Story, attempt int, out outcome) (backup string, err error) {
	sp := e.span.Start(telemetry.SpanRollback, telemetry.Attrs{telemetry.AttrStory: story.ID, "wiggum.reason": out.detail})
	defer func() {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		sp.End(telemetry.Attrs{"wiggum.backup": backup}, msg)
	}()
	edit := e.planStart.editSince(e.plan(), story.ID)
	for _, d := range e.keepDeps(context.WithoutCancel(ctx)) {
		e.sayLeftOut(story, d, fmt.Sprintf("%s is %s: no work to save or roll back, left in the tree, and out of every commit (%s is in .git/info/exclude)", d.name(), d.What, d.Rule))
	}
	res, err := e.st.Rollback(context.WithoutCancel(ctx), checkpoint.RollbackOptions{
		Session:       e.session,
		Reason:        fmt.Sprintf("%s attempt %d: %s", story.ID, attempt, out.detail),
		SetAsideRepos: true,
	})
	if err != nil {
		// A worktree gone whole takes its checkpoint record with it, and
		// the rollback is refused for that: it fails its story alone, as
		// one that lost its .git does, before any set-aside is tried.
		if lost := e.lostGit(story.ID); lost != nil {
			return "", lost
		}
		var refused *checkpoint.RefusedError
		if errors.As(err, &refused) {
			if e.aside != nil {
				return e.putAside(ctx, story, refused)
			}
			e.run.event("rollback_refused", map[string]any{"story": story.ID, "reason": refused.Reason})
			hint := foreignHint(refused) + rewriteHint(refused, e.attemptHead)
			if out.others {
				hint = ". The agent's own changes of this attempt are in the tree, uncommitted, beside that work: finish or put away that work, then run again"
			}
			return "", fmt.Errorf("run: %s failed (%s) and its rollback was refused, so the loop stops: %w%s", story.ID, out.detail, err, hint)
		}
		e.run.event("rollback_failed", map[string]any{"story": story.ID, "error": err.Error()})
		return "", &StuckError{Story: story.ID, Failure: out.detail, Err: err, Passed: out.passed}
	}
	if res.BackupRef != "" {
		e.run.addBackup(res.BackupRef)
	}
	if res.UnhiddenBackup != "" {
		e.run.addBackup(res.UnhiddenBackup)
	}
	for _, r := range res.SetAside {
		e.run.addBackup(r.Backup)
		e.run.event("nested_repo", map[string]any{"story": story.ID, "paths": []string{r.Path}, "aside": r.Aside, "backup": r.Backup, "worker": e.worker})
	}
	// The agent's worktrees the rollback left are removeMade's to save
	// and remove, and to say.
	res.Repositories = slices.DeleteFunc(res.Repositories, func(dir string) bool {
		return e.madeAt(strings.TrimSuffix(dir, "/")) != nil
	})
	for _, n := range res.Notes() {
		e.disp.printf("  %s", n)
	}
	for _, n := range e.unref(ctx, res.BackupRef) {
		e.disp.printf("  %s", n)
	}
	notes, saved := e.removeMade(ctx, fmt.Sprintf("%s attempt %d: %s", story.ID, attempt, out.detail))
	for _, n := range notes {
		e.disp.printf("  %s", n)
	}
	for _, b := range saved {
		e.run.addBackup(b)
	}
	note, err := edit.keep(e.plan().Path(), e.run.planRel, res.BackupRef)
	if note != "" {
		e.disp.printf("  %s", note)
	}
	return res.BackupRef, err
}

// putAside is a worker's answer to a refused rollback: its worktree and
// branch are the run's own, so rather than stop every worker it saves
// them whole and removes them (worktree.Worker.SetAside); the attempt
// counts as failed and the story's next attempt starts in a new
// worktree. The tags and branches the agent made on the work set aside
// are taken back as after a rollback (unref), read from the main
// repository: the worktree is gone.
func (e *executor) putAside(ctx context.Context, story *plan.Story, refused *checkpoint.RefusedError) (string, error) {
	saved, err := e.aside(ctx, refused.Reason)
	if err != nil {
		return "", fmt.Errorf("run: %s failed and its rollback was refused (%s); its worktree %s could not be set aside either, so the loop stops: %w", story.ID, refused.Reason, e.worktree, err)
	}
	e.setAside = true
	for _, ref := range saved {
		e.run.addBackup(ref)
	}
	e.event("worktree_set_aside", map[string]any{"story": story.ID, "reason": refused.Reason, "backup": saved[0], "backups": saved})
	e.disp.printf("  its rollback was refused: %s", refused.Reason)
	e.disp.printf("  the worktree is this run's own, so it is set aside instead: saved whole in %s and removed; the next attempt starts in a new one", strings.Join(saved, " and "))
	for _, n := range e.unrefIn(ctx, e.run.st.Repo, e.attemptHead, saved...) {
		e.disp.printf("  %s", n)
	}
	return saved[0], nil
}

// refusedHere reports whether err is a rollback the rules refused (not a
// worker's, which sets its worktree aside).
func refusedHere(err error) bool {
	var refused *checkpoint.RefusedError
	return errors.As(err, &refused)
}

// foreignHint is what to do next when a rollback was refused for commits
// the commit journal cannot attribute to the session: an agent that runs
// git with hooks turned off (Gemini CLI's shell does) commits past
// wiggum's post-commit hook, and such a commit is nobody's provable own -
// the loop does not discard it on its own say-so.
func foreignHint(refused *checkpoint.RefusedError) string {
	if refused == nil || !strings.Contains(refused.Reason, "--discard-foreign") {
		return ""
	}
	return ". An agent that runs git with its hooks turned off (Gemini CLI does) makes commits the journal never sees. " +
		"To go on, check them (git log), then save and discard them with wiggum rollback --discard-foreign " +
		"(they stay in refs/wiggum/backup/) and run again"
}

// reclaimCheckpoint makes the attempt's checkpoint the rollback point
// again when the agent recorded one of its own in the session (`wiggum
// checkpoint` in the prompt's instructions): the agent could roll back to
// it during the attempt, but the attempt's rollback returns to where the
// attempt started.
func (e *executor) reclaimCheckpoint(ctx context.Context) {
	ok, err := e.st.Reclaim(context.WithoutCancel(ctx), e.attemptCP)
	switch {
	case err != nil:
		e.disp.printf("  the agent recorded a checkpoint of its own, and the attempt's could not be recorded again: %v", err)
	case ok:
		e.disp.printf("  the agent's own checkpoint (wiggum checkpoint) ended with the attempt: the attempt's checkpoint %.*s is the rollback point again", shortID, e.attemptCP.Head)
	}
}

// keepWhy is why an interrupted attempt is kept as it is; "" none.
func (e *executor) keepWhy() string {
	if e.keep == nil {
		return ""
	}
	return e.keep()
}

// interrupted rolls back the unfinished attempt if that is safe, and
// reports what it left.
func (e *executor) interrupted(iter int, story *plan.Story, attempt int, cp *checkpoint.Checkpoint, end journalRec) error {
	if why := e.keepWhy(); why != "" {
		e.disp.printf("stopped: %s: %s; this attempt's commits stay on %s", story.ID, why, strings.TrimPrefix(e.branch, "refs/heads/"))
		e.run.setLast("interrupted")
		e.event("interrupted", map[string]any{"iteration": iter, "story": story.ID, "kept": e.branch})
		e.log(iter, story, attempt, "interrupted", outcome{}, "", time.Since(e.attemptStarted))
		return context.Canceled
	}
	ctx := context.Background()
	e.reclaimCheckpoint(ctx)
	res, err := e.st.Rollback(ctx, checkpoint.RollbackOptions{Session: e.session, Reason: fmt.Sprintf("%s interrupted in iteration %d", story.ID, iter), SetAsideRepos: true})
	var refused *checkpoint.RefusedError
	if errors.As(err, &refused) && e.aside != nil {
		// A worker's worktree is set aside, as after a failed attempt.
		var backup string
		if backup, err = e.putAside(ctx, story, refused); err == nil {
			res = &checkpoint.RollbackResult{BackupRef: backup}
		}
	}
	switch {
	case err != nil:
		e.disp.printf("interrupted; the unfinished iteration was left as it is (%v). Checkpoint: %.12s", err, cp.Head)
	case res.NothingToDo:
		e.disp.printf("interrupted; nothing to roll back")
	case res.BackupRef == "":
		e.disp.printf("interrupted; rolled back the unfinished iteration")
	default:
		e.run.addBackup(res.BackupRef)
		end.Backup = res.BackupRef
		e.disp.printf("interrupted; rolled back the unfinished iteration, its work is saved in %s", res.BackupRef)
	}
	if err == nil {
		for _, sub := range res.Submodules {
			e.disp.printf("  %s", sub)
		}
		_ = e.run.led.record(end, true)
	}
	e.run.setLast("interrupted")
	e.event("interrupted", map[string]any{"iteration": iter, "story": story.ID})
	e.log(iter, story, attempt, "interrupted", outcome{}, end.Backup, time.Since(e.attemptStarted))
	return context.Canceled
}

func (e *executor) log(iter int, story *plan.Story, attempt int, result string, out outcome, backup string, took time.Duration) {
	e.run.logIteration(iter, story, attempt, result, out, backup, took, e.attemptStarted, e.worker)
}

// event records an event of this executor's attempt, naming its worker
// and, unless it names one, the attempt's story.
func (e *executor) event(name string, fields map[string]any) {
	if e.worker > 0 {
		fields["worker"] = e.worker
	}
	if _, ok := fields["story"]; !ok && e.storyID != "" {
		fields["story"] = e.storyID
	}
	e.run.event(name, fields)
}

func (e *executor) prompt(iter int, story *plan.Story) (string, error) {
	r := e.run
	all, err := session.Failures(r.st, story.ID)
	if err != nil {
		return "", err
	}
	if e.st != r.st {
		// A parallel worker's agent hooks record test failures in its
		// worktree; the loop records its own in the main tree.
		own, err := session.Failures(e.st, story.ID)
		if err != nil {
			return "", err
		}
		all = append(all, own...)
		sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	}
	// Only this run's failures (a resumed run's included): an old run's
	// may describe code long gone.
	since := r.started
	if !r.led.first.IsZero() && r.led.first.Before(since) {
		since = r.led.first
	}
	var fails []session.Failure
	for _, f := range all {
		if !f.Time.Before(since) {
			fails = append(fails, f)
		}
	}
	failCtx := ""
	if n := len(fails); n > 0 && fails[n-1].Source == "merge" {
		// Its work was finished and could not land (retryConflict).
		failCtx = "## The previous attempt at this story could not land\n\n" + fails[n-1].Output
	} else if n > 0 {
		f := fails[n-1]
		var b strings.Builder
		fmt.Fprintf(&b, "## The previous attempt at this story failed\n\n")
		if f.Source == "interrupted" {
			b.WriteString("It was interrupted: wiggum was killed while the agent worked.")
		} else {
			fmt.Fprintf(&b, "Iteration %d failed (%s", f.Iteration, f.Source)
			if f.Command != "" {
				fmt.Fprintf(&b, ": %s", f.Command)
			}
			b.WriteString(").")
		}
		if f.Rollback != "" {
			fmt.Fprintf(&b, " Its changes were rolled back and saved in %s (inspect with `git show %s`).", f.Rollback, f.Rollback)
		}
		if out := strings.TrimSpace(f.Output); out != "" && f.Source != "interrupted" {
			fmt.Fprintf(&b, "\n\nEnd of its output:\n```\n%s\n```", out)
		}
		b.WriteString("\n\nAvoid repeating that failure.")
		failCtx = b.String()
	}
	return Render(r.opts.Prompt, Vars{
		StoryID: story.ID, StoryTitle: story.Title, Story: storyText(story),
		PlanPath: r.planRel, ProgressPath: relPath(e.st.Repo.Root, r.logPath),
		Iteration: iter, FailureContext: failCtx,
	}), nil
}

func (e *executor) writeRun(iter int, story *plan.Story, storyStarted time.Time) error {
	r := e.run
	return session.WriteRun(e.st, session.Run{
		PID: os.Getpid(), Session: e.session, Plan: r.planRel, Story: story.ID, StoryTitle: story.Title,
		Iteration: iter, Policy: r.opts.Policy, Started: r.started.UTC(), StoryStarted: storyStarted.UTC(),
		LastOutcome: r.lastOutcome(),
	})
}

// working records in the main tree's run record of a parallel run that
// worker runs attempt w now, or (w nil) none, for wiggum status: the
// workers' own records are in their worktrees.
func (r *run) working(worker int, w *session.Worker) {
	r.busyMu.Lock()
	defer r.busyMu.Unlock()
	if r.busy == nil {
		r.busy = map[int]session.Worker{}
	}
	if w == nil {
		delete(r.busy, worker)
	} else {
		w.Worker = worker
		r.busy[worker] = *w
	}
	r.writeMainRunLocked("")
}

// writeMainRun rewrites the main tree's run record of a parallel run (or a
// serial one waiting out a usage limit, note saying so): the workers'
// attempts running now, and the last outcome or note.
func (r *run) writeMainRun(note string) {
	r.busyMu.Lock()
	defer r.busyMu.Unlock()
	r.writeMainRunLocked(note)
}

func (r *run) writeMainRunLocked(note string) {
	rec := session.Run{PID: r.lock.Holder.PID, Session: r.session, Plan: r.planRel, Started: r.started.UTC(),
		LastOutcome: note}
	if note == "" {
		rec.LastOutcome = r.lastOutcome()
	}
	if r.opts.Workers > 1 || r.opts.Coordinator != nil {
		rec.Parallel = max(r.opts.Workers, 1)
		for _, w := range r.busy {
			rec.Workers = append(rec.Workers, w)
			rec.Iteration = max(rec.Iteration, w.Iteration)
		}
		slices.SortFunc(rec.Workers, func(a, b session.Worker) int { return a.Worker - b.Worker })
	}
	_ = session.WriteRun(r.st, rec)
}

func (r *run) addBackup(ref string) {
	r.sumMu.Lock()
	if !slices.Contains(r.sum.Backups, ref) {
		r.sum.Backups = append(r.sum.Backups, ref)
	}
	r.sumMu.Unlock()
}

func (r *run) addCompleted(id string) {
	r.sumMu.Lock()
	r.sum.Completed = append(r.sum.Completed, id)
	r.sumMu.Unlock()
}

func (r *run) setLast(s string) {
	r.sumMu.Lock()
	r.last = s
	r.sumMu.Unlock()
}

func (r *run) lastOutcome() string {
	r.sumMu.Lock()
	defer r.sumMu.Unlock()
	return r.last
}

// FinalError is an agent account condition no wait will fix - a spending
// cap reached, the account disabled, its credentials revoked: the run stops
// (exit 1) and says so.
type FinalError struct{ Reason string }

func (e *FinalError) Error() string {
	return "run: stopped: " + e.Reason + "; no retry or wait can fix this - fix the agent's account, then run again to resume"
}

var (
	// Texts agents print when their account cannot go on at all.
	finalText = lazyre.New(`(?i)(spend(ing)?[ _-]cap|spending limit (has been )?reached|credit balance is too low|account (has been |is )?(disabled|suspended|deactivated)|(api key|token|credentials?|oauth token|authentication)[^\n]{0,40}(revoked|invalid|expired)|invalid[ _]api[ _]key|permission_denied.*billing)`)
	// A usage or rate limit as Codex (HTTP 429, "rate limit") and Gemini
	// (429 RESOURCE_EXHAUSTED, quota) print it in plain output.
	limitOut = lazyre.New(`(?i)(\b429\b[^\n]{0,80}(too many requests|rate.?limit|resource_exhausted|quota)|resource_exhausted|rate limit (exceeded|reached)|quota exceeded|usage limit)`)
	// "try again in 20s", "retry in 37.5s", "retryDelay": "12s"
	retryIn = lazyre.New(`(?i)(?:try again in|retry in|retryDelay"?:\s*"?)\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|sec|seconds|m|min|minutes|h|hours)\b`)
)

// finalCondition says why a failed attempt means the account cannot go on.
//
// Only the agent's own last word counts (agent.Result.Closing): a failing
// test - the --test-cmd gate's, a hook's, or one the agent ran - about an
// expired token is the project's, and is retried as any failure.
func finalCondition(o outcome) string {
	if o.source != "agent" || o.res == nil {
		return ""
	}
	if m := finalText().FindString(o.res.Closing()); m != "" {
		return "the agent says: " + m
	}
	return ""
}

// limitIn finds a usage limit in a failed attempt's output that the
// agent's stream did not report (plain-text agents: Codex, Gemini).
func limitIn(o outcome) *agent.Limit {
	if o.res == nil || o.source != "agent" || finalCondition(o) != "" {
		return nil
	}
	tail := session.Tail(o.output, 16<<10)
	m := limitOut().FindString(tail)
	if m == "" {
		return nil
	}
	lim := &agent.Limit{Message: "usage limit: " + strings.TrimSpace(m)}
	if d := retryIn().FindStringSubmatch(tail); d != nil {
		v, _ := strconv.ParseFloat(d[1], 64)
		unit := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "sec": time.Second, "seconds": time.Second,
			"m": time.Minute, "min": time.Minute, "minutes": time.Minute, "h": time.Hour, "hours": time.Hour}[strings.ToLower(d[2])]
		lim.Reset = time.Now().Add(time.Duration(v * float64(unit)))
	}
	return lim
}

// prependPath puts dir first on env's PATH.
func prependPath(env []string, dir string) []string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			out := slices.Clone(env)
			out[i] = "PATH=" + dir + string(os.PathListSeparator) + v
			return out
		}
	}
	return append(env, "PATH="+dir)
}

// megabytes says a size in MB (10^6 bytes, as git hosts state their limits).
func megabytes(n int64) string {
	return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64), ".0") + " MB"
}

// unfinishedHookRollbacks settles the test failures whose hook rollback
// began and never finished - the hook was killed part-way (the agent's
// hook timeout, the OOM killer) or before it moved anything - and returns
// the last, nil when there is none. Each goes to the failure log, for the
// retry prompt, with the rollback said to be cut off; the attempt then
// fails, and its own rollback (which saves the tree first) finishes the
// job. The agent's processes, its hooks among them, are gone by now.
func (e *executor) unfinishedHookRollbacks(story string) *session.Failure {
	cut, err := session.UnfinishedHookRollbacks(e.st)
	if err != nil {
		// Unread, they may hold one: the tree is not to be trusted.
		return &session.Failure{Source: "test-hook", Command: "(unknown)", Output: "wiggum could not read its hooks' rollback records: " + err.Error()}
	}
	for _, f := range cut {
		if f.Story == "" {
			f.Story = story
		}
		_ = session.AppendFailure(e.st, f)
		e.event("hook_rollback_cut", map[string]any{"story": story, "command": f.Command})
	}
	if len(cut) == 0 {
		return nil
	}
	return &cut[len(cut)-1]
}

// rolledBackTestFailure is the last failing test run of this attempt
// that the agent's hook rolled back, nil when there is none.
func (e *executor) rolledBackTestFailure(story string) *session.Failure {
	return e.testFailure(story, func(rollback string) bool { return strings.HasPrefix(rollback, "rolled back") })
}

// testFailure is the last failing test run the agent's hook saw during
// this attempt whose rollback outcome is, nil when there is none.
func (e *executor) testFailure(story string, is func(rollback string) bool) *session.Failure {
	fails, err := session.Failures(e.st, story)
	if err != nil {
		return nil
	}
	for i := len(fails) - 1; i >= 0; i-- {
		f := fails[i]
		if f.Time.Before(e.attemptStarted) {
			break
		}
		if f.Source == "test-hook" && is(f.Rollback) {
			return &f
		}
	}
	return nil
}

// nothingSinceRollback reports whether the tree is as the attempt's
// checkpoint left it - HEAD where it began, no change but the plan's
// tick - after a hook's rollback: the agent, told to start again, gave
// up and exited 0, and its story would be ticked done with none of its
// work (changedNothing cannot tell: the rollback rewrote the index). One
// git status, only after such a rollback.
func (e *executor) nothingSinceRollback(ctx context.Context) bool {
	if e.head(ctx) != e.attemptHead {
		return false
	}
	st, err := e.st.Repo.Status(context.WithoutCancel(ctx))
	if err != nil {
		return false
	}
	for _, p := range st.Paths() {
		if p != e.run.planRel {
			return false
		}
	}
	return true
}

// unrolledTestFailure is a failing test run the agent's hook saw during
// this attempt and could not roll back (its rollback failed or was
// refused): the attempt went on from work that failed its tests, and its
// agent's exit status no longer says the story is done. An agent that
// had overwritten the checkpoint record through a link made the hook's
// rollback fail, exited 0, and the failing work was committed.
func (e *executor) unrolledTestFailure(story string) *session.Failure {
	return e.testFailure(story, func(rollback string) bool {
		return strings.HasPrefix(rollback, "failed:") || strings.HasPrefix(rollback, "refused:")
	})
}
