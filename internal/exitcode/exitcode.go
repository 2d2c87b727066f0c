// Package exitcode is the one place that turns errors into the exit codes
// of DESIGN.md's contract. Domain packages return typed errors and never
// choose a code; commands hand their error here.
//
// It is imported by the entry points answered from a package init
// (checkpoint and rollback), so it holds only the error classes every
// command shares; a command adds its own classes through Extra.
package exitcode

import (
	"errors"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// The exit codes of DESIGN.md (contract).
const (
	OK        = 0
	Failed    = 1
	Usage     = 2   // usage or bad input; nothing changed
	Locked    = 3   // the agent lock is held by another process
	Refused   = 4   // a rollback was refused as unsafe; nothing changed
	WorkLeft  = 5   // the loop stopped with work left
	Interrupt = 130 // SIGINT
)

// Match reports whether an error belongs to a class.
type Match func(error) bool

// As matches errors that are, or wrap, a T.
func As[T error]() Match {
	return func(err error) bool {
		var t T
		return errors.As(err, &t)
	}
}

// Extra are a command's own error classes, by the code they end in.
type Extra struct {
	WorkLeft []Match // the loop stopped with work left
	Failed   []Match // failures that may wrap bad input but are not the user's
	Usage    []Match // bad input of the command's own kinds
}

// Of is the exit code of err. The order matters where one error wraps
// another: a held lock or a refused rollback is reported as such whatever
// wraps it, then work left, and a corrupt state file (or an extra
// failure) is a failure even when it came from reading the user's input.
func Of(err error, extra Extra) int {
	switch {
	case err == nil:
		return OK
	case As[*layout.HeldError]()(err):
		return Locked
	case As[*checkpoint.RefusedError]()(err):
		return Refused
	case matchAny(err, extra.WorkLeft):
		return WorkLeft
	case As[*statefile.CorruptError]()(err), matchAny(err, extra.Failed):
		return Failed
	case badinput.Is(err), matchAny(err, extra.Usage):
		return Usage
	default:
		return Failed
	}
}

func matchAny(err error, ms []Match) bool {
	for _, m := range ms {
		if m(err) {
			return true
		}
	}
	return false
}
