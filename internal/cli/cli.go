// Package cli is wiggum's command line: kong commands over the checkpoint,
// loop and hooks packages, and the one place that turns errors into exit codes.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/muesli/termenv"

	"github.com/alecthomas/kong"
	"github.com/charmbracelet/log"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/checkpointentry"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/hookentry"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/proc"
	"github.com/wiggum-dev/wiggum/internal/signals"
	"github.com/wiggum-dev/wiggum/internal/termtext"
	"github.com/wiggum-dev/wiggum/worktree"
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=...".
var Version = "dev"

// Globals are the flags every command takes.
type Globals struct {
	Dir       string `short:"C" name:"directory" placeholder:"DIR" help:"Run as if wiggum was started in DIR." type:"existingdir"`
	LogFormat string `name:"log-format" enum:"text,json" default:"text" help:"Log format on stderr: text or json."`
	Verbose   bool   `short:"v" help:"Log debug detail to stderr."`

	stdout io.Writer
	stderr io.Writer
	logger *log.Logger
}

// Log returns the logger, built on first use so hooks never pay for it.
func (g *Globals) Log() *log.Logger {
	if g.logger == nil {
		// The writer is wrapped so the renderer cannot see a terminal:
		// given one, it queries the terminal's colours, which prints escape
		// sequences into the user's session and swallows what they type.
		// Colours are switched on explicitly instead.
		l := log.NewWithOptions(opaqueWriter{g.stderr}, log.Options{Prefix: "wiggum"})
		if isTerminal(g.stderr) && os.Getenv("NO_COLOR") == "" {
			l.SetColorProfile(termenv.ANSI)
		}
		if g.LogFormat == "json" {
			l.SetFormatter(log.JSONFormatter)
		}
		if g.Verbose {
			l.SetLevel(log.DebugLevel)
		}
		g.logger = l
	}
	return g.logger
}

// opaqueWriter hides the file behind a writer.
type opaqueWriter struct{ io.Writer }

// WorkDir is where the command acts.
func (g *Globals) WorkDir() string {
	if g.Dir != "" {
		return g.Dir
	}
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	return wd
}

// State opens wiggum's state for the working tree the command acts in.
func (g *Globals) State(ctx context.Context) (*checkpoint.State, error) {
	repo, err := git.Open(ctx, g.WorkDir())
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	// Not through checkpoint.Open: its exclude write failing (a full
	// disk) is a failure, not bad input.
	if err := layout.EnsureExcluded(repo.InfoDir); err != nil {
		return nil, err
	}
	st := checkpoint.FromRepo(repo)
	g.warnInterrupted(st)
	return st, nil
}

// warnInterrupted tells of a recover or rollback a killed wiggum left half
// done (checkpoint.State.ReportInterrupted).
func (g *Globals) warnInterrupted(st *checkpoint.State) {
	st.ReportInterrupted(func(msg string) { g.Log().Warn(msg) })
}

// StateToRead opens the repository's wiggum state for a command that only
// reads it (status): nothing is written - not even the exclude lines that
// hide the state from git - so it works in a checkout its user cannot
// write, and a look changes nothing.
func (g *Globals) StateToRead(ctx context.Context) (*checkpoint.State, error) {
	repo, err := git.Open(ctx, g.WorkDir())
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	return checkpoint.FromRepo(repo), nil
}

// CLI is the whole command tree.
type CLI struct {
	Globals

	Version kong.VersionFlag `help:"Print the version and exit."`

	Lock       LockCmd       `cmd:"" help:"Run a command while holding the repository's exclusive agent lock."`
	Checkpoint CheckpointCmd `cmd:"" help:"Record the current state as the rollback point."`
	Rollback   RollbackCmd   `cmd:"" help:"Return to the checkpoint, or refuse (exit 4) if that is unsafe."`
	Recover    RecoverCmd    `cmd:"" help:"List, restore or prune what rollbacks saved."`
	Status     StatusCmd     `cmd:"" help:"Show the lock holder, checkpoint, journal and backups."`
	Hook       HookCmd       `cmd:"" help:"Entry point for agent hooks and git hooks (event JSON on stdin)."`
	Install    InstallCmd    `cmd:"" help:"Register wiggum's hooks."`
	Uninstall  UninstallCmd  `cmd:"" help:"Remove exactly what install added."`
	Run        RunCmd        `cmd:"" help:"Run the loop over a plan of stories."`
	Demo       DemoCmd       `cmd:"" help:"Run the whole cycle end to end in a throwaway repository; no agent needed."`
	Worktree   WorktreeCmd   `cmd:"" help:"List or prune the worktrees of parallel runs; never a live one."`
	Watch      WatchCmd      `cmd:"" help:"Show the repository's run live: workers, progress, rollbacks, merges (read-only)."`
	Claims     ClaimsCmd     `cmd:"" help:"List or release the story claims of runs shared across machines (--remote)."`
	Report     ReportCmd     `cmd:"" help:"Show what a run did per story: attempts, outcome, time, tokens, cost (text, --json, --html)."`
	DemoAgent  DemoAgentCmd  `cmd:"" name:"demo-agent" hidden:"" help:"The scripted agent and test gate of wiggum demo."`
}

