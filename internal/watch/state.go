package watch

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/termtext"
)

// maxNotices bounds the recent-events list.
const maxNotices = 50

// State is a run as its events tell it. The zero value is "no run yet".
type State struct {
	Seen     bool // a run_start was seen
	Plan     string
	Branch   string // the branch the run commits to
	PID      int
	Workers  int // 0 or 1: serial
	Started  time.Time
	Ended    bool
	EndTime  time.Time
	EndError string

	Total, Done int // the plan's stories, and how many are done
	Iterations  int
	Cost        float64
	InTokens    int
	OutTokens   int

	// LimitUntil is when the usage limit the run waits for resets; zero
	// when it is not waiting.
	LimitUntil time.Time

	Slots   []*Worker // by worker number - 1; a serial run has one
	Notices []Notice  // newest last
	Last    time.Time // the newest event's time

	storyCost map[string]float64
	storyDone map[string]bool
	parallel  bool
	// worked are the stories the run gave an agent or landed, and
	// doneAtStart the stories done before it: a story added to the plan
	// during the run grows Total past run_start's count.
	worked      map[string]bool
	doneAtStart int
}

// Worker is what one worker is doing.
type Worker struct {
	N         int
	Story     string
	Title     string
	Iteration int
	Attempt   int
	Attempts  int
	Started   time.Time
	Tool      string
	ToolTime  time.Time
	InTokens  int
	OutTokens int
	Cost      float64 // the story's finished attempts, retries included
	Output    string  // the attempt's agent output log, relative to the root
	Busy      bool
	Outcome   string // the last attempt's, when not busy
}

// Notice is one event worth a line in the recent list: rollbacks, guard
// denials, merges, conflicts, limit waits, skips.
type Notice struct {
	Time  time.Time
	Kind  string // rollback, denied, merged, conflict, limit, skipped, failed, done, refused, stopped, git
	Story string
	Text  string
}

// Apply folds one event into the state. A run_start starts afresh: the view
// is of the newest run.
func (s *State) Apply(e Event) {
	if !e.Time.IsZero() {
		s.Last = e.Time
	}
	switch e.Name {
	case "run_start":
		// A resumed run's start carries what the run spent before it: its
		// spending is across resumes.
		*s = State{Seen: true, Plan: e.Plan, Branch: e.Branch, PID: e.PID, Workers: e.Workers, Started: e.Time, Total: e.Stories,
			Done: int(e.Done), Last: e.Time, storyCost: map[string]float64{}, storyDone: map[string]bool{}, parallel: e.Workers > 1,
			Cost: e.CostUSD, InTokens: int(e.InputTokens), OutTokens: int(e.OutputTokens), doneAtStart: int(e.Done)}
	case "iteration_start":
		s.workedOn(e.Story)
		w := s.slot(e.Worker)
		*w = Worker{N: w.N, Story: e.Story, Title: e.Title, Iteration: e.Iteration, Attempt: e.Attempt, Attempts: e.Attempts,
			Started: e.Time, Output: e.Output, Busy: true, Cost: s.storyCost[e.Story]}
		if e.Iteration > s.Iterations {
			s.Iterations = e.Iteration
		}
	case "tool":
		if w := s.find(e.Worker, e.Story); w != nil {
			w.Tool, w.ToolTime = e.ToolCall, e.Time
			w.InTokens, w.OutTokens = int(e.InputTokens), int(e.OutputTokens)
		}
	case "iteration_end":
		s.Cost += e.CostUSD
		s.InTokens += int(e.InputTokens)
		s.OutTokens += int(e.OutputTokens)
		if s.storyCost == nil {
			s.storyCost = map[string]float64{}
		}
		s.storyCost[e.Story] += e.CostUSD
		if w := s.find(-1, e.Story); w != nil {
			w.Busy, w.Outcome, w.Cost = false, e.Outcome, s.storyCost[e.Story]
			if e.InputTokens+e.OutputTokens > 0 {
				w.InTokens, w.OutTokens = int(e.InputTokens), int(e.OutputTokens)
			}
		}
		if e.Outcome == "done" && !s.parallel {
			s.markDone(e.Story)
		}
	case "limit_wait_start":
		s.LimitUntil = e.Until
	case "limit_wait_end":
		s.LimitUntil = time.Time{}
	case "merged", "landed", "landed_elsewhere":
		s.markDone(e.Story)
		if w := s.find(-1, e.Story); w != nil {
			w.Outcome = "merged"
		}
	case "run_end":
		s.Ended, s.EndTime, s.EndError = true, e.Time, e.Error
		for _, w := range s.Slots {
			w.Busy = false
		}
	}
	if kind, text := Describe(e); kind != "" {
		s.Notices = append(s.Notices, Notice{Time: e.Time, Kind: kind, Story: e.Story, Text: text})
		if len(s.Notices) > maxNotices {
			s.Notices = append(s.Notices[:0], s.Notices[len(s.Notices)-maxNotices:]...)
		}
	}
}

