// Package checkpointentry runs `wiggum checkpoint` and `wiggum rollback`:
// their output and exit codes, for the CLI and - for the plain forms a
// loop calls between agent runs - from its package init, before the CLI's
// packages are initialised, as internal/hookentry does for hooks (see its
// package doc for why an init and how the import closure is kept small).
//
// Only `wiggum checkpoint [--allow-detached] [--json]` and `wiggum rollback
// [--dry-run] [--discard-foreign] [--reason R] [--json]`, each flag at most
// once, are answered here; --help, global flags, anything else go on to the
// CLI, which runs the same functions below.
package checkpointentry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/exitcode"
	"github.com/wiggum-dev/wiggum/internal/signals"
)

func init() {
	if cmd, ok := Parse(os.Args[1:]); ok {
		// One P: the command does one thing at a time (its git runs in
		// processes of their own), and with one P the runtime wakes no
		// second thread to look for work each time it waits for git. And
		// not on this goroutine: package init runs locked to the main
		// thread, so each wait would hand the P to another thread and
		// back (measured: ~1.5 ms of CPU less per rollback for the two).
		runtime.GOMAXPROCS(1)
		code := make(chan int)
		go func() { code <- cmd.main() }()
		os.Exit(<-code)
	}
}

// Command is `wiggum checkpoint` or `wiggum rollback`, parsed.
type Command struct {
	Name string // "checkpoint" or "rollback"
	// checkpoint
	AllowDetached bool
	// rollback
	DryRun, DiscardForeign bool
	Reason                 string
	JSON                   bool
}

// DefaultReason is rollback's --reason when none is given.
const DefaultReason = "manual rollback"

// Parse reads the plain command lines this package answers; ok is false
// for anything else.
func Parse(args []string) (c Command, ok bool) {
	if len(args) == 0 || (args[0] != "checkpoint" && args[0] != "rollback") {
		return Command{}, false
	}
	c = Command{Name: args[0], Reason: DefaultReason}
	seen := map[string]bool{}
	for i := 1; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		if seen[name] {
			return Command{}, false
		}
		seen[name] = true
		switch {
		case name == "--json" && !hasValue:
			c.JSON = true
		case name == "--allow-detached" && !hasValue && c.Name == "checkpoint":
			c.AllowDetached = true
		case name == "--dry-run" && !hasValue && c.Name == "rollback":
			c.DryRun = true
		case name == "--discard-foreign" && !hasValue && c.Name == "rollback":
			c.DiscardForeign = true
		case name == "--reason" && c.Name == "rollback" && hasValue:
			c.Reason = value
		case name == "--reason" && c.Name == "rollback" && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			i++
			c.Reason = args[i]
		default:
			return Command{}, false
		}
	}
	return c, true
}

// main runs c in the current directory as the CLI would and returns the
// exit code.
func (c Command) main() int {
	ctx, stop := signals.Context()
	defer stop()
	err := c.Run(ctx, ".", os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "wiggum: %v\n", err)
	}
	code := ExitCode(err)
	if code == 0 {
		if sig := signals.Caught(ctx); sig != 0 {
			code = 128 + int(sig)
		}
	}
	return code
}

// Run runs the command in the working tree containing dir, writing what
// it did to w.
func (c Command) Run(ctx context.Context, dir string, w io.Writer) error {
	st, err := checkpoint.Open(ctx, dir)
	if err != nil {
		return badinput.Wrap(err)
	}
	st.ReportInterrupted(func(msg string) { fmt.Fprintf(os.Stderr, "wiggum: %s\n", msg) })
	if c.Name == "checkpoint" {
		return c.checkpoint(ctx, st, w)
	}
	return c.rollback(ctx, st, w)
}

