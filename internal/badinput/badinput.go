// Package badinput marks errors that mean the caller asked for something
// wrong - a bad flag, a plan that does not exist, a repository state the
// command cannot start from - and that nothing was changed. The CLI maps
// them to exit 2; domain packages only say which errors they are.
package badinput

import (
	"errors"
	"fmt"
)

// Error is bad input; nothing was changed.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf formats a bad-input error.
func Errorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

// Wrap marks err as bad input; nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err}
}

// Is reports whether err is, or wraps, bad input.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
