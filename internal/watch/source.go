package watch

import (
	"errors"
	"io"
	"path/filepath"

	"github.com/wiggum-dev/wiggum/internal/events"
)

// Paths, relative to the main working tree's root: the loop's event log
// and its agents' output logs (loop.AgentLogDir). watch does not import the
// loop, so that reading can never set anything up.
const (
	EventLog    = ".ralph/wiggum/events.jsonl"
	AgentLogDir = ".ralph/wiggum/agent/"
)

// Source follows a repository's event log by polling it; it opens the file
// read-only and nothing else.
type Source struct {
	Root string
	// Bad counts lines that were not events (corrupt or oversized) and
	// were skipped.
	Bad int
	r   *events.Reader
	// started: the first poll skips to the newest run.
	started bool
}

// NewSource follows the log of the working tree at root.
func NewSource(root string) *Source {
	return &Source{Root: root, r: events.NewReader(filepath.Join(root, filepath.FromSlash(EventLog)))}
}

// Poll returns the events appended since the last call. The first call
// returns the newest run's events only.
func (s *Source) Poll() ([]Event, error) {
	var out []Event
	off := s.r.Offset()
	for {
		e, err := s.r.Next()
		var le *events.LineError
		switch {
		case errors.As(err, &le):
			s.Bad++
			continue
		case errors.Is(err, io.EOF):
			if s.r.Offset() < off {
				// The log was replaced and the reader starts over:
				// read the new one now.
				off = 0
				continue
			}
			s.started = true
			return out, nil
		case err != nil:
			return out, err
		}
		if !s.started && e.Name == events.RunStart {
			out = out[:0]
		}
		out = append(out, e)
		off = s.r.Offset()
	}
}

// Close releases the log.
func (s *Source) Close() error { return s.r.Close() }
