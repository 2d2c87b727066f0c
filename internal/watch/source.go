package watch

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
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
	Bad  int
	path string
	r    *events.Reader
}

// NewSource follows the log of the working tree at root.
func NewSource(root string) *Source {
	return &Source{Root: root, path: filepath.Join(root, filepath.FromSlash(EventLog))}
}

// Each calls fn for each event appended since the last call, in order. The
// first call starts at the newest run, found without decoding the runs
// before it.
func (s *Source) Each(fn func(Event)) error {
	if s.r == nil {
		off, err := lastRunStart(s.path)
		if err != nil {
			return err
		}
		s.r = events.NewReaderAt(s.path, off)
	}
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
			return nil
		case err != nil:
			return err
		}
		fn(e)
		off = s.r.Offset()
	}
}

// Poll returns the events appended since the last call.
func (s *Source) Poll() ([]Event, error) {
	var out []Event
	err := s.Each(func(e Event) { out = append(out, e) })
	return out, err
}

// Close releases the log.
func (s *Source) Close() error {
	if s.r == nil {
		return nil
	}
	return s.r.Close()
}

// runStartMark is how the newest run's first line is found without
// decoding: the loop's JSON has no spaces, and only a run_start has it.
var runStartMark = []byte(`"event":"run_start"`)

// lastRunStart returns the offset of the line holding the last run_start
// in the log at path, reading it backwards in blocks; 0 when there is none
// (or no log).
func lastRunStart(path string) (int64, error) {
	f, size, err := openLog(path)
	if f == nil {
		return 0, err
	}
	defer f.Close()
	off, _, err := runStartBefore(f, size)
	return off, err
}

// RunStart returns the offset of the line that begins the log's newest
// run, found as watch finds it, reading backwards without decoding the
// runs before: the last run_start that decodes, or, when that run resumed
// a killed one, the run_start its chain of resumed runs began with. 0 when
// there is none (or no log). The report reads from there.
func RunStart(path string) (int64, error) {
	f, end, err := openLog(path)
	if f == nil {
		return 0, err
	}
	defer f.Close()
	var start int64 // the chain's earliest run_start found so far
	for {
		off, found, err := runStartBefore(f, end)
		if err != nil || !found {
			return start, err
		}
		r := events.NewReaderAt(path, off)
		ev, err := r.Next()
		r.Close()
		switch {
		case err != nil || ev.Name != events.RunStart:
			// A run_start line that cannot be read starts no run.
		case !ev.Resumed:
			return off, nil
		default:
			start = off
		}
		end = off
	}
}

// openLog opens the log at path and tells its size; no file and no error
// when there is no log.
func openLog(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// runStartBefore returns the offset of the line holding the last
// run_start that begins before end in f, reading backwards in blocks.
func runStartBefore(f *os.File, end int64) (off int64, found bool, err error) {
	const block = 256 << 10
	var tail []byte // the start of the block read before, for marks across blocks
	for end > 0 {
		start := max(0, end-block)
		buf := make([]byte, end-start, end-start+int64(len(tail)))
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, false, err
		}
		if !found {
			buf = append(buf, tail...)
			if i := bytes.LastIndex(buf, runStartMark); i >= 0 {
				found, buf = true, buf[:i]
			}
		}
		if found {
			if nl := bytes.LastIndexByte(buf, '\n'); nl >= 0 {
				return start + int64(nl) + 1, true, nil
			}
		} else {
			tail = append([]byte(nil), buf[:min(len(buf), len(runStartMark))]...)
		}
		end = start
	}
	return 0, found, nil
}
