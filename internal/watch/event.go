// Package watch is `wiggum watch`: it folds a run's event log into what a
// person watching the run needs to see, live or after the fact, and follows
// the log by polling it. It only ever reads: no lock, no write, so it cannot
// disturb the run it shows.
package watch

import (
	"bytes"
	"encoding/json"
	"time"
)

// Event is one line of the event log (session.AppendEvent), the fields the
// view reads. Unknown events and fields are kept in Raw for plain output.
type Event struct {
	Time    time.Time `json:"time"`
	Name    string    `json:"event"`
	Session string    `json:"session"`

	Plan    string `json:"plan"`
	PID     int    `json:"pid"`
	Workers int    `json:"workers"`
	Stories int    `json:"stories"`
	Done    *int   `json:"done"` // run_start: stories already done; agent-stop: story ticked (bool, ignored)

	Story     string `json:"story"`
	Title     string `json:"title"`
	Iteration int    `json:"iteration"`
	Attempt   int    `json:"attempt"`
	Attempts  int    `json:"attempts"`
	Worker    int    `json:"worker"`
	Output    string `json:"output"`

	Tool         string  `json:"tool"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`

	Outcome    string   `json:"outcome"`
	DurationMS float64  `json:"duration_ms"`
	Commit     string   `json:"commit"`
	Backup     string   `json:"backup"`
	Rollback   string   `json:"rollback"`
	Branch     string   `json:"branch"`
	Paths      []string `json:"paths"`
	Error      string   `json:"error"`
	Reason     string   `json:"reason"`
	Message    string   `json:"message"`
	Reset      string   `json:"reset"`
	Runner     string   `json:"runner"`
	Command    string   `json:"command"`
	Completed  []string `json:"completed"`
	Skipped    []string `json:"skipped"`
	Open       *int     `json:"open"`

	// Worktree names the parallel worktree whose own log held the event
	// (hooks in a worker's worktree record there); "" for the main log.
	Worktree string `json:"-"`
}

// decode parses one log line. A line that is not a JSON object with an
// event name is reported as not ok; the caller counts it.
func decode(line []byte) (Event, bool) {
	var e Event
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return e, false
	}
	if err := json.Unmarshal(line, &e); err != nil {
		// "done" is a bool in agent-stop events: retry without it.
		var alt struct {
			Event
			Done any `json:"done"`
		}
		if json.Unmarshal(line, &alt) != nil || alt.Name == "" {
			return e, false
		}
		e = alt.Event
		e.Done = nil
	}
	return e, e.Name != ""
}
