// Package report tells what a run did, story by story, from its event log
// alone: attempts, outcomes, time, tokens and cost (retries included), the
// backups and kept branches worth a look - as text, as JSON with stable
// keys, or as one self-contained HTML page with a timeline. It only reads;
// a run in progress is reported as far as it has got.
package report

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/watch"
)

// Outcomes of a story.
const (
	StoryDone     = "done"       // committed (and merged, in parallel mode)
	StoryFailed   = "failed"     // skipped after its attempts or its budget
	StoryUnmerged = "not merged" // done on its branch, which could not merge and is kept
	StoryRunning  = "running"    // an attempt is under way
	StoryOpen     = "open"       // the run ended before the story was done
)

// Outcomes of a run.
const (
	RunDone        = "done"
	RunStopped     = "stopped"     // ended with work left or an error
	RunInterrupted = "interrupted" // SIGINT/SIGTERM
	RunRunning     = "running"
	RunUnfinished  = "unfinished" // no run_end, and its process is gone
)

// Report is one run. Its JSON keys are stable (see wiggum report --help).
type Report struct {
	Plan    string    `json:"plan"`
	Agent   string    `json:"agent"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"` // zero while running
	Outcome string    `json:"outcome"`
	Error   string    `json:"error"`
	Workers int       `json:"workers"`
	// PlanStories is the plan's size when the run started. Stories is
	// the stories the run reached and, once it has ended, the open ones
	// it never reached (outcome open, no attempts).
	PlanStories int      `json:"plan_stories"`
	Resumed     bool     `json:"resumed"`
	Stories     []*Story `json:"stories"`
	Totals      Totals   `json:"totals"`
	Waits       []Wait   `json:"limit_waits"`
	Denials     []Denial `json:"guard_denials"`
	// GitNotes: what the agents left in git and what wiggum did about
	// it - a package directory or a .env left out, their own commits
	// made again, a repository of their own, a branch they left, test
	// files a story's commit deletes - one line each, as wiggum watch
	// shows them.
	GitNotes []Note `json:"git_notes"`
	Skipped  int    `json:"log_lines_skipped"`  // lines of the log that could not be read
	TestFail int    `json:"test_failures_seen"` // failing test runs the hooks saw mid-attempt

	now time.Time // "now" for a run in progress
	// openListed: the run's end listed its open stories, so Stories has
	// those it never reached.
	openListed bool
}

// Story is one story's part in the run.
type Story struct {
	ID           string     `json:"id"`
	Title        string     `json:"title"`
	Outcome      string     `json:"outcome"`
	Attempts     []*Attempt `json:"attempts"`
	Seconds      float64    `json:"seconds"` // all attempts
	InputTokens  int64      `json:"input_tokens"`
	OutputTokens int64      `json:"output_tokens"`
	CostUSD      float64    `json:"cost_usd"`
	Backups      []string   `json:"backups"`        // refs/wiggum/backup/... of its rolled-back attempts
	Branch       string     `json:"kept_branch"`    // a branch that could not merge
	Conflicts    []string   `json:"conflict_paths"` // its conflicting paths
	MergeError   string     `json:"merge_error"`
	Merged       time.Time  `json:"merged,omitzero"`
	Commit       string     `json:"commit"`
	SkipReason   string     `json:"skip_reason"`

	// conflictAt and conflictBranch: when its branch last could not
	// merge, and which, for the timeline (Branch is only the branch kept
	// now).
	conflictAt     time.Time
	conflictBranch string
}

// Attempt is one iteration at a story.
type Attempt struct {
	Iteration    int       `json:"iteration"`
	Number       int       `json:"number"` // 1 for the story's first attempt
	Worker       int       `json:"worker"` // 0 in a serial run
	Start        time.Time `json:"start"`
	End          time.Time `json:"end,omitzero"` // zero while running or when never recorded
	Outcome      string    `json:"outcome"`      // as the loop logged it: done, failed (gate), usage limit, interrupted; running; unfinished
	Commit       string    `json:"commit"`
	Backup       string    `json:"backup"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	CostUSD      float64   `json:"cost_usd"`
}

// Totals add up the stories.
type Totals struct {
	Stories      int     `json:"stories"`
	Done         int     `json:"done"`
	Failed       int     `json:"failed"`
	Unmerged     int     `json:"not_merged"`
	Open         int     `json:"open"`
	Attempts     int     `json:"attempts"`
	Failures     int     `json:"failed_attempts"`
	Seconds      float64 `json:"seconds"` // wall clock of the run
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Wait is a usage-limit wait.
type Wait struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end,omitzero"`
	Message string    `json:"message"`
}

