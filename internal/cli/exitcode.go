package cli

import (
	"errors"
	"fmt"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/hooks"
	"github.com/wiggum-dev/wiggum/install"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/statefile"
	"github.com/wiggum-dev/wiggum/loop"
	"github.com/wiggum-dev/wiggum/worktree"
)

// The exit codes of DESIGN.md (contract).
const (
	exitOK        = 0
	exitFailed    = 1
	exitUsage     = 2   // usage or bad input; nothing changed
	exitLocked    = 3   // the agent lock is held by another process
	exitRefused   = 4   // a rollback was refused as unsafe; nothing changed
	exitWorkLeft  = 5   // the loop stopped with work left
	exitInterrupt = 130 // SIGINT
)

// Silent is an exit code with nothing left to print: the command already
// said what happened (or passes on its child's status).
type Silent int

func (s Silent) Error() string { return fmt.Sprintf("exit %d", int(s)) }

// exitCode is the one place that turns errors into exit codes. Domain
// packages return typed errors and never choose a code. The order matters
// where one error wraps another: a held lock or a refused rollback is
// reported as such whatever wraps it, and a corrupt state file is a
// failure even when it came from reading the user's input.
func exitCode(err error) int {
	var (
		silent   Silent
		held     *layout.HeldError
		refused  *checkpoint.RefusedError
		stopped  *loop.StopError
		conflict *worktree.ConflictError
		blocked  *worktree.BlockedError
		corrupt  *statefile.CorruptError
		badPlan  *plan.BadInputError
		hooksDir *install.ForeignHooksPathError
		push     *hooks.PushRefusedError
		unusable *agent.UnusableError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &silent):
		return int(silent)
	case errors.As(err, &held):
		return exitLocked
	case errors.As(err, &refused):
		return exitRefused
	case errors.As(err, &stopped), errors.As(err, &conflict), errors.As(err, &blocked):
		return exitWorkLeft
	case errors.As(err, &push), errors.As(err, &corrupt):
		// git only needs a non-zero status from a refusing pre-push hook.
		return exitFailed
	case errors.As(err, &unusable):
		// An agent that cannot run here failed the run, whatever its
		// message says about the input.
		return exitFailed
	case badinput.Is(err), errors.As(err, &badPlan), errors.As(err, &hooksDir):
		return exitUsage
	default:
		return exitFailed
	}
}
