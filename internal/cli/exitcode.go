package cli

import (
	"errors"
	"fmt"

	"github.com/wiggum-dev/wiggum/hooks"
	"github.com/wiggum-dev/wiggum/install"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/exitcode"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/loop"
	"github.com/wiggum-dev/wiggum/worktree"
)

// The exit codes of DESIGN.md (contract), named here for the CLI's code.
const (
	exitOK        = exitcode.OK
	exitFailed    = exitcode.Failed
	exitUsage     = exitcode.Usage
	exitLocked    = exitcode.Locked
	exitRefused   = exitcode.Refused
	exitWorkLeft  = exitcode.WorkLeft
	exitInterrupt = exitcode.Interrupt
)

// Silent is an exit code with nothing left to print: the command already
// said what happened (or passes on its child's status).
type Silent int

func (s Silent) Error() string { return fmt.Sprintf("exit %d", int(s)) }

// cliErrors are the error classes of the commands beyond checkpoint and
// rollback, by the exit code they end in (internal/exitcode has the rest
// and the order).
var cliErrors = exitcode.Extra{
	WorkLeft: []exitcode.Match{
		exitcode.As[*loop.StopError](),
		exitcode.As[*worktree.ConflictError](),
		exitcode.As[*worktree.BlockedError](),
	},
	Failed: []exitcode.Match{
		// git only needs a non-zero status from a refusing pre-push hook.
		exitcode.As[*hooks.PushRefusedError](),
		// An agent that cannot run here failed the run, whatever its
		// message says about the input.
		exitcode.As[*agent.UnusableError](),
	},
	Usage: []exitcode.Match{
		exitcode.As[*plan.BadInputError](),
		exitcode.As[*install.ForeignHooksPathError](),
		exitcode.As[*install.HooksInTreeError](),
	},
}

// exitCode turns a command's error into its exit code: a Silent code as it
// is, everything else through internal/exitcode.
func exitCode(err error) int {
	var silent Silent
	if errors.As(err, &silent) {
		return int(silent)
	}
	return exitcode.Of(err, cliErrors)
}