// Denial is a command the guard denied (or held for approval).
type Denial struct {
	Time     time.Time `json:"time"`
	Story    string    `json:"story"`
	Decision string    `json:"decision"`
	Command  string    `json:"command"`
	Reason   string    `json:"reason"`
}

// Note is one thing wiggum did about what an agent left in git.
type Note struct {
	Time  time.Time `json:"time"`
	Story string    `json:"story"`
	Text  string    `json:"text"`
}

// ErrNoRun is an event log that records no run.
var ErrNoRun = errors.New("the event log records no run yet; start one with wiggum run")

// Options configure Build.
type Options struct {
	// Alive reports whether the process of a run with no recorded end
	// still runs; nil treats such a run as running.
	Alive func(pid int) bool
	// Now is the time a running run is drawn up to (time.Now).
	Now time.Time
}

// maxDenials bounds the denials kept, and maxNotes the git notes; the
// counts go on.
const maxDenials, maxNotes = 200, 200

// Build reads the event log at path and reports its latest run - and,
// when that run resumed a killed one, what the killed run did too. It
// reads from that run's start, found backwards (watch.RunStart): the runs
// before it cost nothing, however long the log has grown.
func Build(path string, o Options) (*Report, error) {
	b := &builder{o: o}
	off, err := watch.RunStart(path)
	if err != nil {
		return nil, err
	}
	bad, err := events.ScanFrom(path, off, b.add)
	if err != nil {
		return nil, err
	}
	if b.r == nil {
		return nil, ErrNoRun
	}
	b.r.Skipped = bad.Lines
	b.finish()
	return b.r, nil
}

type builder struct {
	o       Options
	r       *Report
	pid     int
	stories map[string]*Story
	// running attempts, by worker
	running   map[int]*Attempt
	completed map[string]bool
	// open: the stories the run's end counts open, and how many (the
	// list may be cut short).
	open      []events.StoryRef
	openCount int
	denials   int
	notes     int
}

func (b *builder) story(id, title string) *Story {
	s := b.stories[id]
	if s == nil {
		s = &Story{ID: id, Outcome: StoryOpen, Backups: []string{}, Attempts: []*Attempt{}}
		b.stories[id] = s
		b.r.Stories = append(b.r.Stories, s)
	}
	if title != "" {
		s.Title = title
	}
	return s
}

