package notify

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/redact"
)

// Kinds of message: the "kind" key of the JSON webhook's body.
const (
	KindRunEnd          = "run_end"          // the run ended (done, stopped or failed)
	KindStoryFailed     = "story_failed"     // a story used all its attempts and is skipped
	KindStuck           = "stuck"            // no attempt ended for the --notify-stuck time
	KindLimitStart      = "limit_start"      // the agent hit its usage limit
	KindLimitEnd        = "limit_end"        // the limit reset; the run goes on
	KindGuardDenied     = "guard_denied"     // the guard denied the agent a command
	KindMergeConflict   = "merge_conflict"   // a finished story's branch could not merge or land, or its claim was lost; it is kept
	KindRollbackRefused = "rollback_refused" // a rollback was unsafe; the run stops
	KindBudget          = "budget_reached"   // --max-cost was reached; the run stops
	KindTestsWeakened   = "tests_weakened"   // a story's commit deletes test files or switches tests off
	KindStoriesRemoved  = "stories_removed"  // an agent took open stories out of the plan; they will not run
)

// Severities.
const (
	SeverityInfo    = "info"
	SeverityWarning = "warning"
	SeverityError   = "error"
)

// Message is one notification. As JSON it is the webhook's body; its keys
// are stable.
type Message struct {
	Kind     string        `json:"kind"`
	Title    string        `json:"title"`
	Text     string        `json:"text"`
	Severity string        `json:"severity"`
	Repo     string        `json:"repo,omitempty"` // the repository's directory name
	Host     string        `json:"host,omitempty"`
	Story    string        `json:"story,omitempty"`
	Time     time.Time     `json:"time"`
	Event    *events.Event `json:"event,omitempty"` // the event-log line behind it
}

// maxField bounds what one field of an event contributes to a message.
const maxField = 300

// tracker remembers, across the events of one run, what a message about a
// later event needs: each story's latest backup and each worker's running
// attempt.
type tracker struct {
	backups map[string]string
	running map[int]events.Event // by worker
	limited bool
}

func newTracker() *tracker {
	return &tracker{backups: map[string]string{}, running: map[int]events.Event{}}
}

