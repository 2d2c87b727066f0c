package loop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/plan"
)

// runSerial is the serial driver: one story at a time in the main tree.
func runSerial(ctx context.Context, st *checkpoint.State, opts Options) (*Summary, error) {
	r, err := open(ctx, st, opts, newDisplay(opts.Out, opts.Live, opts.Quiet, opts.Width))
	if err != nil {
		return nil, err
	}
	defer r.close()
	ex := &executor{run: r, st: st, lock: r.lock, session: r.session, disp: r.disp, commit: r.commit, ticks: true}
	r.begin(1)
	err = r.serial(ctx, ex)
	r.finish(ctx, err)
	return &r.sum, err
}

func (r *run) serial(ctx context.Context, ex *executor) error {
	stalled := 0
	skip := map[string]bool{}
	ticked := agentTicks{r: r, seen: r.atStart}
	for iter := 1; ; iter++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		story, left, err := plan.NextOpen(r.opts.Plan, skip)
		if err != nil {
			return err
		}
		ticked.check(left)
		r.sum.Left = left
		for ; story != nil; story, _, err = plan.NextOpen(r.opts.Plan, skip) {
			if r.led.failed(story.ID) > r.opts.Retries {
				skip[story.ID] = true
				r.sum.Skipped = append(r.sum.Skipped, story.ID)
				continue
			}
			if why := r.led.storyOver(story.ID); why != "" {
				skip[story.ID] = true
				r.sum.Skipped = append(r.sum.Skipped, story.ID)
				r.disp.printf("skipping %s: %s", story.ID, why)
				continue
			}
			break
		}
		if err != nil {
			return err
		}
		if story == nil {
			if len(skip) > 0 {
				return &StopError{Reason: fmt.Sprintf("stopped with %d story(ies) skipped (failed attempts, budget, or a kept branch that does not merge): %s", len(r.sum.Skipped), strings.Join(r.sum.Skipped, ", "))}
			}
			return nil
		}
		if why := r.led.runOver(); why != "" {
			return r.budgetStop(why)
		}
		if r.capReached(iter - 1) {
			return &StopError{Reason: fmt.Sprintf("stopped at the iteration cap (--max-iterations %d) with %d story(ies) open", r.opts.MaxIter, r.sum.Left)}
		}
		r.sum.Iterations = iter
		res, err := ex.attempt(ctx, r.iterBase+iter, story)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case res.done:
			r.endStory(story.ID, "done")
			ticked.after(story.ID, left)
			stalled = 0
			continue
		case res.limit != nil:
			// Waiting out a usage limit is not the agent failing.
			if err := r.limited(ctx, res); err != nil {
				return err
			}
			continue
		case res.skipped:
			r.endStory(story.ID, "skipped")
			skip[story.ID] = true
			r.sum.Skipped = append(r.sum.Skipped, story.ID)
		}
		stalled++
		if stalled >= r.opts.NoProgress {
			_, r.sum.Left, _ = plan.NextOpen(r.opts.Plan, nil)
			return &StopError{Reason: fmt.Sprintf("stopped: no story completed in %d iterations in a row (--no-progress %d); %d story(ies) open", stalled, r.opts.NoProgress, r.sum.Left)}
		}
	}
}

// agentTicks notices stories an agent ticked in the plan itself: the
// attempt of one story was done, and the plan then had more than that one
// story fewer open. They are taken as done (the plan is the record), but
// they had no attempt of their own, which the run says, naming them. So
// are open stories the agent took out of the plan: they will not run, and
// the person is to know (a sed gone wrong, a plan rewritten without them).
// The plan's stories are listed only then (the run's start lists them once
// anyway): the loop's iterations cost the same in a plan of any size.
type agentTicks struct {
	r     *run
	story string // the story whose attempt was done last
	left  int    // stories open before its attempt
	seen  map[string]bool
}

func (t *agentTicks) after(story string, leftBefore int) {
	t.story, t.left = story, leftBefore
}

func (t *agentTicks) check(left int) {
	if t.story == "" {
		return
	}
	story, before := t.story, t.left
	t.story = ""
	if before-left <= 1 {
		return
	}
	now := t.storiesNow()
	if now == nil {
		return
	}
	var extra, removed []string
	for id, done := range now {
		if done && id != story && !t.seen[id] && !slices.Contains(t.r.sum.Completed, id) {
			extra = append(extra, id)
		}
	}
	for id, done := range t.seen {
		if _, ok := now[id]; !ok && !done && id != story && !slices.Contains(t.r.sum.Completed, id) {
			removed = append(removed, id)
		}
	}
	t.seen = now
	if len(extra) > 0 {
		slices.Sort(extra)
		t.r.disp.printf("  the agent of %s also ticked %s in the plan: taken as done, with no attempt of their own (untick them to have them run)", story, strings.Join(extra, ", "))
		t.r.event("ticked_by_agent", map[string]any{"story": story, "ticked": extra})
	}
	if len(removed) > 0 {
		slices.Sort(removed)
		they := "they will not run - put them back to have them done"
		if len(removed) == 1 {
			they = "it will not run - put it back to have it done"
		}
		t.r.disp.printf("  the agent of %s took %s, open, out of the plan: %s (git log -p -- %s shows what it took out)", story, strings.Join(removed, ", "), they, t.r.planRel)
		t.r.event("removed_by_agent", map[string]any{"story": story, "removed": removed})
		t.r.toLookAt(story, "took "+strings.Join(removed, ", ")+" out of the plan")
	}
}