func (c Command) checkpoint(ctx context.Context, st *checkpoint.State, w io.Writer) error {
	var cp *checkpoint.Checkpoint
	var err error
	err = st.WithLock(ctx, []string{"wiggum", "checkpoint"}, func(session string) error {
		cp, err = st.Save(ctx, session, checkpoint.SaveOptions{AllowDetached: c.AllowDetached})
		return err
	})
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(w, cp)
	}
	extra := ""
	if cp.Snapshot != "" {
		extra = " (with uncommitted changes)"
		if hidden := cp.Hidden(); len(hidden) > 0 {
			extra = fmt.Sprintf(" (with uncommitted changes, %s among them: hidden from git status by skip-worktree or assume-unchanged)", strings.Join(hidden, ", "))
		}
	}
	fmt.Fprintf(w, "checkpoint %s on %s%s\n", cp.Head[:12], checkpoint.BranchName(cp.Branch), extra)
	return nil
}

func (c Command) rollback(ctx context.Context, st *checkpoint.State, w io.Writer) error {
	var res *checkpoint.RollbackResult
	var err error
	err = st.WithLock(ctx, []string{"wiggum", "rollback"}, func(session string) error {
		res, err = st.Rollback(ctx, checkpoint.RollbackOptions{Session: session, DryRun: c.DryRun, Reason: c.Reason, DiscardForeign: c.DiscardForeign})
		return err
	})
	var refused *checkpoint.RefusedError
	if c.JSON && errors.As(err, &refused) {
		// The answer a script reads: refused, and why (the error line on
		// stderr and exit 4 as without --json).
		if jerr := writeJSON(w, refusal{Refused: true, Reason: refused.Reason, DryRun: c.DryRun}); jerr != nil {
			return jerr
		}
		return err
	}
	if err != nil {
		return err
	}
	if c.JSON {
		// Lists, never null, for scripts.
		for _, l := range []*[]string{&res.Commits, &res.Files, &res.Removed} {
			if *l == nil {
				*l = []string{}
			}
		}
		return writeJSON(w, res)
	}
	cp := res.Checkpoint
	switch {
	case res.NothingToDo:
		fmt.Fprintf(w, "already at checkpoint %s; nothing to roll back\n", cp.Head[:12])
		for _, n := range res.Notes() {
			fmt.Fprintf(w, "  %s\n", n)
		}
		return nil
	case res.DryRun:
		fmt.Fprintf(w, "rollback to %s on %s would discard:\n", cp.Head[:12], checkpoint.BranchName(cp.Branch))
	case res.BackupRef == "":
		// Only submodules' files had changed.
		fmt.Fprintf(w, "rolled back to %s on %s\n", cp.Head[:12], checkpoint.BranchName(cp.Branch))
	default:
		fmt.Fprintf(w, "rolled back to %s on %s; discarded state saved in %s\n", cp.Head[:12], checkpoint.BranchName(cp.Branch), res.BackupRef)
	}
	if res.BackupRef != "" || res.DryRun {
		describeDiscard(w, res)
	}
	for _, n := range res.Notes() {
		fmt.Fprintf(w, "  %s\n", n)
	}
	if !res.DryRun && res.BackupRef != "" {
		fmt.Fprintf(w, "restore it with: wiggum recover %s\n", strings.TrimPrefix(res.BackupRef, checkpoint.BackupPrefix))
	}
	return nil
}

func describeDiscard(w io.Writer, res *checkpoint.RollbackResult) {
	fmt.Fprintf(w, "  %d commit(s)", len(res.Commits))
	for i, c := range res.Commits {
		if i == 5 {
			fmt.Fprintf(w, " …")
			break
		}
		fmt.Fprintf(w, " %s", c[:12])
	}
	fmt.Fprintf(w, "\n  %d changed file(s)", len(res.Files))
	for i, f := range res.Files {
		if i == 10 {
			fmt.Fprintf(w, " …")
			break
		}
		fmt.Fprintf(w, " %s", f)
	}
	fmt.Fprintf(w, "\n  %d new untracked file(s) removed\n", len(res.Removed))
}

// refusal is rollback --json's answer when it refuses (exit 4).
type refusal struct {
	Refused bool   `json:"refused"`
	Reason  string `json:"reason"`
	DryRun  bool   `json:"dry_run"`
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// ExitCode is the exit code of an error from Run.
func ExitCode(err error) int { return exitcode.Of(err, exitcode.Extra{}) }
