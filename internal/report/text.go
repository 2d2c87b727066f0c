package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wiggum-dev/wiggum/internal/termtext"
)

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r for a person at a terminal. Text from the log (story
// titles, commands) is stripped of control characters, so it cannot move
// the cursor or recolour the terminal.
func WriteText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	start, end := r.Span()
	head := fmt.Sprintf("run of %s · started %s · %s", termtext.Clean(r.Plan), start.UTC().Format("2006-01-02 15:04:05 UTC"), Dur(end.Sub(start).Seconds()))
	if r.Workers > 1 {
		head += fmt.Sprintf(" · %d workers", r.Workers)
	}
	if r.Resumed {
		head += " · resumed"
	}
	ew.printf("%s\n", head)
	status := r.Outcome
	switch {
	case r.Outcome == RunInterrupted:
		status += " (by a signal)"
	case r.Error != "":
		status += ": " + termtext.Clean(r.Error)
	}
	ew.printf("%s\n", status)
	t := r.Totals
	ew.printf("%d story(ies): %d done, %d failed, %d not merged, %d open · %d attempt(s), %d failed · %s in / %s out tokens · %s\n",
		t.Stories, t.Done, t.Failed, t.Unmerged, t.Open, t.Attempts, t.Failures, Tokens(t.InputTokens), Tokens(t.OutputTokens), Cost(t.CostUSD))
	switch {
	case r.PlanStories <= t.Stories:
	case !r.openListed:
		ew.printf("(the plan has %d stories; the run reached %d)\n", r.PlanStories, t.Stories)
	default:
		// The run's end listed the open stories it never reached.
		ew.printf("(the plan had %d stories at the start; the %d not listed were done before the run)\n", r.PlanStories, r.PlanStories-t.Stories)
	}
	if len(r.Stories) > 0 {
		ew.printf("\n")
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "STORY\tOUTCOME\tATTEMPTS\tTIME\tTOKENS IN\tTOKENS OUT\tCOST\n")
		for _, s := range r.Stories {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", termtext.Clean(s.ID), s.Outcome, len(s.Attempts), Dur(s.Seconds), Tokens(s.InputTokens), Tokens(s.OutputTokens), USD(s.CostUSD))
		}
		fmt.Fprintf(tw, "total\t\t%d\t%s\t%s\t%s\t%s\n", t.Attempts, Dur(t.Seconds), Tokens(t.InputTokens), Tokens(t.OutputTokens), USD(t.CostUSD))
		tw.Flush()
	}
	for _, s := range r.Stories {
		ew.printf("\n%s: %s (%s)\n", termtext.Clean(s.ID), termtext.Clean(s.Title), s.Outcome)
		for _, a := range s.Attempts {
			line := fmt.Sprintf("  attempt %d  iteration %d", a.Number, a.Iteration)
			if a.Worker > 0 {
				line += fmt.Sprintf("  worker %d", a.Worker)
			}
			line += "  " + a.Start.UTC().Format("15:04:05")
			if !a.End.IsZero() {
				line += "-" + a.End.UTC().Format("15:04:05") + " " + Dur(a.End.Sub(a.Start).Seconds())
			}
			line += "  " + a.Outcome
			if a.CostUSD > 0 || a.InputTokens > 0 {
				line += fmt.Sprintf("  %s, %s tokens", Cost(a.CostUSD), Tokens(a.InputTokens+a.OutputTokens))
			}
			if a.Commit != "" {
				line += "  commit " + termtext.Clean(a.Commit)
			}
			if a.Backup != "" {
				line += "  saved in " + termtext.Clean(a.Backup)
			}
			ew.printf("%s\n", line)
		}
		if s.SkipReason != "" && s.Outcome == StoryFailed {
			ew.printf("  skipped: %s\n", termtext.Clean(s.SkipReason))
		}
		if s.Branch != "" {
			ew.printf("  branch %s kept: %s\n", termtext.Clean(s.Branch), termtext.Clean(firstLine(s.MergeError)))
			if len(s.Conflicts) > 0 {
				ew.printf("  conflicts in: %s\n", termtext.Clean(strings.Join(s.Conflicts, ", ")))
			}
		}
	}
	if look := lookAt(r); len(look) > 0 {
		ew.printf("\nto look at:\n")
		for _, l := range look {
			ew.printf("  %-60s # %s\n", termtext.Clean(l.Cmd), termtext.Clean(l.Why))
		}
	}
	if len(r.Waits) > 0 {
		ew.printf("\nwaits (usage limits, model-service outages):\n")
		for _, wt := range r.Waits {
			d := "still waiting"
			if !wt.End.IsZero() {
				d = Dur(wt.End.Sub(wt.Start).Seconds())
			}
			ew.printf("  %s  %s  %s\n", wt.Start.UTC().Format("15:04:05"), d, termtext.Clean(wt.Message))
		}
	}
	if len(r.GitNotes) > 0 {
		ew.printf("\nwhat the agents left in git, and what wiggum did about it:\n")
		for _, n := range r.GitNotes {
			if n.Time.IsZero() {
				ew.printf("  (%s)\n", termtext.Clean(n.Text))
				continue
			}
			ew.printf("  %s  %s  %s\n", n.Time.UTC().Format("15:04:05"), termtext.Clean(n.Story), termtext.Clean(n.Text))
		}
	}
	if len(r.Denials) > 0 {
		ew.printf("\nguard denials:\n")
		for _, d := range r.Denials {
			if d.Decision == "more" {
				ew.printf("  (%s)\n", d.Reason)
				continue
			}
			ew.printf("  %s  %s  %s: %s\n", d.Time.UTC().Format("15:04:05"), termtext.Clean(d.Story), termtext.Clean(d.Command), termtext.Clean(d.Reason))
		}
	}
	if r.TestFail > 0 {
		ew.printf("\nfailing test runs seen by the hooks mid-attempt: %d\n", r.TestFail)
	}
	if r.Skipped > 0 {
		ew.printf("\n%d line(s) of the event log could not be read and were skipped\n", r.Skipped)
	}
	return ew.err
}

type look struct{ Cmd, Why string }

// lookAt lists what a person should inspect: saved attempts and kept
// branches, with the command that shows each.
func lookAt(r *Report) []look {
	var out []look
	for _, s := range r.Stories {
		for _, a := range s.Attempts {
			if a.Backup != "" {
				out = append(out, look{"git show --stat " + a.Backup, fmt.Sprintf("%s attempt %d: %s", s.ID, a.Number, a.Outcome)})
			}
		}
		if s.Branch != "" {
			out = append(out, look{"git log --oneline HEAD.." + s.Branch, s.ID + ": not merged"})
		}
	}
	return out
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Dur formats seconds compactly: 850ms, 12.3s, 5m12s, 1h02m.
func Dur(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// Tokens formats a token count: 950, 12.3k, 1.25M.
func Tokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.2fM", float64(n)/1e6)
}

// USD formats a cost; "unknown" for none: an agent that reports its
// cost reports a positive one (codex and gemini report none, and $0.00
// read as a run that cost nothing).
func USD(c float64) string {
	if c <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("$%.2f", c)
}

// Cost is USD in a sentence: "cost unknown" for none.
func Cost(c float64) string {
	if c <= 0 {
		return "cost unknown"
	}
	return USD(c)
}