// Describe says what an event worth a notice was: its kind and one line
// of text; "" for the rest.
func Describe(e Event) (kind, text string) {
	switch e.Name {
	case "iteration_end":
		switch {
		case e.Outcome == "done" && e.Empty:
			return "done", fmt.Sprintf("attempt %d done in %s%s; the agent changed nothing", e.Attempt, ms(e.DurationMS), prefixed(", commit ", e.Commit))
		case e.Outcome == "done":
			return "done", fmt.Sprintf("attempt %d done in %s%s", e.Attempt, ms(e.DurationMS), prefixed(", commit ", e.Commit))
		case e.Backup != "":
			return "rollback", fmt.Sprintf("attempt %d %s; rolled back, saved in %s", e.Attempt, e.Outcome, e.Backup)
		case e.Outcome != "":
			return "failed", fmt.Sprintf("attempt %d %s", e.Attempt, e.Outcome)
		}
	case "merged":
		return "merged", "merged" + prefixed(" as ", short(e.Commit))
	case "landed":
		return "merged", "landed on the remote" + prefixed(" as ", short(e.Commit))
	case "landed_elsewhere":
		return "merged", "landed by another machine meanwhile; this attempt added nothing"
	case "land_failed", "claim_lost":
		return "conflict", strings.ReplaceAll(e.Name, "_", " ") + prefixed(": ", e.Error) + "; branch " + strings.TrimPrefix(e.Branch, "refs/heads/") + " kept"
	case "limit_wait_start":
		if e.Outage {
			return "limit", "all workers wait for the model service; trying again at " + e.Until.Local().Format("15:04")
		}
		return "limit", "all workers wait for the usage limit to reset at " + e.Until.Local().Format("15:04")
	case "budget_reached":
		return "stopped", "budget reached: " + e.Reason
	case "remote_stats":
		return "info", fmt.Sprintf("shared through %s: %d fetch(es), %d push(es)", e.Remote, e.Fetches, e.Pushes)
	case "merge_failed":
		if e.Retry {
			return "conflict", "merge conflict in " + strings.Join(e.Paths, ", ") + "; branch " + strings.TrimPrefix(e.Branch, "refs/heads/") + " kept, and the story gets another attempt to merge it in"
		}
		if len(e.Paths) > 0 {
			return "conflict", "merge conflict in " + strings.Join(e.Paths, ", ") + "; branch " + strings.TrimPrefix(e.Branch, "refs/heads/") + " kept"
		}
		return "conflict", "not merged, branch kept: " + e.Error
	case "usage_limit":
		if e.Outage {
			return "limit", e.Message
		}
		text := "usage limit: " + e.Message
		if !e.Reset.IsZero() {
			text += "; resets " + e.Reset.Local().Format("15:04")
		}
		return "limit", text
	case "usage_limit_end":
		if e.Outage {
			return "limit", "trying the model service again"
		}
		return "limit", "usage limit over; going on"
	case "ticked_by_agent":
		return "done", "the agent also ticked " + strings.Join(e.Ticked, ", ") + " in the plan (no attempt of their own)"
	case "removed_by_agent":
		return "git", "the agent took " + strings.Join(e.Removed, ", ") + ", open, out of the plan: not run"
	case "story_skipped":
		return "skipped", fmt.Sprintf("skipped after %d failed attempts", e.Attempts)
	case "rollback_refused":
		return "refused", "rollback refused: " + e.Reason
	case "rollback_failed":
		return "stopped", "rollback failed: " + e.Error
	case "worktree_set_aside":
		return "rollback", "its rollback was refused (" + e.Reason + "); the worktree, the run's own, is set aside: saved in " + e.Backup + ", the next attempt in a new one"
	case "commit_branch_refused":
		return "stopped", "passed, but the pre-commit hook no-commit-to-branch refuses every commit on this branch; saved in " + e.Backup + "; run on a branch of its own (--branch)"
	case "commit_message_refused":
		return "stopped", "passed, but the commit-msg hook refused its message " + quote(e.Message) + "; its work is left uncommitted for the next run"
	case "worktree_made":
		return "git", fmt.Sprintf("the agent made a worktree of its own, %s (%s), holding %d commit(s) the attempt's branch does not have; left as it is", strings.Join(e.Paths, ", "), e.Branch, e.Commits)
	case "nested_repo":
		switch {
		case e.Aside != "" && e.Backup != "":
			return "rollback", strings.Join(e.Paths, ", ") + "/, a git repository of its own the attempt made, removed: its files saved in " + e.Backup + ", its .git kept in " + e.Aside
		case e.Aside != "":
			return "git", strings.Join(e.Paths, ", ") + "/ was a git repository of its own (a git init): its files committed, its .git kept in " + e.Aside
		case e.URL != "":
			return "git", strings.Join(e.Paths, ", ") + "/ is a clone of " + e.URL + ": left out of the commit"
		}
		return "git", strings.Join(e.Paths, ", ") + "/ is a git repository of its own: left out of the commit (" + e.Reason + ")"
	case "submodule_uncommitted":
		return "git", "files changed in submodule " + strings.Join(e.Paths, ", ") + ", uncommitted there: not in the story's commit"
	case "file_left_out":
		return "git", strings.Join(e.Paths, ", ") + " left out of the commit: a new file over --max-file-size"
	case "commit_unsigned":
		return "stopped", "passed, but git could not sign its commit: " + e.Error + "; its work is left uncommitted for the next run"
	case "commit_failed":
		return "stopped", "passed, but git could not write its commit into the repository: " + e.Error + "; its work is left uncommitted for the next run"
	case "dir_left_out":
		name := strings.Join(e.Paths, ", ") + "/"
		if e.File {
			name = strings.TrimSuffix(name, "/")
		}
		return "git", name + " is " + e.What + ": left out of every commit (" + e.Rule + " in .git/info/exclude)"
	case "tick_uncommitted":
		return "stopped", "landed (" + short(e.Commit) + "), but git would not commit its tick in the plan: " + e.Error + "; the tick is left in the plan for the next run to commit"
	case "branch_left":
		return "git", "the agent left " + e.From + " for " + e.To + "; its work cannot land, saved in " + e.Backup
	case "operation_aborted":
		return "git", "the agent left a " + e.Operation + " half done; aborted, saved in " + e.Backup
	case "history_rewritten":
		if e.Own {
			return "git", fmt.Sprintf("the agent rewrote %d commit(s) of %s made before its attempt; put back, its rewrite saved in %s", e.Commits, e.Branch, e.Backup)
		}
		return "git", fmt.Sprintf("the agent rewrote %d commit(s) of %s made before its attempt onto others' commits; the attempt fails", e.Commits, e.Branch)
	case "work_ignored":
		return "git", fmt.Sprintf("a .gitignore change of the attempt's hides %d path(s) it made from git, not committed: %s", len(e.Paths), strings.Join(e.Paths, ", "))
	case "tests_deleted":
		if e.Refused {
			return "tests", fmt.Sprintf("the attempt deleted %d test file(s): %s - failed (--keep-tests)", len(e.Paths), strings.Join(e.Paths, ", "))
		}
		return "tests", fmt.Sprintf("its commit %s deletes %d test file(s): %s - look at it", short(e.Commit), len(e.Paths), strings.Join(e.Paths, ", "))
	case "tests_skipped":
		if e.Refused {
			return "tests", "the attempt switched tests off: " + e.Reason + " - failed (--keep-tests)"
		}
		return "tests", "its commit " + short(e.Commit) + " switches tests off: " + e.Reason + " - look at it"
	case "history_cleaned":
		how := fmt.Sprintf("made its %d commit(s) again without them", e.Commits)
		if e.Dropped > 0 {
			how += fmt.Sprintf(", %d left empty and dropped", e.Dropped)
		}
		return "git", "the agent's commits put " + strings.Join(e.Paths, ", ") + " in the history: " + how + "; as it made them, saved in " + e.Backup
	case "history_kept":
		return "git", "the commits made during the attempt put " + strings.Join(e.Paths, ", ") + " in the history, and stay as they are: " + e.Reason
	case "refs_restored":
		names := make([]string, len(e.Refs))
		for i, r := range e.Refs {
			names[i] = strings.TrimPrefix(strings.TrimPrefix(r, "refs/tags/"), "refs/heads/")
		}
		return "git", "the failed attempt's " + strings.Join(names, ", ") + " taken back; its work is in " + e.Backup
	case "git_lock_removed":
		return "git", "removed git's lock " + strings.Join(e.Paths, ", ") + ": left by a git killed mid-command, which no longer runs"
	case "git_config_restored":
		return "git", "the agent changed git settings wiggum relies on (" + strings.Join(e.Settings, "; ") + "); put back"
	case "state_put_back":
		return "git", "wiggum's " + strings.Join(e.Paths, ", ") + " deleted during the attempt (an rm -rf .ralph?); put back"
	case "test-failure":
		text := "tests failed (" + e.Runner + ")"
		if e.Rollback != "" {
			text += "; rolled back by the hook, saved in " + e.Rollback
		}
		return "rollback", text
	case "guard_denied":
		verb := "denied"
		if e.Decision != "" && e.Decision != "deny" {
			verb = "held for asking"
		}
		return "denied", "guard " + verb + " " + quote(e.Command) + prefixed(": ", e.Reason)
	case "interrupted":
		return "stopped", "interrupted"
	case "run_end":
		text := fmt.Sprintf("run ended: %d iteration(s), %d done", e.Iterations, len(e.Completed))
		if e.Error != "" {
			text += "; " + e.Error
		}
		return "end", text
	}
	return "", ""
}

