package watch

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Paths, relative to the main working tree's root. They are the loop's and
// the hooks' (session.EventFile, worktree.Dir); watch imports neither, so
// that reading can never set anything up.
const (
	EventLog    = ".ralph/wiggum/events.jsonl"
	WorktreeDir = ".ralph/wiggum/worktrees"
	AgentLogDir = ".ralph/wiggum/agent/"
)

// maxRead bounds one poll's read of a log, so a huge log is taken in
// slices rather than all in memory at once.
const maxRead = 8 << 20

// Source follows a repository's event logs by polling their size: the main
// tree's log and, during a parallel run, each worktree's own (where the
// hooks of a worker's agent record). It opens files read-only and nothing
// else.
type Source struct {
	Root string
	// Bad counts lines that were not events (torn or corrupt) and were
	// skipped.
	Bad  int
	main *tailer
	wts  map[string]*tailer
	// started: the first poll skips to the newest run.
	started bool
}

// NewSource follows the logs of the working tree at root.
func NewSource(root string) *Source {
	return &Source{Root: root, main: &tailer{path: filepath.Join(root, filepath.FromSlash(EventLog))}, wts: map[string]*tailer{}}
}

// Poll returns the events appended since the last call. The first call
// returns the newest run's events only.
func (s *Source) Poll() ([]Event, error) {
	var out []Event
	for {
		lines, more, err := s.main.read()
		if err != nil {
			return out, err
		}
		if !s.started {
			if i := lastRunStart(lines); i >= 0 {
				out, lines = out[:0], lines[i:]
			}
		}
		out = s.decode(out, lines, "")
		if !more {
			break
		}
	}
	s.started = true
	n := len(out)
	if err := s.pollWorktrees(&out); err != nil {
		return out, err
	}
	if len(out) > n {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	}
	return out, nil
}

func (s *Source) decode(out []Event, lines [][]byte, worktree string) []Event {
	for _, l := range lines {
		e, ok := decode(l)
		if !ok {
			s.Bad++
			continue
		}
		e.Worktree = worktree
		out = append(out, e)
	}
	return out
}

func (s *Source) pollWorktrees(out *[]Event) error {
	ents, err := os.ReadDir(filepath.Join(s.Root, filepath.FromSlash(WorktreeDir)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	seen := map[string]bool{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		seen[name] = true
		t := s.wts[name]
		if t == nil {
			t = &tailer{path: filepath.Join(s.Root, filepath.FromSlash(WorktreeDir), name, filepath.FromSlash(EventLog))}
			s.wts[name] = t
		}
		for {
			lines, more, err := t.read()
			if err != nil {
				break // a worktree removed while read is no error
			}
			*out = s.decode(*out, lines, name)
			if !more {
				break
			}
		}
	}
	for name := range s.wts {
		if !seen[name] {
			delete(s.wts, name)
		}
	}
	return nil
}

// lastRunStart is the index of the newest run_start line, or -1.
func lastRunStart(lines [][]byte) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if bytes.Contains(lines[i], []byte(`"event":"run_start"`)) {
			return i
		}
	}
	return -1
}

// tailer reads the complete lines appended to one file since its last read.
type tailer struct {
	path    string
	off     int64
	partial []byte
}

// read returns the new complete lines; more is true when the file holds
// more than one read takes. A file that shrank (replaced or truncated) is
// read again from its start.
func (t *tailer) read() (lines [][]byte, more bool, err error) {
	fi, err := os.Stat(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if fi.Size() < t.off {
		t.off, t.partial = 0, nil
	}
	if fi.Size() == t.off {
		return nil, false, nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	want := min(fi.Size()-t.off, maxRead)
	buf := make([]byte, len(t.partial), len(t.partial)+int(want))
	copy(buf, t.partial)
	n, err := io.ReadFull(io.NewSectionReader(f, t.off, want), buf[len(buf):cap(buf)])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, false, err
	}
	t.off += int64(n)
	buf = buf[:len(t.partial)+n]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		t.partial = buf
		return nil, t.off < fi.Size(), nil
	}
	t.partial = append([]byte(nil), buf[end+1:]...)
	for _, l := range bytes.Split(buf[:end], []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	return lines, t.off < fi.Size(), nil
}
