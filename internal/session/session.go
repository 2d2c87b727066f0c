// Package session holds the records a live wiggum run shares with the hooks
// its agent calls and with `wiggum status`: the current story and policy, the
// capped failure log the loop feeds into a retry prompt, and the event log.
// Every write is atomic or an append under an flock, so concurrent writers
// never tear a record.
package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/redact"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// File names in the runtime directory.
const (
	maxFailures  = 50
	maxOutputLen = 8 << 10
	// EventLogEnv names, in the environment of an agent that wiggum run
	// started, the run's event log: hooks running in a parallel worker's
	// worktree record there, in the main tree, whose log outlives the
	// worktree.
	EventLogEnv = "WIGGUM_EVENT_LOG"
	// GuardUnseenEnv names, in the environment of an agent that wiggum run
	// started, a file the run makes before the attempt and the guard hook
	// removes when it sees a shell command: an agent that ran shell
	// commands and left the file ran them without wiggum's hooks.
	GuardUnseenEnv = "WIGGUM_GUARD_UNSEEN"
)

// Policies for a failing test run seen by a hook.
const (
	PolicyRollback = "rollback"
	PolicyRecord   = "record"
)

// Run describes the live run.
type Run struct {
	PID          int       `json:"pid"`
	Session      string    `json:"session"`
	Plan         string    `json:"plan,omitempty"`
	Story        string    `json:"story,omitempty"`
	StoryTitle   string    `json:"story_title,omitempty"`
	Iteration    int       `json:"iteration"`
	Policy       string    `json:"policy,omitempty"`
	Started      time.Time `json:"started"`
	StoryStarted time.Time `json:"story_started,omitzero"`
	LastOutcome  string    `json:"last_outcome,omitempty"`
	// Parallel: a parallel run's --workers N (absent for a serial run),
	// whose main-tree record lists in Workers the attempts running now,
	// each in its worker's worktree.
	Parallel int      `json:"parallel_workers,omitempty"`
	Workers  []Worker `json:"workers,omitempty"`
}

// Worker is one attempt a parallel run's worker is running now.
type Worker struct {
	Worker     int       `json:"worker"`
	Story      string    `json:"story"`
	StoryTitle string    `json:"story_title,omitempty"`
	Iteration  int       `json:"iteration"`
	Attempt    int       `json:"attempt"`
	Attempts   int       `json:"attempts"`
	Started    time.Time `json:"started"`
	Worktree   string    `json:"worktree"`
}

// WriteRun records the live run atomically, without an fsync: a crash of
// the process never leaves it torn; a power cut, which ends the run it
// describes anyway, may leave the previous record. It is rewritten at
// every attempt, through a spare file swapped with it (statefile.Swap),
// so an attempt creates and frees no file for it.
func WriteRun(st *checkpoint.State, r Run) error {
	path, err := st.Runtime(layout.RunFile)
	if err != nil {
		return err
	}
	data, err := statefile.Encode(r)
	if err != nil {
		return err
	}
	if err := statefile.Swap(path, data, false); err != nil {
		return fmt.Errorf("session: write run record: %w", err)
	}
	return nil
}

// ReadRun returns the run record, nil when there is none, and a
// *checkpoint.CorruptError when it cannot be read.
func ReadRun(st *checkpoint.State) (*Run, error) {
	var r Run
	err := statefile.ReadJSON(st.RuntimePath(layout.RunFile), &r, nil)
	var corrupt *checkpoint.CorruptError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.As(err, &corrupt):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("session: read run record: %w", err)
	}
	return &r, nil
}

// ClearRun removes the run record and its spare; a missing one is fine.
func ClearRun(st *checkpoint.State) error {
	path := st.RuntimePath(layout.RunFile)
	for _, p := range []string{path, statefile.SparePath(path)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("session: remove run record: %w", err)
		}
	}
	return nil
}

// Failure is one failed attempt, as the retry prompt will show it.
type Failure struct {
	Time      time.Time `json:"time"`
	Story     string    `json:"story,omitempty"`
	Iteration int       `json:"iteration,omitempty"`
	Source    string    `json:"source"` // test-hook, gate, agent, timeout, stop
	Command   string    `json:"command,omitempty"`
	Output    string    `json:"output,omitempty"` // tail only
	Rollback  string    `json:"rollback,omitempty"`
}

// AppendFailure adds f to the failure log of st's working tree.
func AppendFailure(st *checkpoint.State, f Failure) error {
	path, err := st.Runtime(layout.FailureFile)
	if err != nil {
		return err
	}
	return AppendFailureAt(path, f)
}

// FailureLockWait bounds AppendFailureAt's wait for the log's lock.
var FailureLockWait = 3 * time.Second

