// Package events names the records of wiggum's event log
// (.ralph/wiggum/events.jsonl) and reads it as a stream in bounded memory:
// a torn last line waits for the rest of its bytes, and a corrupt or
// oversized line is reported and skipped, never fatal.
package events

import (
	"encoding/json"
	"strings"
	"time"
)

// Event names: the "event" field of each line. The loop writes the
// underscored ones; the agent hooks write the hyphenated ones.
const (
	RunStart        = "run_start"        // plan, agent, pid, workers, stories, done, resumed (+ cost_usd, tokens: spent before the resume)
	RunEnd          = "run_end"          // iterations, completed, skipped, open, cost_usd (the run's, across resumes), error
	IterationStart  = "iteration_start"  // iteration, story, title, attempt, attempts (allowed), worker, output
	Tool            = "tool"             // story, iteration, worker, tool, tokens so far (throttled)
	IterationEnd    = "iteration_end"    // + outcome, started, duration_ms, commit, backup, cost_usd, tokens
	StorySkipped    = "story_skipped"    // story, attempts or budget: failed for good
	BudgetReached   = "budget_reached"   // reason: --max-cost reached, the run stops
	RollbackRefused = "rollback_refused" // story, reason: the run stops
	Interrupted     = "interrupted"      // iteration, story
	UsageLimit      = "usage_limit"      // story, message, reset, outage: a limit wait begins (or the run stops)
	UsageLimitEnd   = "usage_limit_end"  // story, outage: the wait is over
	LimitWaitStart  = "limit_wait_start" // message, until, outage: every worker waits for the reset
	LimitWaitEnd    = "limit_wait_end"   // waited_ms, interrupted
	Merged          = "merged"           // story, branch, commit, fast_forward, land_ms
	MergeFailed     = "merge_failed"     // story, branch, error, paths: the branch is kept
	Landed          = "landed"           // shared run: story, branch, commit, attempts, land_ms
	LandedElsewhere = "landed_elsewhere" // shared run: story, branch, error: another machine landed it, this attempt added nothing
	LandFailed      = "land_failed"      // shared run: story, branch, error: the branch is kept
	ClaimLost       = "claim_lost"       // shared run: story, branch, error: another machine took the story over; the commits stay on branch
	TestFailure     = "test-failure"     // hook: agent, runner, rollback, story
	AgentStop       = "agent-stop"       // hook: agent, stop_hook_active, done
	StoryIncomplete = "story-incomplete" // hook, in older logs: the agent stopped with its story open (now agent-stop, done false)
	GuardDenied     = "guard_denied"     // hook: agent, decision, command, reason, story
	TickedByAgent   = "ticked_by_agent"  // story, ticked: stories the agent of story ticked in the plan itself
	RemovedByAgent  = "removed_by_agent" // story, removed: open stories the agent of story took out of the plan
	TestsDeleted    = "tests_deleted"    // story, paths, commit (or refused): test files the attempt's changes delete
	TestsSkipped    = "tests_skipped"    // story, paths, reason, commit (or refused): tests the attempt's changes switch off
)

// Outcomes of an iteration_end. A failure is "failed (SOURCE)" with SOURCE
// one of agent, timeout, idle, gate, commit, stop.
const (
	OutcomeDone        = "done"
	OutcomeLimit       = "usage limit"
	OutcomeInterrupted = "interrupted"
	outcomeFailed      = "failed"
)

