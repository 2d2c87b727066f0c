package proc

import (
	"errors"
	"fmt"
	"syscall"
)

// StartError is a command that never ran for want of what the system
// gives every process (the process limit reached, too many open files, no
// memory), or because wiggum's own supervisor ended before it could start
// it (a Go runtime that could not make its threads): the command's work
// was not judged, and its exit status, if any, is the supervisor's.
type StartError struct {
	Command string
	Err     error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("could not start %s: %v%s", e.Command, e.Err, limitHint(e.Err))
}

func (e *StartError) Unwrap() error { return e.Err }

// limitHint names the limit behind a start that failed for want of a
// resource.
func limitHint(err error) string {
	switch {
	case errors.Is(err, syscall.EAGAIN):
		return ": the process limit (ulimit -u) is reached, or the system is out of processes"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return ": too many open files (ulimit -n)"
	case errors.Is(err, syscall.ENOMEM):
		return ": the system is out of memory"
	}
	return ""
}

// wantOfResource reports whether a failure to start a process is the
// system's (limits, memory), not the command's (not found, not
// executable: those are exit statuses 127 and 126, as a shell's).
func wantOfResource(err error) bool {
	return limitHint(err) != ""
}

// startFailed makes a failure to start argv0 a *StartError when the system
// is why, and leaves it as it is otherwise.
func startFailed(argv0 string, err error) error {
	if wantOfResource(err) {
		return &StartError{Command: argv0, Err: err}
	}
	return fmt.Errorf("start %s: %w", argv0, err)
}