const description = `wiggum makes AI coding-agent loops safe: an exclusive agent lock, rollback
only when it is provably safe (and only after saving what it discards), fast
agent and git hooks, and a loop over a plan of stories.

Exit codes: 0 done, 1 failed, 2 usage or bad input, 3 agent lock held by
another process, 4 rollback refused as unsafe, 5 loop stopped with work left,
130/143 interrupted by SIGINT/SIGTERM.`

// Main runs wiggum with args and returns its exit code.
func Main(args []string) int {
	if len(args) > 0 && args[0] == proc.SuperviseArg {
		return proc.Supervise(args[1:])
	}
	// cmd/wiggum answers hooks before this package is initialised
	// (internal/hookentry); a caller that reaches here with one gets the
	// same.
	if h, ok := hookentry.Parse(args); ok {
		return h.Run(os.Stdin, os.Stdout, os.Stderr)
	}
	return run(args, os.Stdout, os.Stderr)
}

type exitPanic int

func run(args []string, stdout, stderr io.Writer) (code int) {
	var c CLI
	c.stdout, c.stderr = stdout, stderr
	parser, err := kong.New(&c,
		kong.Name("wiggum"),
		kong.Description(description),
		kong.Vars{"version": "wiggum " + Version, "rollback_reason": checkpointentry.DefaultReason},
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitPanic(code)) }),
		kong.Bind(&c.Globals),
	)
	if err != nil {
		c.failed(jsonLogs(args), fmt.Sprint(err), exitFailed)
		return exitFailed
	}
	defer func() {
		if r := recover(); r != nil {
			p, ok := r.(exitPanic)
			if !ok {
				panic(r)
			}
			code = int(p)
			if code != 0 {
				code = exitUsage
			}
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		// One line, as the exit-code contract promises for usage errors.
		help := "wiggum --help"
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			help = strings.Join(append(append([]string{"wiggum"}, strings.Fields(commandPath(pe.Context))...), "--help"), " ")
		}
		c.failed(jsonLogs(args), fmt.Sprintf("%v (see '%s')", err, help), exitUsage)
		return exitUsage
	}
	ctx, stop := signals.Context()
	defer stop()
	kctx.BindTo(ctx, (*context.Context)(nil))
	git.OnStaleLock = func(path string, age time.Duration) {
		c.Globals.Log().Warn(fmt.Sprintf("removed git's lock %s, last written %s ago: no git that could hold it still runs (one killed mid-command leaves it, and git then refuses every command that writes the index)", path, age))
	}
	worktree.OnMutexWait = func(w worktree.MutexWait) {
		c.Globals.Log().Warn(w.String())
	}
	err = kctx.Run()
	code = exitCode(err)
	var silent Silent
	if err != nil && !errors.As(err, &silent) {
		// An error can quote a plan's title or an agent's words.
		c.failed(c.LogFormat == "json", termtext.Lines(err.Error()), code)
	}
	if code == exitOK {
		if sig := signals.Caught(ctx); sig != 0 {
			code = 128 + int(sig)
		}
	}
	return code
}

// failed writes the line that says why wiggum exits with code: "wiggum:
// msg", or (json: --log-format=json) a JSON line with the message and the
// exit code, as scripts reading stderr as JSON lines expect of every line.
func (c *CLI) failed(json bool, msg string, code int) {
	if !json {
		fmt.Fprintf(c.stderr, "wiggum: %s\n", msg)
		return
	}
	c.Globals.LogFormat = "json"
	c.Globals.Log().Error(msg, "exit", code)
}

// jsonLogs reports whether args ask for --log-format=json, read from args
// themselves: of a command line kong could not parse, no flag is known.
func jsonLogs(args []string) bool {
	json := false
	for i, a := range args {
		switch {
		case a == "--":
			return json
		case a == "--log-format" && i+1 < len(args):
			json = args[i+1] == "json"
		case strings.HasPrefix(a, "--log-format="):
			json = strings.TrimPrefix(a, "--log-format=") == "json"
		}
	}
	return json
}

func commandPath(k *kong.Context) string {
	if k == nil {
		return ""
	}
	var words []string
	for _, w := range strings.Fields(k.Command()) {
		if !strings.HasPrefix(w, "<") {
			words = append(words, w)
		}
	}
	return strings.Join(words, " ")
}

// Interrupted returns the exit code for a signal-cancelled context.
func Interrupted(ctx context.Context) error {
	if sig := signals.Caught(ctx); sig != 0 {
		return Silent(128 + int(sig))
	}
	return nil
}