func (s *State) markDone(story string) {
	if s.storyDone == nil {
		s.storyDone = map[string]bool{}
	}
	if !s.storyDone[story] {
		s.storyDone[story] = true
		s.Done++
	}
	s.workedOn(story)
}

// worked_ counts story among those the run worked on.
func (s *State) workedOn(story string) {
	if s.worked == nil {
		s.worked = map[string]bool{}
	}
	s.worked[story] = true
	s.Total = max(s.Total, s.doneAtStart+len(s.worked))
}

// slot returns worker n's record, creating it (a serial run's is 1).
func (s *State) slot(n int) *Worker {
	// The reader refuses a worker past MaxWorkers; an Event from
	// elsewhere must not size Slots either.
	n = min(max(n, 1), events.MaxWorkers)
	for len(s.Slots) < n {
		s.Slots = append(s.Slots, &Worker{N: len(s.Slots) + 1})
	}
	return s.Slots[n-1]
}

// find returns the worker on story (n when known, >= 0).
func (s *State) find(n int, story string) *Worker {
	if n >= 1 && n <= len(s.Slots) && s.Slots[n-1].Story == story {
		return s.Slots[n-1]
	}
	if n == 0 && len(s.Slots) == 1 && s.Slots[0].Story == story {
		return s.Slots[0]
	}
	for _, w := range s.Slots {
		if w.Story == story && story != "" {
			return w
		}
	}
	return nil
}

// Live reports whether the run is still going: started, not ended, and its
// process alive (alive decides; a crashed run never logs its end).
func (s *State) Live(alive func(pid int) bool) bool {
	return s.Seen && !s.Ended && (s.PID == 0 || alive(s.PID))
}

// Busy lists the workers with an attempt in progress, by number.
func (s *State) Busy() []*Worker {
	var out []*Worker
	for _, w := range s.Slots {
		if w.Busy {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out
}

func ms(v float64) string {
	return (time.Duration(v) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func quote(s string) string {
	if s == "" {
		return "a command"
	}
	return fmt.Sprintf("%q", termtext.Clip(s, 80))
}
