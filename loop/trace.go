package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/telemetry"
)

// spans is the run's trace: a span for the run, one per story (across its
// attempts), and under each story its attempts with their agent, gate and
// rollback, and its merge. Without a tracer every span is nil and every
// call here does nothing.
type spans struct {
	run     *telemetry.Span
	mu      sync.Mutex
	stories map[string]*telemetry.Span
}

func (r *run) traceStart(workers int) {
	r.trace.run = r.opts.Tracer.Start(telemetry.SpanRun, telemetry.Attrs{
		"wiggum.plan": r.planRel, "wiggum.agent": strings.Join(r.opts.Agent.Argv, " "), "wiggum.workers": workers,
		"wiggum.session": r.session, "wiggum.resumed": r.resumed, "wiggum.branch": strings.TrimPrefix(r.branch, "refs/heads/"),
	})
}

// storySpan returns story's span, starting it on its first attempt.
func (r *run) storySpan(story *plan.Story) *telemetry.Span {
	if r.trace.run == nil {
		return nil
	}
	r.trace.mu.Lock()
	defer r.trace.mu.Unlock()
	if s := r.trace.stories[story.ID]; s != nil {
		return s
	}
	if r.trace.stories == nil {
		r.trace.stories = map[string]*telemetry.Span{}
	}
	s := r.trace.run.Start(telemetry.SpanStory, telemetry.Attrs{telemetry.AttrStory: story.ID, "wiggum.story.title": story.Title})
	r.trace.stories[story.ID] = s
	return s
}

// endStory ends story's span with its outcome: done, skipped or open.
func (r *run) endStory(id, outcome string) {
	if r.trace.run == nil {
		return
	}
	r.trace.mu.Lock()
	s := r.trace.stories[id]
	delete(r.trace.stories, id)
	r.trace.mu.Unlock()
	failure := ""
	if outcome != "done" {
		failure = outcome
	}
	s.End(telemetry.Attrs{telemetry.AttrOutcome: outcome}, failure)
}

// traceEnd ends the stories still open and the run's span.
func (r *run) traceEnd(err error) {
	if r.trace.run == nil {
		return
	}
	r.trace.mu.Lock()
	var open []string
	for id := range r.trace.stories {
		open = append(open, id)
	}
	r.trace.mu.Unlock()
	for _, id := range open {
		r.endStory(id, "open")
	}
	spent, in, out := r.led.spending()
	outcome, failure := "done", ""
	if err != nil {
		outcome, failure = "stopped", err.Error()
	}
	r.trace.run.End(telemetry.Attrs{telemetry.AttrOutcome: outcome, "wiggum.iterations": r.sum.Iterations,
		"wiggum.completed": len(r.sum.Completed), "wiggum.open": r.sum.Left, telemetry.AttrCost: spent,
		telemetry.AttrInputTokens: in, telemetry.AttrOutputTokens: out}, failure)
}

// startAttempt begins the attempt's span under its story's.
func (e *executor) startAttempt(iter int, story *plan.Story, attempt int) {
	e.span = e.run.storySpan(story).Start(telemetry.SpanAttempt, telemetry.Attrs{telemetry.AttrStory: story.ID,
		telemetry.AttrAttempt: attempt, telemetry.AttrIteration: iter, telemetry.AttrWorker: e.worker})
	e.source = ""
	e.storyID = story.ID
}

// traceOutcome records what the agent cost on the attempt and its story.
func (e *executor) traceOutcome(story *plan.Story, out outcome) {
	if e.span == nil {
		return
	}
	e.source = out.source
	if out.res == nil {
		return
	}
	u := out.res.Usage
	e.span.Set(usageAttrs(u))
	s := e.run.storySpan(story)
	s.Add(telemetry.AttrCost, u.CostUSD)
	s.Add(telemetry.AttrInputTokens, float64(u.InputTokens))
	s.Add(telemetry.AttrOutputTokens, float64(u.OutputTokens))
}

// endAttempt ends the attempt's span with the attempt's outcome.
func (e *executor) endAttempt(res step, err error) {
	if e.span == nil {
		return
	}
	outcome, failure := "failed ("+e.source+")", e.source
	switch {
	case errors.Is(err, context.Canceled):
		outcome = "interrupted"
	case err != nil:
		outcome, failure = "error", err.Error()
	case res.done:
		outcome, failure = "done", ""
	case res.limit != nil:
		outcome = "usage limit"
	}
	e.span.End(telemetry.Attrs{telemetry.AttrOutcome: outcome, "wiggum.skipped": res.skipped}, failure)
	e.span = nil
}

func usageAttrs(u agent.Usage) telemetry.Attrs {
	return telemetry.Attrs{telemetry.AttrCost: u.CostUSD, telemetry.AttrInputTokens: u.InputTokens, telemetry.AttrOutputTokens: u.OutputTokens}
}

// endProcess ends an agent's or the gate's span with how it exited.
func endProcess(s *telemetry.Span, res *agent.Result, err error) {
	if s == nil {
		return
	}
	if err != nil {
		s.End(nil, err.Error())
		return
	}
	attrs := usageAttrs(res.Usage)
	attrs["process.exit.code"] = res.ExitCode
	failure := ""
	switch {
	case res.Stopped != "":
		attrs["wiggum.stopped"] = res.Stopped
		failure = "stopped: " + res.Stopped
	case res.ExitCode != 0:
		failure = fmt.Sprintf("exit status %d", res.ExitCode)
	}
	s.End(attrs, failure)
}

func storyOutcome(done, skipped bool) string {
	switch {
	case done && skipped:
		return "not merged"
	case done:
		return "done"
	case skipped:
		return "skipped"
	}
	return "open"
}

// skipped reports whether story was given up on in this run (failed for
// good, over its budget, or not mergeable).
func (p *parallel) skipped(story string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.skip[story]
}