func (b *builder) add(ev events.Event) error {
	if ev.Name == events.RunStart {
		if b.r == nil || !ev.Resumed {
			b.r = &Report{Started: ev.Time, Stories: []*Story{}, Waits: []Wait{}, Denials: []Denial{}, GitNotes: []Note{}}
			b.stories, b.running, b.completed, b.denials, b.notes = map[string]*Story{}, map[int]*Attempt{}, map[string]bool{}, 0, 0
		}
		b.r.Plan, b.r.Workers, b.pid = ev.Plan, max(ev.Workers, 1), ev.PID
		b.r.PlanStories = ev.Stories
		b.r.Agent = agentName(ev.Agent)
		b.r.Resumed = b.r.Resumed || ev.Resumed
		b.r.Ended, b.r.Outcome, b.r.Error = time.Time{}, "", ""
		b.open, b.openCount = nil, 0
		// A killed run's attempts that never ended stay unfinished.
		for w, a := range b.running {
			a.Outcome = "unfinished"
			delete(b.running, w)
		}
		return nil
	}
	if b.r == nil {
		return nil // events before any run (hooks outside a run)
	}
	if kind, text := watch.Describe(ev); kind == "git" || kind == "tests" {
		b.notes++
		if len(b.r.GitNotes) < maxNotes {
			b.r.GitNotes = append(b.r.GitNotes, Note{Time: ev.Time, Story: ev.Story, Text: text})
		}
	}
	switch ev.Name {
	case events.IterationStart:
		s := b.story(ev.Story, ev.Title)
		a := &Attempt{Iteration: ev.Iteration, Number: ev.Attempt, Worker: ev.Worker, Start: ev.Time, Outcome: StoryRunning}
		s.Attempts = append(s.Attempts, a)
		b.running[ev.Worker] = a
	case events.IterationEnd:
		s := b.story(ev.Story, ev.Title)
		w, a := ev.Worker, b.running[ev.Worker]
		if a == nil || !slices.Contains(s.Attempts, a) {
			// A resume closing a killed run's attempt names no worker.
			a = nil
			for rw, ra := range b.running {
				if ra.Iteration == ev.Iteration && slices.Contains(s.Attempts, ra) {
					w, a = rw, ra
				}
			}
		}
		if a == nil {
			// A log without iteration_start (an older wiggum): the end
			// says when the attempt began.
			a = &Attempt{Iteration: ev.Iteration, Number: ev.Attempt, Worker: ev.Worker, Start: ev.Begin()}
			s.Attempts = append(s.Attempts, a)
		}
		delete(b.running, w)
		if !ev.Started.IsZero() {
			a.Start = ev.Started
		}
		a.End, a.Outcome = ev.Time, ev.Outcome
		a.Commit, a.Backup = ev.Commit, ev.Backup
		a.InputTokens, a.OutputTokens, a.CostUSD = ev.InputTokens, ev.OutputTokens, ev.CostUSD
		if ev.Backup != "" {
			s.Backups = append(s.Backups, ev.Backup)
		}
		if ev.Outcome == events.OutcomeDone {
			s.Commit = ev.Commit
			if b.r.Workers <= 1 {
				s.Outcome = StoryDone
			}
		}
	case events.StorySkipped:
		s := b.story(ev.Story, "")
		s.Outcome = StoryFailed
		s.SkipReason = ev.Budget
		if s.SkipReason == "" {
			s.SkipReason = fmt.Sprintf("failed %d attempt(s)", ev.Attempts)
		}
	case events.Merged, events.Landed, events.LandedElsewhere:
		s := b.story(ev.Story, "")
		s.Outcome, s.Merged = StoryDone, ev.Time
		if ev.Commit != "" {
			s.Commit = ev.Commit
		}
		// Its latest outcome: a branch kept before (a conflict given
		// another attempt, work a resumed run landed) is kept no more.
		// The timeline still marks when it could not merge.
		s.Branch, s.Conflicts, s.MergeError = "", nil, ""
	case events.MergeFailed, events.LandFailed, events.ClaimLost:
		s := b.story(ev.Story, "")
		s.Outcome = StoryUnmerged
		s.Branch = strings.TrimPrefix(ev.Branch, "refs/heads/")
		s.Conflicts, s.MergeError, s.conflictAt, s.conflictBranch = ev.Paths, ev.Error, ev.Time, s.Branch
		if ev.Name == events.ClaimLost && s.MergeError == "" {
			s.MergeError = "another machine took the story over; this attempt's commits stay on its branch"
		}
	case events.UsageLimit, events.LimitWaitStart:
		if n := len(b.r.Waits); n == 0 || !b.r.Waits[n-1].End.IsZero() {
			b.r.Waits = append(b.r.Waits, Wait{Start: ev.Time, Message: ev.Message})
		}
	case events.UsageLimitEnd, events.LimitWaitEnd:
		if n := len(b.r.Waits); n > 0 && b.r.Waits[n-1].End.IsZero() {
			b.r.Waits[n-1].End = ev.Time
		}
	case events.GuardDenied:
		b.denials++
		if len(b.r.Denials) < maxDenials {
			b.r.Denials = append(b.r.Denials, Denial{Time: ev.Time, Story: ev.Story, Decision: ev.Decision, Command: ev.Command, Reason: ev.Reason})
		}
	case events.TestFailure:
		b.r.TestFail++
	case events.RunEnd:
		b.r.Ended = ev.Time
		b.r.Error = ev.Error
		switch {
		case ev.Error == "":
			b.r.Outcome = RunDone
		case ev.RunInterrupted():
			b.r.Outcome = RunInterrupted
		default:
			b.r.Outcome = RunStopped
		}
		for _, id := range ev.Completed {
			b.completed[id] = true
		}
		b.open, b.openCount = ev.OpenStories, ev.Open
	}
	return nil
}

func agentName(v any) string {
	switch a := v.(type) {
	case string:
		return a
	case []any:
		var parts []string
		for _, p := range a {
			parts = append(parts, fmt.Sprint(p))
		}
		return strings.Join(parts, " ")
	}
	return ""
}

