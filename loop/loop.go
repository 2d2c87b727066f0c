// Package loop runs a plan's stories through a coding agent, one iteration
// per story attempt, under the agent lock: checkpoint, prompt, agent, then
// the loop - not the agent - decides. Success is committed (new files
// included, pre-existing dirt never) and the story marked done; failure is
// rolled back only when that is provably safe, saved in a backup ref, and
// retried with its failure in the next prompt.
package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/exitcode"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/session"
)

// MaxIterationsLimit is the hard upper bound on --max-iterations: a loop
// that needs more is a loop that is not converging.
const MaxIterationsLimit = 1000

// Options configure a run.
type Options struct {
	Plan        plan.Plan
	Agent       agent.Profile
	Prompt      string // template; "" is DefaultPrompt
	TestCmd     string // gate run with sh -c after a successful agent
	Retries     int    // attempts after the first, per story
	MaxIter     int    // iterations in this run
	NoProgress  int    // iterations in a row without a completed story before giving up
	Timeout     time.Duration
	IdleTimeout time.Duration
	Grace       time.Duration
	AllowDirty  bool
	WaitOnLimit bool
	Policy      string // what hooks do with failing tests mid-iteration (session.Policy*)
	Out         io.Writer
	Live        bool // a terminal: redraw a status line
	Width       int  // the terminal's columns, when Live
	Quiet       bool // do not echo the agent's output
	Command     []string
	// Workers > 1 runs that many stories at once, each in its own worktree
	// (RunParallel).
	Workers int
}

// Summary is how a run ended.
type Summary struct {
	Iterations int
	Completed  []string
	Skipped    []string
	Left       int
	Backups    []string
	// MergeTime is the time parallel workers spent landing their merged
	// stories under the repository mutex: merge, plan tick and worktree
	// removal.
	MergeTime time.Duration
}

// StopError is a run that stopped with work left (exit 5).
type StopError struct{ Reason string }

func (e *StopError) Error() string { return e.Reason }

// ExitCode implements exitcode.Coder.
func (e *StopError) ExitCode() int { return exitcode.WorkLeft }

type runner struct {
	st *checkpoint.State // the tree the agent works in
	// rec keeps the run's records (events, failures, progress): the main
	// tree's state, which outlives a worker's worktree.
	rec     *checkpoint.State
	opts    Options
	lock    *checkpoint.Lock
	session string
	disp    *display
	commit  *committer
	planRel string
	started time.Time
	sum     Summary
	tries   map[string]int
	skip    map[string]bool
	last    string
	logPath string
	// planIgnored: git ignores the plan, so ticks are never committed.
	planIgnored bool
	// waited: the last iteration ended in a usage-limit wait.
	waited bool
	// coordinated: a parallel worker, whose story is marked done by the
	// merge coordinator in the main tree, not here.
	coordinated bool
	// worker numbers a parallel worker (1..N) in its events; 0 is serial.
	worker int
	// attemptStarted is when the current iteration began.
	attemptStarted time.Time
}

// ProgressFile is the human-readable log, in the runtime directory so that
// no rollback ever erases it and no commit ever carries it.
const ProgressFile = "progress.md"

// Run runs the loop until no story is open, a stop condition, or ctx is
// cancelled (a signal). It holds the agent lock for the whole run.
func Run(ctx context.Context, st *checkpoint.State, opts Options) (*Summary, error) {
	if err := validate(&opts); err != nil {
		return nil, err
	}
	if opts.Workers > 1 {
		return runParallel(ctx, st, opts)
	}
	r, err := start(ctx, st, opts, newDisplay(opts.Out, opts.Live, opts.Quiet, opts.Width))
	if err != nil {
		return nil, err
	}
	defer r.lock.Release()
	defer func() { _ = session.ClearRun(st) }()
	if err := r.preflight(ctx); err != nil {
		return nil, err
	}
	appendLine(r.logPath, fmt.Sprintf("\n## run %s · plan %s · agent %s", r.started.UTC().Format(time.RFC3339), r.planRel, strings.Join(opts.Agent.Argv, " ")))
	r.event("run_start", planCounts(opts.Plan, map[string]any{"plan": r.planRel, "agent": opts.Agent.Argv, "pid": os.Getpid()}))
	err = r.loop(ctx)
	r.finish(err)
	return &r.sum, err
}