// Event is one line of the log. It is the union of every event's fields;
// the comments on the names above say which ones each event sets. Worker
// is the parallel worker (1..N) that wrote it, 0 in a serial run.
type Event struct {
	Time    time.Time `json:"time"`
	Name    string    `json:"event"`
	Session string    `json:"session,omitempty"`

	Story     string `json:"story,omitempty"`
	Title     string `json:"title,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	Worker    int    `json:"worker,omitempty"`

	// run_start
	Plan    string `json:"plan,omitempty"`
	Agent   any    `json:"agent,omitempty"` // argv (loop) or agent name (hooks)
	PID     int    `json:"pid,omitempty"`
	Workers int    `json:"workers,omitempty"`
	// run_end
	Iterations int      `json:"iterations,omitempty"`
	Completed  []string `json:"completed,omitempty"`
	Skipped    []string `json:"skipped,omitempty"`
	Open       int      `json:"open,omitempty"`
	// OpenStories: the open stories Open counts (up to a bound), in the
	// plan's order.
	OpenStories []StoryRef `json:"open_stories,omitempty"`
	Error       string     `json:"error,omitempty"`

	// iteration_end
	Outcome      string    `json:"outcome,omitempty"`
	Started      time.Time `json:"started,omitzero"`
	DurationMS   float64   `json:"duration_ms,omitempty"`
	Commit       string    `json:"commit,omitempty"`
	Backup       string    `json:"backup,omitempty"`
	CostUSD      float64   `json:"cost_usd,omitempty"`
	InputTokens  int64     `json:"input_tokens,omitempty"`
	OutputTokens int64     `json:"output_tokens,omitempty"`
	// Empty: the attempt passed having changed nothing git tracks (no
	// file, no commit): its story was ticked on its exit status alone.
	Empty bool `json:"empty,omitempty"`

	// story_skipped: attempts made; iteration_start: attempts allowed
	Attempts int `json:"attempts,omitempty"`
	// iteration_start: the attempt's agent output, relative to the root
	Output string `json:"output,omitempty"`
	// remote_stats: a --remote run's git remote and its round trips
	Remote  string `json:"remote,omitempty"`
	Fetches int    `json:"fetches,omitempty"`
	Pushes  int    `json:"pushes,omitempty"`
	// run_start: stories in the plan; the run resumes a killed one
	Stories int  `json:"stories,omitempty"`
	Resumed bool `json:"resumed,omitempty"`
	// story_skipped: the story's budget ran out; budget_reached: which
	Budget string `json:"budget,omitempty"`
	// limit_wait_start, limit_wait_end
	Until    time.Time `json:"until,omitzero"`
	WaitedMS float64   `json:"waited_ms,omitempty"`
	WaitCut  bool      `json:"interrupted,omitempty"`
	// tool: the agent's latest tool call
	ToolCall string `json:"tool,omitempty"`
	// rollback_refused, guard_denied
	Reason string `json:"reason,omitempty"`
	// usage_limit
	Message string    `json:"message,omitempty"`
	Reset   time.Time `json:"reset,omitzero"`
	// usage_limit, usage_limit_end, limit_wait_start: the wait is for the
	// model service (an outage: HTTP 5xx, overloaded), not a usage limit
	Outage bool `json:"outage,omitempty"`
	// merged, merge_failed, landed, land_failed, claim_lost; run_start:
	// the branch the run commits to
	Branch      string   `json:"branch,omitempty"`
	FastForward bool     `json:"fast_forward,omitempty"`
	LandMS      float64  `json:"land_ms,omitempty"`
	Paths       []string `json:"paths,omitempty"`
	// test-failure
	Runner   string `json:"runner,omitempty"`
	Rollback string `json:"rollback,omitempty"`
	// ticked_by_agent: the stories the agent ticked itself
	Ticked []string `json:"ticked,omitempty"`
	// removed_by_agent: the open stories the agent took out of the plan
	Removed []string `json:"removed,omitempty"`
	// guard_denied
	Decision string `json:"decision,omitempty"`
	Command  string `json:"command,omitempty"`
	// branch_left: the branch the attempt was on, and where the agent went
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// operation_aborted: the merge, rebase, cherry-pick ... left half done
	Operation string `json:"operation,omitempty"`
	// history_rewritten: how many commits made before the attempt it
	// rewrote, and whether what replaced them was all its own
	Commits int  `json:"commits,omitempty"`
	Own     bool `json:"own,omitempty"`
	// history_cleaned: the agent's commits made again without packages
	// and large files (Paths; Commits of them, Dropped of those left
	// empty); history_kept: why they were not (Reason); tests_skipped:
	// which tests were switched off, and how (Reason)
	Dropped int `json:"dropped,omitempty"`
	// refs_restored: the tags and branches taken back
	Refs []string `json:"refs,omitempty"`
	// git_config_restored: the git settings put back, each with what the
	// attempt had made of it.
	Settings []string `json:"settings,omitempty"`
	// nested_repo: a repository of its own the agent made in the tree
	// (Paths): its .git set aside there and its files committed, or left
	// out of the commit, a clone of URL (or Reason).
	Aside string `json:"aside,omitempty"`
	URL   string `json:"url,omitempty"`
	// dir_left_out: a directory of installed packages or a cache left
	// out of the commit (Paths): what it is, and its .git/info/exclude
	// rule.
	What string `json:"what,omitempty"`
	Rule string `json:"rule,omitempty"`
	// dir_left_out: a file (of secrets), not a directory
	File bool `json:"file,omitempty"`
	// tests_deleted, tests_skipped: the attempt failed for it
	// (--keep-tests). tests_skipped says what it switched off in Reason.
	Refused bool `json:"refused,omitempty"`
	// merge_failed: the story gets another attempt (--retry-conflicts)
	Retry bool `json:"retry,omitempty"`
	// run_start: stories already done; agent-stop, story-incomplete: 1
	// when the story was ticked (true in the log)
	Done Count `json:"done,omitempty"`
}

// StoryRef names a story in an event.
type StoryRef struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
}

// Count is a number that also reads a JSON boolean as 1 or 0: the "done"
// key holds a count in run_start and a boolean in the hooks' stop events.
type Count int

// UnmarshalJSON implements json.Unmarshaler.
func (c *Count) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*c = 1
		return nil
	case "false", "null":
		*c = 0
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*c = Count(n)
	return nil
}

// InterruptedBy is a run_end's error for a run a signal stopped: "interrupted
// by SIGTERM", or "interrupted" when the signal is not known.
func InterruptedBy(signal string) string {
	if signal == "" {
		return OutcomeInterrupted
	}
	return OutcomeInterrupted + " by " + signal
}

// RunInterrupted reports whether a run_end records a run a signal stopped
// (as InterruptedBy says it, or as Go's "context canceled" in logs written
// before).
func (e *Event) RunInterrupted() bool {
	return e.Error == OutcomeInterrupted || strings.HasPrefix(e.Error, OutcomeInterrupted+" by ") || strings.Contains(e.Error, "context canceled")
}

// Failed reports whether an iteration_end records a failed attempt.
func (e *Event) Failed() bool {
	return strings.HasPrefix(e.Outcome, outcomeFailed)
}

// FailSource is the SOURCE of a "failed (SOURCE)" outcome, or "".
func (e *Event) FailSource() string {
	if !e.Failed() {
		return ""
	}
	s := strings.TrimPrefix(e.Outcome, outcomeFailed)
	return strings.Trim(strings.TrimSpace(s), "()")
}

// Duration is how long an iteration_end's attempt took.
func (e *Event) Duration() time.Duration {
	return time.Duration(e.DurationMS * float64(time.Millisecond))
}

// Begin is when an iteration_end's attempt started: its started field, or
// its end time less its duration in logs written before that field.
func (e *Event) Begin() time.Time {
	if !e.Started.IsZero() {
		return e.Started
	}
	return e.Time.Add(-e.Duration())
}
