package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/termtext"
)

// Line renders one event as one plain line, for a log file, a pipe or a
// terminal: what the event holds from an agent or a plan (titles, tool
// calls, errors) is only ever shown, never interpreted (termtext.Clean).
func Line(e Event) string {
	var b strings.Builder
	b.WriteString(e.Time.Local().Format("15:04:05"))
	if e.Worker > 0 {
		fmt.Fprintf(&b, " [w%d]", e.Worker)
	}
	if e.Story != "" {
		b.WriteString(" " + e.Story)
	}
	b.WriteString(" ")
	switch e.Name {
	case "run_start":
		fmt.Fprintf(&b, "run started: plan %s", e.Plan)
		if e.Branch != "" {
			fmt.Fprintf(&b, " on branch %s", e.Branch)
		}
		if e.Workers > 1 {
			fmt.Fprintf(&b, ", %d workers", e.Workers)
		}
		if e.Stories > 0 {
			fmt.Fprintf(&b, ", %d/%d stories done", e.Done, e.Stories)
		}
		if e.PID > 0 {
			fmt.Fprintf(&b, ", pid %d", e.PID)
		}
	case "iteration_start":
		fmt.Fprintf(&b, "iteration %d, attempt %d/%d: %s", e.Iteration, e.Attempt, e.Attempts, termtext.Title(e.Title))
	case "tool":
		fmt.Fprintf(&b, "tool %s", e.ToolCall)
		if e.InputTokens+e.OutputTokens > 0 {
			fmt.Fprintf(&b, " (%s)", Tokens(int(e.InputTokens), int(e.OutputTokens)))
		}
	case "iteration_end":
		fmt.Fprintf(&b, "iteration %d, attempt %d: %s in %s", e.Iteration, e.Attempt, e.Outcome, ms(e.DurationMS))
		if e.Commit != "" {
			b.WriteString(", commit " + e.Commit)
		}
		if e.Backup != "" {
			b.WriteString(", rolled back, saved in " + e.Backup)
		}
		if e.CostUSD > 0 || e.InputTokens > 0 {
			fmt.Fprintf(&b, " (%s, %s)", Dollars(e.CostUSD), Tokens(int(e.InputTokens), int(e.OutputTokens)))
		}
	case "run_end":
		fmt.Fprintf(&b, "run ended: %d done", len(e.Completed))
		if len(e.Skipped) > 0 {
			fmt.Fprintf(&b, ", skipped %s", strings.Join(e.Skipped, ", "))
		}
		fmt.Fprintf(&b, ", %d open", e.Open)
		if e.Error != "" {
			b.WriteString(": " + e.Error)
		}
	default:
		// The notice's text where it has one, else the event's name
		// and the fields people look for.
		if _, text := Describe(e); text != "" {
			b.WriteString(text)
		} else {
			b.WriteString(e.Name)
			for _, f := range []string{e.Message, e.Reason, e.Error} {
				if f != "" {
					b.WriteString(": " + f)
					break
				}
			}
		}
	}
	return termtext.Clean(b.String())
}

// Tokens renders a token count compactly: 12.3k in / 1.2k out.
func Tokens(in, out int) string {
	return compact(in) + " in / " + compact(out) + " out"
}

func compact(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// Dollars renders a cost.
func Dollars(v float64) string { return fmt.Sprintf("$%.4f", v) }

// PlainOptions configure Plain.
type PlainOptions struct {
	Follow   bool          // keep following until the run ends
	Interval time.Duration // between polls
	Alive    func(pid int) bool
	// JSON prints each event as its JSON record instead of a line of text.
	JSON bool
	// Notice receives what is not an event (the run's process vanished,
	// lines skipped), for stderr.
	Notice func(string)
}

// Plain prints the newest run's events, one line each, and with Follow
// keeps printing new ones until the run ends, its process is gone, or ctx
// is cancelled.
func Plain(ctx context.Context, src *Source, out io.Writer, o PlainOptions) error {
	var st State
	waiting := false
	w := bufio.NewWriterSize(out, 64<<10)
	for {
		err := src.Each(func(e Event) {
			st.Apply(e)
			if o.JSON {
				if b, err := json.Marshal(e); err == nil {
					w.Write(b)
				}
			} else {
				w.WriteString(Line(e))
			}
			w.WriteByte('\n')
		})
		if ferr := w.Flush(); ferr != nil {
			return ferr
		}
		if err != nil {
			return fmt.Errorf("watch: read %s: %w", EventLog, err)
		}
		if !o.Follow {
			if !st.Seen && o.Notice != nil {
				o.Notice("no run recorded in " + EventLog + " yet")
			}
			return nil
		}
		switch {
		case st.Ended:
			return nil
		case st.Seen && !st.Live(o.Alive):
			if o.Notice != nil {
				o.Notice(fmt.Sprintf("the run's process (pid %d) is gone and logged no end: it was killed or crashed", st.PID))
			}
			return nil
		case !st.Seen && !waiting && o.Notice != nil:
			o.Notice("no run yet; waiting for one to start (ctrl-c to stop)")
			waiting = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.Interval):
		}
	}
}
