package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/hooks"
	"github.com/wiggum-dev/wiggum/install"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/checkpointentry"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/statefile"
	"github.com/wiggum-dev/wiggum/loop"
	"github.com/wiggum-dev/wiggum/worktree"
)

// Every error class DESIGN.md gives a code maps to it, also when wrapped
// with context the way domain packages wrap (%w), and the precedence
// between wrapped classes is the documented one.
func TestExitCode(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("run: story US-1: %w", err) }
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"plain", errors.New("boom"), 1},
		{"silent", Silent(143), 143},
		{"held", wrap(&layout.HeldError{PID: 7}), 3},
		{"refused", wrap(&checkpoint.RefusedError{Reason: "x"}), 4},
		{"stopped", wrap(&loop.StopError{}), 5},
		{"conflict", wrap(&worktree.ConflictError{Branch: "b", Target: "main"}), 5},
		{"blocked", wrap(&worktree.BlockedError{Branch: "b", Target: "main"}), 5},
		{"bad input", wrap(badinput.Errorf("--workers must be positive")), 2},
		{"bad plan", wrap(&plan.BadInputError{Msg: "no plan"}), 2},
		{"foreign hooks", wrap(&install.ForeignHooksPathError{Path: ".husky"}), 2},
		{"push refused", wrap(&hooks.PushRefusedError{}), 1},
		{"corrupt", wrap(&statefile.CorruptError{Path: "p", Err: errors.New("eof")}), 1},
		{"corrupt inside bad input", badinput.Wrap(&statefile.CorruptError{Path: "p", Err: errors.New("eof")}), 1},
		{"held inside bad input", badinput.Wrap(&layout.HeldError{}), 3},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("%s: exitCode(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
}

// checkpointentry answers checkpoint and rollback before this package is
// initialised; its exit codes must be this package's for every error
// those commands can return.
func TestCheckpointEntryExitCodesAreTheCLIs(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("rollback: %w", err) }
	for _, err := range []error{
		nil,
		errors.New("boom"),
		wrap(&layout.HeldError{PID: 7}),
		wrap(&checkpoint.RefusedError{Reason: "x"}),
		wrap(badinput.Errorf("HEAD is detached")),
		badinput.Wrap(git.ErrNotRepo),
		wrap(&statefile.CorruptError{Path: "p", Err: errors.New("eof")}),
		badinput.Wrap(&statefile.CorruptError{Path: "p", Err: errors.New("eof")}),
		badinput.Wrap(&layout.HeldError{}),
		badinput.Wrap(&checkpoint.RefusedError{Reason: "x"}),
	} {
		if got, want := checkpointentry.ExitCode(err), exitCode(err); got != want {
			t.Errorf("checkpointentry.ExitCode(%v) = %d, the CLI's is %d", err, got, want)
		}
	}
}
