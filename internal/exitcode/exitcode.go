// Package exitcode holds wiggum's documented exit codes and the one mapping
// from errors to them; nothing but the CLI's Main turns them into os.Exit.
package exitcode

import (
	"errors"
	"fmt"
)

// The exit codes of DESIGN.md.
const (
	OK        = 0
	Failed    = 1
	Usage     = 2   // usage or bad input; nothing changed
	Locked    = 3   // the agent lock is held by another process
	Refused   = 4   // a rollback was refused as unsafe; nothing changed
	WorkLeft  = 5   // the loop stopped with work left
	Interrupt = 130 // SIGINT
	Terminate = 143 // SIGTERM
)

// Coder is an error that knows its exit code.
type Coder interface {
	ExitCode() int
}

// Error carries an exit code with an error.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ExitCode implements Coder.
func (e *Error) ExitCode() int { return e.Code }

// BadInput marks err as a usage or input error (exit 2).
func BadInput(format string, args ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, args...)}
}

// With wraps err with an exit code.
func With(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Silent is an exit code with nothing left to print: the command already said
// what happened.
type Silent int

func (s Silent) Error() string { return fmt.Sprintf("exit %d", int(s)) }
func (s Silent) ExitCode() int { return int(s) }

// Of returns the exit code for err: 0 for nil, the code of the first Coder in
// its chain, else 1.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return Failed
}