// finish settles outcomes and adds up the totals.
func (b *builder) finish() {
	r := b.r
	now := b.o.Now
	if now.IsZero() {
		now = time.Now()
	}
	if r.Outcome == "" {
		r.Outcome = RunRunning
		if b.o.Alive != nil && !b.o.Alive(b.pid) {
			r.Outcome = RunUnfinished
		}
	}
	r.now = now
	if r.Outcome != RunRunning {
		for _, a := range b.running {
			a.Outcome = "unfinished"
		}
	}
	end := r.Ended
	if end.IsZero() {
		end = now
		if r.Outcome == RunUnfinished {
			end = r.lastTime()
		}
	}
	for i := range r.Waits {
		if r.Waits[i].End.IsZero() && r.Outcome != RunRunning {
			r.Waits[i].End = end
		}
	}
	slices.SortStableFunc(r.Stories, func(a, b *Story) int {
		return cmp.Compare(firstStart(a).UnixNano(), firstStart(b).UnixNano())
	})
	// The open stories the run never reached, after those it worked on,
	// in the plan's order.
	r.openListed = len(b.open) > 0
	for _, o := range b.open {
		if b.stories[o.ID] == nil {
			b.story(o.ID, o.Title)
		}
	}
	t := &r.Totals
	for _, s := range r.Stories {
		if s.Conflicts == nil {
			s.Conflicts = []string{}
		}
		if b.completed[s.ID] && s.Outcome != StoryUnmerged {
			s.Outcome = StoryDone
		}
		for _, a := range s.Attempts {
			if a.Outcome == StoryRunning && s.Outcome == StoryOpen {
				s.Outcome = StoryRunning
			}
			aEnd := a.End
			if aEnd.IsZero() && a.Outcome == StoryRunning {
				aEnd = now
			}
			if !aEnd.IsZero() {
				s.Seconds += aEnd.Sub(a.Start).Seconds()
			}
			s.InputTokens += a.InputTokens
			s.OutputTokens += a.OutputTokens
			s.CostUSD += a.CostUSD
			t.Attempts++
			if strings.HasPrefix(a.Outcome, "failed") {
				t.Failures++
			}
		}
		t.Stories++
		switch s.Outcome {
		case StoryDone:
			t.Done++
		case StoryFailed:
			t.Failed++
		case StoryUnmerged:
			t.Unmerged++
		default:
			t.Open++
		}
		t.InputTokens += s.InputTokens
		t.OutputTokens += s.OutputTokens
		t.CostUSD += s.CostUSD
	}
	// A list the run's end cut short: its count covers the rest. (A log
	// of an older wiggum has no list, and counted skipped and kept
	// stories in open too.)
	if extra := b.openCount - t.Open; extra > 0 && len(b.open) > 0 && len(b.open) < b.openCount {
		t.Open += extra
		t.Stories += extra
	}
	t.Seconds = end.Sub(r.Started).Seconds()
	if b.denials > len(r.Denials) {
		r.Denials = append(r.Denials, Denial{Decision: "more", Reason: fmt.Sprintf("%d more not listed", b.denials-len(r.Denials))})
	}
	if b.notes > len(r.GitNotes) {
		r.GitNotes = append(r.GitNotes, Note{Text: fmt.Sprintf("%d more not listed", b.notes-len(r.GitNotes))})
	}
}

func firstStart(s *Story) time.Time {
	if len(s.Attempts) == 0 {
		return time.Time{}
	}
	return s.Attempts[0].Start
}

// lastTime is the latest moment the log shows for the run.
func (r *Report) lastTime() time.Time {
	last := r.Started
	for _, s := range r.Stories {
		for _, a := range s.Attempts {
			for _, t := range []time.Time{a.Start, a.End} {
				if t.After(last) {
					last = t
				}
			}
		}
		if s.Merged.After(last) {
			last = s.Merged
		}
	}
	return last
}

// Span is the run's time range as drawn: start to end, or to now while
// it runs.
func (r *Report) Span() (time.Time, time.Time) {
	end := r.Ended
	if end.IsZero() {
		end = r.now
		if r.Outcome == RunUnfinished {
			end = r.lastTime()
		}
	}
	if !end.After(r.Started) {
		end = r.Started.Add(time.Second)
	}
	return r.Started, end
}