// AppendFailureAt adds f to the failure log at path as one appended line,
// under an flock, so concurrent hooks never lose each other's entries. The
// log is read (never decoded) for its length and its last line; it is
// rewritten only when that line is damaged - the damaged copy is kept
// aside rather than blocking every later failure from being recorded - or
// it holds twice the entries readers keep, so most appends write one line
// and nothing else. Like the event log it is not fsynced.
func AppendFailureAt(path string, f Failure) error {
	if f.Time.IsZero() {
		f.Time = time.Now().UTC()
	}
	f.Output = Tail(f.Output, maxOutputLen)
	line, err := json.Marshal(f)
	if err != nil {
		return err
	}
	err = statefile.WithLockWait(path, FailureLockWait, func() error {
		data, err := statefile.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		// Every write is whole lines under this lock, so damage shows at
		// the end (a torn or foreign last line); damage inside is found by
		// readers and by the compaction below.
		if len(data) > 0 {
			last := data[bytes.LastIndexByte(data[:len(data)-1], '\n')+1:]
			if data[len(data)-1] != '\n' || !json.Valid(last) {
				_ = os.Rename(path, path+".corrupt")
				return statefile.Write(path, append(line, '\n'))
			}
		}
		lines := bytes.Count(data, []byte("\n"))
		if lines >= 2*maxFailures {
			old, err := readFailures(path)
			if err != nil {
				_ = os.Rename(path, path+".corrupt")
				old = nil
			}
			old = append(old, f)
			old = old[max(0, len(old)-maxFailures):]
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			for _, e := range old {
				if err := enc.Encode(e); err != nil {
					return err
				}
			}
			return statefile.Write(path, buf.Bytes())
		}
		fl, err := statefile.OpenAppend(path)
		if err != nil {
			return err
		}
		_, werr := fl.Write(append(line, '\n'))
		if cerr := fl.Close(); werr == nil {
			werr = cerr
		}
		return werr
	})
	if errors.Is(err, statefile.ErrLocked) {
		// The record is what fails an attempt whose rollback failed: it
		// is appended without the lock (one write of a whole line, which
		// O_APPEND does not interleave), and the error says so.
		fl, oerr := statefile.OpenAppend(path)
		if oerr != nil {
			return oerr
		}
		_, werr := fl.Write(append(line, '\n'))
		if cerr := fl.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
		return fmt.Errorf("%w; the entry was appended without it", err)
	}
	return err
}

// Failures returns the logged failures of story ("" for all), oldest first.
func Failures(st *checkpoint.State, story string) ([]Failure, error) {
	all, err := readFailures(st.RuntimePath(layout.FailureFile))
	if err != nil {
		return nil, err
	}
	if story == "" {
		return all, nil
	}
	var out []Failure
	for _, f := range all {
		if f.Story == story {
			out = append(out, f)
		}
	}
	return out, nil
}

// readFailures returns the newest maxFailures entries of the log.
func readFailures(path string) ([]Failure, error) {
	all, err := statefile.ReadJSONLines[Failure](path, nil)
	if len(all) > maxFailures {
		all = all[len(all)-maxFailures:]
	}
	return all, err
}

// AppendEvent appends one JSON line to the event log. Each line is written
// with a single write under an flock, so lines from concurrent writers never
// interleave; it is not fsynced (statefile.AppendLog): the log informs, and
// an fsync per event cost the loop milliseconds per iteration.
func AppendEvent(st *checkpoint.State, name string, fields map[string]any) error {
	path, err := st.Runtime(layout.EventFile)
	if err != nil {
		return err
	}
	return AppendEventAt(path, name, fields)
}

// EventLogFromEnv returns the event log named by EventLogEnv, or "" when
// the variable is unset or does not name a wiggum event log in an
// existing runtime directory.
func EventLogFromEnv() string {
	path := runtimeFileFromEnv(EventLogEnv, layout.EventFile)
	if path == "" {
		return ""
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return ""
	}
	return path
}

// MarkGuardSeen removes the file GuardUnseenEnv names (one unlink; a
// missing file is the common case), when it is a wiggum runtime file: the
// variable comes from the agent's environment and must not make a hook
// delete anything else.
func MarkGuardSeen() {
	if path := runtimeFileFromEnv(GuardUnseenEnv, layout.GuardUnseenFile); path != "" {
		_ = os.Remove(path)
	}
}

// runtimeFileFromEnv returns the path the environment variable env names
// when it is the file name in a wiggum runtime directory (absolute, ending
// in RuntimeDir/name, no "/../" in it), else "": such variables reach the
// hooks through the agent, and a hook writes or removes what they name.
func runtimeFileFromEnv(env, name string) string {
	path := os.Getenv(env)
	if !filepath.IsAbs(path) || strings.Contains(path, "/../") || !strings.HasSuffix(path, "/"+layout.RuntimeDir+"/"+name) {
		return ""
	}
	return path
}

// AppendEventAt is AppendEvent to the event log at path. What may be a
// secret in its text (a token in a command the guard denied, in an agent's
// tool call or in an error) is masked (redact.Text): watch and report show
// the log, and notifications send it on. A number JSON cannot hold (Inf,
// NaN) is left out rather than the line.
func AppendEventAt(path, name string, fields map[string]any) error {
	rec := map[string]any{}
	for k, v := range fields {
		switch v := v.(type) {
		case string:
			rec[k] = redact.Text(v)
		case []string:
			rec[k] = redact.Strings(v)
		case float64:
			// JSON has no Inf or NaN: the line would not be written.
			if !math.IsInf(v, 0) && !math.IsNaN(v) {
				rec[k] = v
			}
		default:
			rec[k] = v
		}
	}
	rec["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	rec["event"] = name
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return statefile.AppendLog(path, line)
}

// Tail returns at most n bytes from the end of s, cut at a line start when
// one is near.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
		s = s[i+1:]
	}
	return "…" + s
}