// storiesNow lists the plan's stories, each with whether it is done; nil
// when the plan cannot be read.
func (t *agentTicks) storiesNow() map[string]bool {
	stories, err := t.r.opts.Plan.Stories()
	if err != nil {
		return nil
	}
	return doneByID(stories)
}

// budgetStop is the exit-5 stop of a reached budget, saying what was spent
// and what is left.
func (r *run) budgetStop(why string) error {
	_, left, _ := plan.NextOpen(r.opts.Plan, nil)
	r.sum.Left = left
	stop := r.budgetReached(why)
	return &StopError{Reason: stop.Reason + fmt.Sprintf("; %d story(ies) left", left)}
}

// budgetHit is the stop of a reached --max-cost.
type budgetHit struct{ StopError }

func (e *budgetHit) Unwrap() error { return &e.StopError }

// budgetReached records that the run's budget is reached (why) and
// returns the stop that says so. A parallel run's workers may still be
// running attempts that add to the spending: its result says it again
// then, with the final figures (budgetReason).
func (r *run) budgetReached(why string) *budgetHit {
	r.event("budget_reached", map[string]any{"reason": why})
	return &budgetHit{StopError{Reason: budgetReason(why)}}
}

// budgetReason is the stop's reason for a reached budget.
func budgetReason(why string) string {
	return fmt.Sprintf("stopped: %s, so no attempt is started", why)
}

// limited handles a usage limit: without --wait-on-limit the run stops
// (exit 5) and stays open to be resumed; with it, every worker waits at the
// gate until the reset, the caller showing the countdown.
func (r *run) limited(ctx context.Context, res step) error {
	lim := res.limit
	when := "at an unknown time"
	if !lim.Reset.IsZero() {
		when = "at " + lim.Reset.Local().Format("15:04 MST, Jan 2")
	}
	if !r.opts.WaitOnLimit {
		if lim.Outage {
			return &limitStop{StopError{Reason: fmt.Sprintf("stopped: %s, after the agent's own retries; the attempt was rolled back and does not count. Run again to resume (attempts, failures and spending carry over), or pass --wait-on-limit to wait and try again", lim.Message)}}
		}
		return &limitStop{StopError{Reason: fmt.Sprintf("stopped: the agent says %s; it resets %s. Run again then to resume (attempts, failures and spending carry over), or pass --wait-on-limit to wait for it", lim.Message, when)}}
	}
	until, lead := res.until, res.lead
	if !lead {
		return r.gate.wait(ctx)
	}
	defer r.gate.done()
	waitFor := "the usage limit to reset at " + until.Local().Format("15:04:05 MST")
	if lim.Outage {
		waitFor = "the model service, trying again at " + until.Local().Format("15:04:05 MST")
		r.disp.printf("%s; waiting %s before trying again (no worker starts an attempt before)", lim.Message, time.Until(until).Round(time.Second))
	} else {
		r.disp.printf("the agent says %s; waiting until it resets %s (no worker starts an attempt before)", lim.Message, when)
	}
	r.event("limit_wait_start", map[string]any{"message": lim.Message, "until": until.UTC().Format(time.RFC3339), "outage": lim.Outage})
	r.writeMainRun("waiting for " + waitFor)
	began := time.Now()
	err := r.countdown(ctx, lim.Outage)
	r.event("limit_wait_end", map[string]any{"waited_ms": time.Since(began).Milliseconds(), "interrupted": err != nil})
	r.event("usage_limit_end", map[string]any{"story": res.story, "outage": lim.Outage})
	return err
}

func (r *run) countdown(ctx context.Context, outage bool) error {
	what, verb := "usage limit", "resets"
	if outage {
		what, verb = "model service", "retry"
	}
	r.disp.begin(what)
	defer r.disp.end()
	lastPlain := time.Time{}
	for {
		r.gate.mu.Lock()
		left := time.Until(r.gate.until)
		r.gate.mu.Unlock()
		if left <= 0 {
			return nil
		}
		r.disp.mu.Lock()
		r.disp.activity = verb + " in " + left.Round(time.Second).String()
		r.disp.mu.Unlock()
		if !r.opts.Live && time.Since(lastPlain) >= 10*time.Minute {
			r.disp.printf("  waiting for the %s: %s left", what, left.Round(time.Second))
			lastPlain = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, time.Second)):
		}
	}
}