// start takes the agent lock and sets up the main tree's runner.
func start(ctx context.Context, st *checkpoint.State, opts Options, disp *display) (*runner, error) {
	lock, err := st.Acquire(ctx, checkpoint.AcquireOptions{Command: opts.Command})
	if err != nil {
		return nil, err
	}
	r := &runner{
		st: st, rec: st, opts: opts, lock: lock, session: lock.Holder.Session,
		disp: disp, started: time.Now(),
		tries: map[string]int{}, skip: map[string]bool{},
		planRel: relPath(st.Repo.Root, opts.Plan.Path()),
	}
	if r.logPath, err = st.Runtime(ProgressFile); err != nil {
		_ = lock.Release()
		return nil, err
	}
	return r, nil
}

func validate(o *Options) error {
	if o.Workers < 0 || o.Workers > MaxWorkers {
		return exitcode.BadInput("run: --workers must be between 1 and %d, got %d", MaxWorkers, o.Workers)
	}
	if o.MaxIter < 1 || o.MaxIter > MaxIterationsLimit {
		return exitcode.BadInput("run: --max-iterations must be between 1 and %d, got %d", MaxIterationsLimit, o.MaxIter)
	}
	if o.Retries < 0 || o.Retries > 100 {
		return exitcode.BadInput("run: --retries must be between 0 and 100, got %d", o.Retries)
	}
	if o.NoProgress < 1 {
		return exitcode.BadInput("run: --no-progress must be at least 1, got %d", o.NoProgress)
	}
	if o.Timeout < 0 || o.IdleTimeout < 0 {
		return exitcode.BadInput("run: timeouts cannot be negative")
	}
	if o.Prompt == "" {
		o.Prompt = DefaultPrompt
	}
	if o.Policy == "" {
		o.Policy = session.PolicyRollback
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	return nil
}

// preflight refuses a tree the loop could not commit from safely, and
// records what was dirty before the run so it is never committed.
func (r *runner) preflight(ctx context.Context) error {
	repo := r.st.Repo
	head, err := repo.Head(ctx)
	if err != nil {
		return fmt.Errorf("run: read HEAD: %w", err)
	}
	if head == "" {
		return exitcode.BadInput("run: the repository has no commits yet; commit something first")
	}
	if op := repo.InProgress(); op != "" {
		return exitcode.BadInput("run: a %s is in progress; finish or abort it first", op)
	}
	if branch, err := repo.Branch(ctx); err != nil {
		return fmt.Errorf("run: read branch: %w", err)
	} else if branch == "" {
		return exitcode.BadInput("run: HEAD is detached; switch to the branch the loop should commit to")
	}
	// Without an identity every commit would fail, after the agent's work.
	if _, err := repo.Run(ctx, "var", "GIT_COMMITTER_IDENT"); err != nil {
		return exitcode.BadInput("run: git does not know who commits here; set it with git config user.name and git config user.email")
	}
	ts, err := status(ctx, repo)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if len(ts.paths) > 0 && !r.opts.AllowDirty {
		return exitcode.BadInput("run: the working tree has uncommitted changes (%s); commit or stash them, or pass --allow-dirty to leave them out of every commit the loop makes", summarize(ts.paths, 5))
	}
	if len(ts.staged) > 0 {
		return exitcode.BadInput("run: staged changes (%s) would end up in the loop's commits; commit them or unstage them (git restore --staged) first", summarize(ts.staged, 5))
	}
	env := []string{checkpoint.SessionEnv + "=" + r.session}
	r.commit = newCommitter(repo, env, ts.paths)
	if r.planIgnored, err = repo.OK(ctx, "check-ignore", "-q", "--", r.planRel); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if r.planIgnored {
		r.disp.printf("the plan %s is ignored by git: stories are ticked in the file, not committed", r.planRel)
	}
	if len(ts.paths) > 0 {
		r.disp.printf("leaving %d pre-existing change(s) out of every commit: %s", len(ts.paths), summarize(ts.paths, 5))
	}
	return nil
}

func (r *runner) loop(ctx context.Context) error {
	stalled := 0
	for iter := 1; ; iter++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		stories, err := r.opts.Plan.Stories()
		if err != nil {
			return err
		}
		story := plan.Next(stories, r.skip)
		r.sum.Left = plan.Open(stories)
		if story == nil {
			if len(r.skip) > 0 {
				return &StopError{Reason: fmt.Sprintf("stopped with %d story(ies) skipped after %d failed attempts each: %s", len(r.sum.Skipped), r.opts.Retries+1, strings.Join(r.sum.Skipped, ", "))}
			}
			return nil
		}
		if iter > r.opts.MaxIter {
			return &StopError{Reason: fmt.Sprintf("stopped at the iteration cap (--max-iterations %d) with %d story(ies) open", r.opts.MaxIter, r.sum.Left)}
		}
		r.sum.Iterations = iter
		done, err := r.iteration(ctx, iter, story)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if done {
			stalled = 0
			continue
		}
		if r.waited {
			// Waiting out a usage limit is not the agent failing.
			r.waited = false
			continue
		}
		stalled++
		if stalled >= r.opts.NoProgress {
			stories, _ = r.opts.Plan.Stories()
			r.sum.Left = plan.Open(stories)
			return &StopError{Reason: fmt.Sprintf("stopped: no story completed in %d iterations in a row (--no-progress %d); %d story(ies) open", stalled, r.opts.NoProgress, r.sum.Left)}
		}
	}
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
}

