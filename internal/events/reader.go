package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// MaxLine bounds one line of the log; a longer one is skipped and
// reported. The loop's lines are well under 4 KiB.
const MaxLine = 1 << 20

// MaxWorkers is the most workers a parallel run has (wiggum run
// --workers).
const MaxWorkers = 32

// maxCostUSD bounds a cost a line can record: agents' reports are bounded
// when read (agent.MaxCostUSD), so no sum of wiggum's own costs comes near
// it, and no sum of lines within it overflows.
const maxCostUSD = 1e15

// inRange checks the numbers readers of the log size or sum by: a worker
// number past MaxWorkers (a crafted "worker":300000000 made watch and
// report allocate one entry per worker) or a cost no run could have.
func (e *Event) inRange() error {
	switch {
	case e.Worker < 0 || e.Worker > MaxWorkers:
		return fmt.Errorf("worker %d out of range (0 to %d)", e.Worker, MaxWorkers)
	case e.Workers < 0 || e.Workers > MaxWorkers:
		return fmt.Errorf("workers %d out of range (0 to %d)", e.Workers, MaxWorkers)
	case !(e.CostUSD >= 0 && e.CostUSD <= maxCostUSD):
		return fmt.Errorf("cost_usd %g out of range", e.CostUSD)
	}
	return nil
}

// LineError is a line that could not be decoded; the reader has skipped
// it and goes on with the next.
type LineError struct {
	Path   string
	Line   int   // 1-based, counted from where the reader started
	Offset int64 // of the line's first byte in the file
	Err    error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s: line %d (byte %d) skipped: %v", e.Path, e.Line, e.Offset, e.Err)
}
func (e *LineError) Unwrap() error { return e.Err }

// ErrTooLong is the cause of a LineError for a line over MaxLine.
var ErrTooLong = errors.New("line longer than 1 MiB")

// Reader reads an event log line by line, following it as it grows. It
// never holds more than one line (at most MaxLine) in memory, so it reads
// a log of any size, and it can be polled: at the end of what is written
// so far Next returns io.EOF, and a later call returns what was appended
// since. A missing file reads as empty until it appears.
type Reader struct {
	path     string
	f        *os.File
	buf      []byte
	start    int   // first unread byte in buf
	end      int   // end of valid data in buf
	off      int64 // file offset of buf[start]
	line     int
	skipping bool // inside an oversized line, dropping bytes to its end
	skipFrom int64
}

// NewReader reads the log at path from its beginning.
func NewReader(path string) *Reader {
	return &Reader{path: path, buf: make([]byte, 64<<10)}
}

// NewReaderAt reads the log at path from byte offset off, typically the
// size returned by Size before a run starts, so only later events are read.
func NewReaderAt(path string, off int64) *Reader {
	r := NewReader(path)
	r.off = off
	return r
}

// Size is the log's current size, 0 when it does not exist yet.
func Size(path string) (int64, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Offset is the file offset just past the last complete line returned.
func (r *Reader) Offset() int64 { return r.off }

// Pending is the number of bytes of an unfinished last line read so far:
// a line being written, or one torn by a crash.
func (r *Reader) Pending() int { return r.end - r.start }

// Close releases the file.
func (r *Reader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// Next returns the next complete event. At the end of the complete lines
// written so far it returns io.EOF; call it again later to follow the log.
// A line that cannot be decoded comes back as a *LineError, after which
// Next goes on with the following line. Other errors are I/O errors.
func (r *Reader) Next() (Event, error) {
	for {
		if i := bytes.IndexByte(r.buf[r.start:r.end], '\n'); i >= 0 {
			raw := r.buf[r.start : r.start+i]
			lineOff := r.off
			r.start += i + 1
			r.off += int64(i + 1)
			if r.skipping {
				r.skipping = false
				r.line++
				return Event{}, &LineError{Path: r.path, Line: r.line, Offset: r.skipFrom, Err: ErrTooLong}
			}
			if len(bytes.TrimSpace(raw)) == 0 {
				continue
			}
			r.line++
			var ev Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				return Event{}, &LineError{Path: r.path, Line: r.line, Offset: lineOff, Err: err}
			}
			if ev.Name == "" {
				return Event{}, &LineError{Path: r.path, Line: r.line, Offset: lineOff, Err: errors.New(`no "event" field`)}
			}
			if err := ev.inRange(); err != nil {
				return Event{}, &LineError{Path: r.path, Line: r.line, Offset: lineOff, Err: err}
			}
			return ev, nil
		}
		if err := r.fill(); err != nil {
			return Event{}, err
		}
	}
}

// fill reads more of the file into buf, or returns io.EOF when nothing
// new has been written.
func (r *Reader) fill() error {
	if r.f == nil {
		f, err := statefile.OpenRegular(r.path)
		if errors.Is(err, fs.ErrNotExist) {
			return io.EOF
		}
		if err != nil {
			return err
		}
		if _, err := f.Seek(r.off, io.SeekStart); err != nil {
			f.Close()
			return err
		}
		r.f = f
	}
	pending := r.end - r.start
	if pending >= MaxLine {
		// An oversized line: drop what is buffered and skip to its end.
		if !r.skipping {
			r.skipping, r.skipFrom = true, r.off
		}
		r.off += int64(pending)
		r.start, r.end, pending = 0, 0, 0
	}
	if r.start > 0 {
		copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, pending
	}
	if r.end == len(r.buf) {
		grown := make([]byte, min(2*len(r.buf), MaxLine+1))
		copy(grown, r.buf[:r.end])
		r.buf = grown
	}
	n, err := r.f.Read(r.buf[r.end:])
	r.end += n
	if n > 0 {
		return nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	r.reopenIfReplaced()
	return io.EOF
}

// reopenIfReplaced starts over on a log that was removed and written anew,
// or truncated, while it was being followed.
func (r *Reader) reopenIfReplaced() {
	now, err := os.Stat(r.path)
	if err != nil {
		return
	}
	was, err := r.f.Stat()
	if err != nil || (os.SameFile(now, was) && now.Size() >= r.off) {
		return
	}
	r.f.Close()
	r.f = nil
	r.start, r.end, r.off, r.skipping = 0, 0, 0, false
}

// Scan reads the whole log at path from its beginning and calls fn for
// each event, in order. Lines that cannot be decoded are skipped and
// returned as bad (the count, and the first few errors); a torn last line
// is ignored. A missing log is no events. An error from fn stops the scan
// and is returned.
func Scan(path string, fn func(Event) error) (bad Bad, err error) {
	return ScanFrom(path, 0, fn)
}

// ScanFrom is Scan from byte offset off, the start of a line.
func ScanFrom(path string, off int64, fn func(Event) error) (bad Bad, err error) {
	r := NewReaderAt(path, off)
	defer r.Close()
	for {
		ev, err := r.Next()
		var le *LineError
		switch {
		case errors.As(err, &le):
			bad.add(le)
			continue
		case errors.Is(err, io.EOF):
			bad.TornBytes = r.Pending()
			return bad, nil
		case err != nil:
			return bad, fmt.Errorf("events: read %s: %w", path, err)
		}
		if err := fn(ev); err != nil {
			return bad, err
		}
	}
}

// Bad counts what a scan skipped.
type Bad struct {
	Lines     int          // lines that could not be decoded
	First     []*LineError // the first few of them
	TornBytes int          // an unfinished last line, ignored
}

func (b *Bad) add(le *LineError) {
	b.Lines++
	if len(b.First) < 3 {
		b.First = append(b.First, le)
	}
}
