package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/exitcode"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/loop"
)

// RunCmd is `wiggum run`.
type RunCmd struct {
	PRD    string `name:"prd" placeholder:"N" help:"Use the plan .ralph/PRD-N/plan.md (N a positive integer)."`
	Plan   string `placeholder:"FILE" help:"Use this markdown plan or prd.json (inside the repository)."`
	Issues string `placeholder:"DIR" help:"Use a little-loops issues directory (DIR/<type>/P<n>-<ID>-<slug>.md)."`

	Agent    string `default:"claude" placeholder:"NAME" help:"Built-in agent: claude, codex, amp, gemini or opencode."`
	AgentCmd string `name:"agent-cmd" placeholder:"CMD" help:"Any other agent: a shell command that reads the prompt on stdin."`
	Prompt   string `placeholder:"FILE" type:"existingfile" help:"Prompt template replacing the built-in one."`
	TestCmd  string `name:"test-cmd" placeholder:"CMD" help:"Gate run after the agent; the story counts as done only if it exits 0."`

	Retries     int           `default:"2" help:"Attempts after the first before a story is skipped."`
	MaxIter     int           `name:"max-iterations" default:"50" help:"Stop (exit 5) after this many iterations (at most 1000)."`
	NoProgress  int           `name:"no-progress" default:"5" help:"Stop (exit 5) after this many iterations in a row without a completed story."`
	Timeout     time.Duration `default:"1h" help:"Stop an agent that runs longer than this (0: no limit)."`
	IdleTimeout time.Duration `name:"idle-timeout" default:"0s" help:"Stop an agent that prints nothing for this long (0: no limit)."`
	Grace       time.Duration `default:"10s" help:"Time between SIGTERM and SIGKILL when stopping an agent."`
	WaitOnLimit bool          `name:"wait-on-limit" help:"When the agent hits its usage limit, wait for the reset (with a countdown) instead of stopping."`
	AllowDirty  bool          `name:"allow-dirty" help:"Start on a dirty tree; pre-existing changes are left out of every commit."`
	HookPolicy  string        `name:"hook-policy" enum:"rollback,record" default:"rollback" help:"What wiggum's agent hooks do when they see a test run fail mid-iteration: rollback (to the iteration's checkpoint, saving the attempt first; refused when unsafe) or record (only log it and tell the agent)."`
	DryRun      bool          `name:"dry-run" help:"Show the stories and the prompts the run would use; change nothing."`
	Quiet       bool          `short:"q" help:"Do not echo the agent's output, only the loop's progress."`
}

// Help is shown by `wiggum run --help`.
func (c *RunCmd) Help() string {
	return `Runs the loop: takes the agent lock for the whole run, then per iteration picks
the next open story, checkpoints, gives the agent the prompt on stdin (with
WIGGUM_SESSION, WIGGUM_STORY and WIGGUM_ITERATION in its environment), and
decides the outcome itself: the agent must exit 0 and --test-cmd, if given,
must pass. Success commits everything the iteration changed (new files too)
and marks the story done; failure is rolled back - only when provably safe,
and saved under refs/wiggum/backup/ first - and the story is retried with
the failure in its prompt, up to --retries, then skipped.

The plan is --prd N, --plan FILE, --issues DIR, or found: prd.json,
.ralph/prd.json, or a single .ralph/PRD-N/plan.md. Prompt placeholders:
{{STORY_ID}} {{STORY_TITLE}} {{STORY}} {{PLAN_PATH}} {{PROGRESS_PATH}}
{{ITERATION}} {{FAILURE_CONTEXT}}.

Progress: .ralph/wiggum/progress.md (human) and .ralph/wiggum/events.jsonl
(JSON lines); 'wiggum status' shows the live story and iteration.

Exit: 0 all stories done; 3 lock held; 4 a rollback was refused; 5 stopped
with work left (iteration cap, no-progress breaker, skipped stories, usage
limit); 130/143 interrupted.

  wiggum run --prd 1 --test-cmd 'go test ./...'
  wiggum run --plan docs/plan.md --agent codex --timeout 30m
  wiggum run --agent-cmd 'my-agent --yes' --max-iterations 10
  wiggum run --dry-run`
}

// Run runs the loop.
func (c *RunCmd) Run(ctx context.Context, g *Globals) error {
	repo, err := git.Open(ctx, g.WorkDir())
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	p, err := plan.Resolve(repo.Root, g.WorkDir(), plan.Source{PRD: c.PRD, File: c.Plan, Issues: c.Issues})
	if err != nil {
		return err
	}
	prof, err := c.profile()
	if err != nil {
		return err
	}
	var tmpl string
	if c.Prompt != "" {
		data, err := os.ReadFile(c.Prompt)
		if err != nil {
			return exitcode.BadInput("run: read --prompt: %v", err)
		}
		tmpl = string(data)
	}
	policy := session.PolicyRollback
	if c.HookPolicy == session.PolicyRecord {
		policy = session.PolicyRecord
	}
	opts := loop.Options{
		Plan: p, Agent: prof, Prompt: tmpl, TestCmd: c.TestCmd,
		Retries: c.Retries, MaxIter: c.MaxIter, NoProgress: c.NoProgress,
		Timeout: c.Timeout, IdleTimeout: c.IdleTimeout, Grace: c.Grace,
		AllowDirty: c.AllowDirty, WaitOnLimit: c.WaitOnLimit, Policy: policy,
		Out: g.stdout, Live: isTerminal(g.stdout), Width: termWidth(g.stdout), Quiet: c.Quiet, Command: os.Args,
	}
	if c.DryRun {
		return loop.DryRun(repo.Root, opts)
	}
	st, err := g.State(ctx)
	if err != nil {
		return err
	}
	_, err = loop.Run(ctx, st, opts)
	if ierr := Interrupted(ctx); ierr != nil {
		return ierr
	}
	if errors.Is(err, context.Canceled) {
		return exitcode.Silent(exitcode.Interrupt)
	}
	return err
}

func (c *RunCmd) profile() (agent.Profile, error) {
	if c.AgentCmd != "" {
		p, err := agent.Custom(c.AgentCmd)
		if err != nil {
			return p, exitcode.BadInput("run: %v", err)
		}
		return p, nil
	}
	p, err := agent.Builtin(c.Agent)
	if err != nil {
		return p, exitcode.BadInput("run: %v", err)
	}
	// Every iteration would fail the same way; say so once, up front.
	if _, err := exec.LookPath(p.Argv[0]); err != nil {
		return p, exitcode.BadInput("run: the %s agent (%s) is not installed or not in PATH; install it, or choose another with --agent or --agent-cmd", c.Agent, p.Argv[0])
	}
	return p, nil
}

// termWidth is the terminal's width in columns, or 0 when unknown.
func termWidth(w any) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// isTerminal reports whether w is a terminal, where a redrawn status line
// makes sense; pipes and files get plain lines.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}