// message turns ev into a notification, or reports false for an event
// nobody needs to hear about.
func (t *tracker) message(ev events.Event) (Message, bool) {
	ev = redacted(ev)
	m := Message{Time: ev.Time, Story: ev.Story, Severity: SeverityInfo}
	if m.Time.IsZero() {
		m.Time = time.Now().UTC()
	}
	switch ev.Name {
	case events.IterationStart:
		t.running[ev.Worker] = ev
		return m, false
	case events.IterationEnd:
		delete(t.running, ev.Worker)
		if ev.Backup != "" {
			t.backups[ev.Story] = ev.Backup
		}
		return m, false
	case events.RunEnd:
		m.Kind = KindRunEnd
		m.Title = "wiggum: run finished"
		if ev.Error != "" {
			m.Title, m.Severity = "wiggum: run stopped", SeverityWarning
		}
		m.Text = fmt.Sprintf("%d iteration(s): %d story(ies) done, %d skipped, %d open", ev.Iterations, len(ev.Completed), len(ev.Skipped), ev.Open)
		if ev.CostUSD > 0 {
			m.Text += fmt.Sprintf(", $%.2f spent", ev.CostUSD)
		}
		if ev.Error != "" {
			m.Text += ". " + clip(ev.Error)
		}
	case events.StorySkipped:
		m.Kind, m.Severity = KindStoryFailed, SeverityError
		m.Title = "wiggum: " + clip(ev.Story) + " failed for good"
		m.Text = fmt.Sprintf("%s failed %d attempt(s) and is skipped for the rest of the run.", clip(ev.Story), ev.Attempts)
		if ev.Budget != "" {
			m.Text = clip(ev.Story) + " is skipped: " + clip(ev.Budget) + "."
		}
		if b := t.backups[ev.Story]; b != "" {
			m.Text += " Its last attempt is saved in " + b + " (wiggum recover)."
		}
	case events.LimitWaitStart:
		t.limited = true
		return m, false
	case events.UsageLimit:
		if t.limited {
			return m, false // another worker's; one message per wait
		}
		t.limited = true
		m.Kind, m.Severity = KindLimitStart, SeverityWarning
		m.Title = "wiggum: usage limit reached"
		if ev.Outage {
			m.Title = "wiggum: the model service is unavailable"
		}
		m.Text = clip(ev.Message)
		if !ev.Reset.IsZero() {
			m.Text += "; it resets at " + ev.Reset.UTC().Format("15:04 UTC, Jan 2")
		}
	case events.UsageLimitEnd:
		t.limited = false
		m.Kind = KindLimitEnd
		m.Title = "wiggum: usage limit over"
		if ev.Outage {
			m.Title = "wiggum: trying the model service again"
		}
		m.Text = "The wait is over; the run goes on."
	case events.GuardDenied:
		m.Kind, m.Severity = KindGuardDenied, SeverityWarning
		m.Title = "wiggum: the guard denied a command"
		if ev.Decision == "ask" {
			m.Title = "wiggum: the guard held a command for approval"
		}
		m.Text = "`" + clip(ev.Command) + "`: " + clip(ev.Reason)
		if ev.Story != "" {
			m.Text = clip(ev.Story) + ": " + m.Text
		}
	case events.MergeFailed:
		m.Kind, m.Severity = KindMergeConflict, SeverityError
		m.Title = "wiggum: " + clip(ev.Story) + " could not be merged"
		m.Text = "Its branch " + strings.TrimPrefix(ev.Branch, "refs/heads/") + " is kept: " + clip(firstLine(ev.Error))
	case events.LandFailed:
		m.Kind, m.Severity = KindMergeConflict, SeverityError
		m.Title = "wiggum: " + clip(ev.Story) + " could not be landed"
		m.Text = "Its branch " + strings.TrimPrefix(ev.Branch, "refs/heads/") + " is kept: " + clip(firstLine(ev.Error))
	case events.ClaimLost:
		m.Kind, m.Severity = KindMergeConflict, SeverityError
		m.Title = "wiggum: another machine took " + clip(ev.Story) + " over"
		m.Text = "This attempt's commits stay on " + strings.TrimPrefix(ev.Branch, "refs/heads/") + "."
	case events.BudgetReached:
		m.Kind, m.Severity = KindBudget, SeverityWarning
		m.Title = "wiggum: budget reached; no new attempts start"
		m.Text = clip(ev.Reason)
	case events.TestsDeleted, events.TestsSkipped:
		if ev.Refused {
			return m, false // the attempt failed for it (--keep-tests) and is retried
		}
		m.Kind, m.Severity = KindTestsWeakened, SeverityWarning
		m.Title = "wiggum: " + clip(ev.Story) + "'s commit deletes tests"
		m.Text = "Test files deleted: " + clip(strings.Join(ev.Paths, ", "))
		if ev.Name == events.TestsSkipped {
			m.Title = "wiggum: " + clip(ev.Story) + "'s commit switches tests off"
			m.Text = clip(ev.Reason)
		}
		m.Text += ". Look at commit " + clip(ev.Commit) + " (--keep-tests fails such an attempt)."
	case events.RemovedByAgent:
		m.Kind, m.Severity = KindStoriesRemoved, SeverityWarning
		m.Title = "wiggum: the agent of " + clip(ev.Story) + " took stories out of the plan"
		m.Text = clip(strings.Join(ev.Removed, ", ")) + ", open, will not run; put them back in the plan to have them done."
	case events.RollbackRefused:
		m.Kind, m.Severity = KindRollbackRefused, SeverityError
		m.Title = "wiggum: a rollback was refused; the run stops"
		m.Text = clip(ev.Story) + ": " + clip(ev.Reason)
	default:
		return m, false
	}
	m.Event = &ev
	return m, true
}

// redacted is ev with what may be a secret in its free text masked. The
// log's writer masks it already (session.AppendEventAt); a line another
// writer put there must not take a token to a third party either.
func redacted(ev events.Event) events.Event {
	for _, f := range []*string{&ev.Command, &ev.ToolCall, &ev.Reason, &ev.Error, &ev.Message, &ev.Title, &ev.Budget, &ev.URL} {
		*f = redact.Text(*f)
	}
	return ev
}

// stuck is the message for a run in which no attempt ended since last.
func (t *tracker) stuck(last time.Time, after time.Duration, now time.Time) Message {
	m := Message{Kind: KindStuck, Severity: SeverityWarning, Time: now.UTC(),
		Title: "wiggum: no progress for " + after.String()}
	var running []string
	for _, w := range slices.Sorted(maps.Keys(t.running)) {
		ev := t.running[w]
		s := fmt.Sprintf("%s attempt %d", clip(ev.Story), ev.Attempt)
		if ev.Worker > 0 {
			s += fmt.Sprintf(" (worker %d)", ev.Worker)
		}
		running = append(running, s+" since "+ev.Time.UTC().Format("15:04 UTC"))
		if m.Story == "" {
			m.Story = ev.Story
		}
	}
	m.Text = "No attempt has ended since " + last.UTC().Format("15:04 UTC") + "."
	if len(running) > 0 {
		m.Text += " Running: " + strings.Join(running, ", ") + "."
	}
	return m
}

func clip(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
	if len(s) > maxField {
		cut := maxField
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