// iteration runs one attempt at story and reports whether it completed.
func (r *runner) iteration(ctx context.Context, iter int, story *plan.Story) (bool, error) {
	started := time.Now()
	if err := r.writeRun(iter, story, started); err != nil {
		return false, err
	}
	attempt := r.tries[story.ID] + 1
	r.attemptStarted = started
	r.event("iteration_start", map[string]any{"iteration": iter, "story": story.ID, "title": story.Title,
		"attempt": attempt, "attempts": r.opts.Retries + 1, "worker": r.worker, "output": AgentLog(iter)})
	r.disp.printf("── iteration %d · %s: %s (attempt %d of %d)", iter, story.ID, story.Title, attempt, r.opts.Retries+1)

	cp, err := r.st.Save(ctx, r.session, checkpoint.SaveOptions{})
	if err != nil {
		return false, err
	}
	prompt, err := r.prompt(iter, story)
	if err != nil {
		return false, err
	}
	r.disp.begin(fmt.Sprintf("%s (iteration %d)", story.ID, iter))
	out := r.attempt(ctx, iter, story, prompt)
	r.disp.end()

	if out.source == "limit" && ctx.Err() == nil {
		return r.limited(ctx, iter, story, out)
	}
	// A story committed before the signal stays committed; only an
	// unfinished iteration is rolled back.
	if !out.ok && ctx.Err() != nil {
		return false, r.interrupted(iter, story, cp)
	}
	if out.ok {
		r.sum.Completed = append(r.sum.Completed, story.ID)
		r.last = "done"
		r.logIteration(iter, story, "done", out, "", time.Since(started))
		r.disp.printf("✔ %s done in %s%s", story.ID, time.Since(started).Round(10*time.Millisecond), commitNote(out.commit))
		return true, nil
	}

	backup, rerr := r.rollback(ctx, story, attempt, out)
	if rerr != nil {
		return false, rerr
	}
	r.last = "failed: " + out.source
	_ = session.AppendFailure(r.rec, session.Failure{
		Time: time.Now().UTC(), Story: story.ID, Iteration: iter, Source: out.source,
		Command: out.command, Output: session.Tail(out.output, 4<<10), Rollback: backup,
	})
	r.logIteration(iter, story, "failed ("+out.source+")", out, backup, time.Since(started))
	r.tries[story.ID]++
	r.disp.printf("✘ %s failed: %s; rolled back%s", story.ID, out.detail, backupNote(backup))
	if r.tries[story.ID] > r.opts.Retries {
		r.skip[story.ID] = true
		r.sum.Skipped = append(r.sum.Skipped, story.ID)
		r.disp.printf("  skipping %s after %d failed attempts", story.ID, r.tries[story.ID])
		r.event("story_skipped", map[string]any{"story": story.ID, "attempts": r.tries[story.ID]})
	}
	return false, nil
}

// attempt runs the agent and the gate, and commits on success.
func (r *runner) attempt(ctx context.Context, iter int, story *plan.Story, prompt string) outcome {
	env := append(os.Environ(),
		checkpoint.SessionEnv+"="+r.session,
		"WIGGUM_STORY="+story.ID,
		"WIGGUM_ITERATION="+strconv.Itoa(iter),
		session.EventLogEnv+"="+r.rec.Path(checkpoint.RuntimeDir+"/"+session.EventFile),
	)
	obs := r.observe(iter, story.ID)
	defer obs.close()
	hold := r.lock.Dup()
	res, err := agent.Run(ctx, r.opts.Agent, agent.Options{
		Dir: r.st.Repo.Root, Env: env, Prompt: prompt,
		Timeout: r.opts.Timeout, IdleTimeout: r.opts.IdleTimeout, Grace: r.opts.Grace, Hold: hold,
		Line: obs.line, Event: obs.event,
	})
	if hold != nil {
		hold.Close()
	}
	cmd := strings.Join(r.opts.Agent.Argv, " ")
	if err != nil {
		return outcome{source: "agent", command: cmd, detail: err.Error(), output: err.Error()}
	}
	o := outcome{source: "agent", command: cmd, output: res.Output, res: res}
	switch {
	case res.Limit != nil:
		o.source, o.detail = "limit", res.Limit.Message
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
	if r.opts.TestCmd != "" {
		r.disp.printf("  gate: %s", r.opts.TestCmd)
		gate, err := agent.Run(ctx, agent.Profile{Name: "gate", Argv: []string{"sh", "-c", r.opts.TestCmd}}, agent.Options{
			Dir: r.st.Repo.Root, Env: env, Timeout: r.opts.Timeout, Grace: r.opts.Grace,
			Line: obs.line,
		})
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
	// From here on the iteration completes even if a signal arrives: a
	// half-made commit helps nobody.
	cctx := context.WithoutCancel(ctx)
	sha, err := r.commit.commitAll(cctx, commitMessage(story))
	if err != nil {
		return outcome{source: "commit", command: "git commit", detail: err.Error(), output: err.Error(), res: res}
	}
	if r.coordinated {
		return outcome{ok: true, commit: sha, res: res}
	}
	msha, err := r.markDone(cctx, story)
	if err != nil {
		return outcome{source: "commit", command: "mark done", detail: err.Error(), output: err.Error(), res: res}
	}
	if sha == "" {
		sha = msha
	}
	return outcome{ok: true, commit: sha, res: res}
}

// markDone ticks story in the plan and commits exactly the plan, unless
// git ignores it or it was dirty before the run. It returns the commit's
// short id, or "".
func (r *runner) markDone(ctx context.Context, story *plan.Story) (string, error) {
	if err := r.opts.Plan.MarkDone(story.ID); err != nil {
		return "", err
	}
	return r.commitTick(ctx, story)
}

// commitTick commits the plan after story was ticked in it.
func (r *runner) commitTick(ctx context.Context, story *plan.Story) (string, error) {
	switch {
	case r.planIgnored:
		// git ignores the plan: the tick lives only in the file.
		return "", nil
	case r.commit.keepM[r.planRel]:
		r.disp.printf("  the plan %s had uncommitted changes before the run; marked %s done there but left it out of the commit", r.planRel, story.ID)
		return "", nil
	}
	return r.commit.commitPath(ctx, story.ID+": mark done", r.planRel, r.opts.Plan.Kind() == "issues")
}

func commitMessage(s *plan.Story) string {
	title := strings.TrimSpace(s.Title)
	if title == "" {
		return s.ID
	}
	return s.ID + ": " + title
}

// rollback returns the tree to the iteration's checkpoint. A refusal stops
// the loop: someone else changed the repository, and the loop must not
// carry on over their work.
func (r *runner) rollback(ctx context.Context, story *plan.Story, attempt int, out outcome) (string, error) {
	res, err := r.st.Rollback(context.WithoutCancel(ctx), checkpoint.RollbackOptions{
		Session: r.session,
		Reason:  fmt.Sprintf("%s attempt %d: %s", story.ID, attempt, out.detail),
	})
	if err != nil {
		var refused *checkpoint.RefusedError
		if errors.As(err, &refused) {
			r.event("rollback_refused", map[string]any{"story": story.ID, "reason": refused.Reason})
			return "", fmt.Errorf("run: %s failed (%s) and its rollback was refused, so the loop stops: %w", story.ID, out.detail, err)
		}
		return "", fmt.Errorf("run: roll back %s: %w", story.ID, err)
	}
	if res.BackupRef != "" {
		r.sum.Backups = append(r.sum.Backups, res.BackupRef)
	}
	return res.BackupRef, nil
}

// interrupted rolls back the unfinished iteration if that is safe, and
// reports what it left.
func (r *runner) interrupted(iter int, story *plan.Story, cp *checkpoint.Checkpoint) error {
	ctx := context.Background()
	res, err := r.st.Rollback(ctx, checkpoint.RollbackOptions{Session: r.session, Reason: fmt.Sprintf("%s interrupted in iteration %d", story.ID, iter)})
	switch {
	case err != nil:
		r.disp.printf("interrupted; the unfinished iteration was left as it is (%v). Checkpoint: %.12s", err, cp.Head)
	case res.NothingToDo:
		r.disp.printf("interrupted; nothing to roll back")
	default:
		r.sum.Backups = append(r.sum.Backups, res.BackupRef)
		r.disp.printf("interrupted; rolled back the unfinished iteration, its work is saved in %s", res.BackupRef)
	}
	r.last = "interrupted"
	r.event("interrupted", map[string]any{"iteration": iter, "story": story.ID})
	r.logIteration(iter, story, "interrupted", outcome{}, "", 0)
	return context.Canceled
}

// limited handles a usage limit: roll the partial attempt back, then wait
// for the reset (with --wait-on-limit) or stop.
func (r *runner) limited(ctx context.Context, iter int, story *plan.Story, out outcome) (bool, error) {
	backup, err := r.rollback(ctx, story, r.tries[story.ID]+1, out)
	if err != nil {
		return false, err
	}
	lim := out.res.Limit
	r.logIteration(iter, story, "usage limit", out, backup, 0)
	r.event("usage_limit", map[string]any{"story": story.ID, "message": lim.Message, "reset": lim.Reset})
	when := "at an unknown time"
	if !lim.Reset.IsZero() {
		when = "at " + lim.Reset.Local().Format("15:04 MST, Jan 2")
	}
	if !r.opts.WaitOnLimit {
		return false, &StopError{Reason: fmt.Sprintf("stopped: the agent says %s; it resets %s. Run again then, or pass --wait-on-limit to wait for it", lim.Message, when)}
	}
	until := lim.Reset
	if until.IsZero() {
		until = time.Now().Add(unknownResetWait)
	}
	r.disp.printf("the agent says %s; waiting until it resets %s", lim.Message, when)
	if err := r.countdown(ctx, until); err != nil {
		return false, err
	}
	r.event("usage_limit_end", map[string]any{"story": story.ID})
	r.waited = true
	return false, nil
}

// unknownResetWait is how long --wait-on-limit waits when the agent did not
// say when its limit resets.
const unknownResetWait = 15 * time.Minute

func (r *runner) countdown(ctx context.Context, until time.Time) error {
	r.disp.begin("usage limit")
	defer r.disp.end()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	lastPlain := time.Time{}
	for {
		left := time.Until(until)
		if left <= 0 {
			return nil
		}
		r.disp.mu.Lock()
		r.disp.activity = "resets in " + left.Round(time.Second).String()
		r.disp.mu.Unlock()
		if !r.opts.Live && time.Since(lastPlain) >= 10*time.Minute {
			r.disp.printf("  waiting for the usage limit to reset: %s left", left.Round(time.Second))
			lastPlain = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (r *runner) prompt(iter int, story *plan.Story) (string, error) {
	failCtx := ""
	all, err := session.Failures(r.rec, story.ID)
	if err != nil {
		return "", err
	}
	if r.st != r.rec {
		// A parallel worker's agent hooks record test failures in its
		// worktree; the loop records its own in the main tree.
		own, err := session.Failures(r.st, story.ID)
		if err != nil {
			return "", err
		}
		all = append(all, own...)
		sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	}
	// Only this run's failures: an old run's may describe code long gone.
	var fails []session.Failure
	for _, f := range all {
		if !f.Time.Before(r.started) {
			fails = append(fails, f)
		}
	}
	if n := len(fails); n > 0 {
		f := fails[n-1]
		var b strings.Builder
		fmt.Fprintf(&b, "## The previous attempt at this story failed\n\n")
		fmt.Fprintf(&b, "Iteration %d failed (%s", f.Iteration, f.Source)
		if f.Command != "" {
			fmt.Fprintf(&b, ": %s", f.Command)
		}
		b.WriteString(").")
		if f.Rollback != "" {
			fmt.Fprintf(&b, " Its changes were rolled back and saved in %s (inspect with `git show %s`).", f.Rollback, f.Rollback)
		}
		if out := strings.TrimSpace(f.Output); out != "" {
			fmt.Fprintf(&b, "\n\nEnd of its output:\n```\n%s\n```", out)
		}
		b.WriteString("\n\nAvoid repeating that failure.")
		failCtx = b.String()
	}
	return Render(r.opts.Prompt, Vars{
		StoryID: story.ID, StoryTitle: story.Title, Story: storyText(story),
		PlanPath: r.planRel, ProgressPath: relPath(r.st.Repo.Root, r.logPath),
		Iteration: iter, FailureContext: failCtx,
	}), nil
}

func storyText(s *plan.Story) string {
	if strings.TrimSpace(s.Details) != "" {
		return s.Details
	}
	return s.ID + ": " + s.Title
}

func (r *runner) writeRun(iter int, story *plan.Story, storyStarted time.Time) error {
	return session.WriteRun(r.st, session.Run{
		PID: os.Getpid(), Session: r.session, Plan: r.planRel, Story: story.ID, StoryTitle: story.Title,
		Iteration: iter, Policy: r.opts.Policy, Started: r.started.UTC(), StoryStarted: storyStarted.UTC(),
		LastOutcome: r.last,
	})
}

func (r *runner) event(name string, fields map[string]any) {
	fields["session"] = r.session
	if r.worker > 0 {
		fields["worker"] = r.worker
	}
	_ = session.AppendEvent(r.rec, name, fields)
}

func (r *runner) logIteration(iter int, story *plan.Story, result string, out outcome, backup string, took time.Duration) {
	// One event per iteration: run.json says what is running now, so the
	// log records only finished iterations (each append is an fsync).
	fields := map[string]any{"iteration": iter, "story": story.ID, "title": story.Title, "attempt": r.tries[story.ID] + 1,
		"outcome": result, "duration_ms": took.Milliseconds(), "started": r.attemptStarted.UTC().Format(time.RFC3339Nano)}
	line := fmt.Sprintf("- %s iteration %d · %s · %s · %s", time.Now().UTC().Format(time.RFC3339), iter, story.ID, result, took.Round(10*time.Millisecond))
	if out.commit != "" {
		fields["commit"] = out.commit
		line += " · commit " + out.commit
	}
	if backup != "" {
		fields["backup"] = backup
		line += " · backup " + backup
	}
	if out.res != nil && out.res.Usage != (agent.Usage{}) {
		u := out.res.Usage
		fields["cost_usd"], fields["input_tokens"], fields["output_tokens"] = u.CostUSD, u.InputTokens, u.OutputTokens
		line += " · " + u.String()
	}
	if out.detail != "" && !out.ok {
		line += " · " + out.detail
	}
	r.event("iteration_end", fields)
	appendLine(r.logPath, line)
}

func (r *runner) finish(err error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%d iteration(s): %d story(ies) done", r.sum.Iterations, len(r.sum.Completed))
	if len(r.sum.Skipped) > 0 {
		fmt.Fprintf(&b, ", %d skipped (%s)", len(r.sum.Skipped), strings.Join(r.sum.Skipped, ", "))
	}
	fmt.Fprintf(&b, ", %d open", r.sum.Left)
	if len(r.sum.Backups) > 0 {
		fmt.Fprintf(&b, "; rolled-back attempts saved in %s (wiggum recover)", strings.Join(r.sum.Backups, ", "))
	}
	r.disp.printf("%s", b.String())
	fields := map[string]any{"iterations": r.sum.Iterations, "completed": r.sum.Completed, "skipped": r.sum.Skipped, "open": r.sum.Left}
	if err != nil {
		fields["error"] = err.Error()
	}
	r.event("run_end", fields)
}

func commitNote(sha string) string {
	if sha == "" {
		return " (no changes to commit)"
	}
	return ", commit " + sha
}

func backupNote(ref string) string {
	if ref == "" {
		return ""
	}
	return "; the attempt is saved in " + ref
}

// appendLine appends to the progress log; the log is a courtesy, so a
// failure to write it never stops the loop.
func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line + "\n")
}

// DryRun prints the stories a run would work on, in order, with the prompt
// each would get, and changes nothing - not even wiggum's own state, which
// is why it takes the working-tree root rather than a State.
func DryRun(root string, opts Options) error {
	if err := validate(&opts); err != nil {
		return err
	}
	stories, err := opts.Plan.Stories()
	if err != nil {
		return err
	}
	planRel := relPath(root, opts.Plan.Path())
	progress := checkpoint.RuntimeDir + "/" + ProgressFile
	w := opts.Out
	fmt.Fprintf(w, "plan %s (%s): %d story(ies), %d open\n", planRel, opts.Plan.Kind(), len(stories), plan.Open(stories))
	for _, s := range stories {
		mark := " "
		if s.Done {
			mark = "x"
		}
		fmt.Fprintf(w, "  [%s] %s: %s\n", mark, s.ID, s.Title)
	}
	fmt.Fprintf(w, "agent: %s\n", strings.Join(opts.Agent.Argv, " "))
	if opts.TestCmd != "" {
		fmt.Fprintf(w, "gate: %s\n", opts.TestCmd)
	}
	iter := 0
	for i := range stories {
		s := &stories[i]
		if s.Done {
			continue
		}
		iter++
		if iter > opts.MaxIter {
			fmt.Fprintf(w, "\n(--max-iterations %d reached; later stories would wait for another run)\n", opts.MaxIter)
			break
		}
		fmt.Fprintf(w, "\n===== iteration %d: %s =====\n", iter, s.ID)
		fmt.Fprint(w, Render(opts.Prompt, Vars{
			StoryID: s.ID, StoryTitle: s.Title, Story: storyText(s),
			PlanPath: planRel, ProgressPath: progress, Iteration: iter,
		}))
	}
	return nil
}
