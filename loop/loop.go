// Package loop runs a plan's stories through a coding agent, one iteration
// per story attempt, under the agent lock: checkpoint, prompt, agent, then
// the loop - not the agent - decides. Success is committed (new files
// included, pre-existing dirt never) together with the story's tick;
// failure is rolled back only when that is provably safe, saved in a
// backup ref, and retried with its failure in the next prompt. A run
// journal makes a killed run resumable without losing or repeating work.
//
// One executor runs attempts in a working tree (attempt.go); the serial
// driver (serial.go) runs it in the main tree, the parallel driver
// (parallel.go) in one worktree per story with a merge coordinator; both
// share the run's lock, journal, budgets and usage-limit gate (run.go).
package loop

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/internal/telemetry"
	"github.com/wiggum-dev/wiggum/internal/termtext"
)

// MaxIterationsLimit is the hard upper bound on --max-iterations, a safety
// net: by default a run allows each open story its attempts.
const MaxIterationsLimit = 1_000_000

// Options configure a run.
type Options struct {
	Plan   plan.Plan
	Agent  agent.Profile
	Prompt string // template; "" is DefaultPrompt
	// CommitMessage is the template of a story's commit message; "" is
	// git config wiggum.commitMessage, else DefaultCommitMessage.
	CommitMessage string
	TestCmd       string // gate run with sh -c after a successful agent
	Retries       int    // attempts after the first, per story
	MaxIter       int    // iterations in this run; 0: open stories x attempts
	// Budgets in USD from the cost the agents report; 0 is none. A
	// resumed run keeps the killed run's budgets unless given new ones.
	MaxCost      float64
	MaxStoryCost float64
	// Fresh starts over instead of resuming an interrupted run of another
	// plan (what the killed run left is still saved and cleaned first).
	Fresh       bool
	NoProgress  int // iterations in a row without a completed story before giving up
	Timeout     time.Duration
	IdleTimeout time.Duration
	Grace       time.Duration
	AllowDirty  bool
	WaitOnLimit bool
	// RetryConflicts: in a parallel run, a story whose finished branch
	// conflicts with what landed meanwhile gets another attempt (when it
	// has one left) from the target as it is then, its agent told to
	// merge the kept branch in; otherwise the branch is kept and the
	// story left open for the person.
	RetryConflicts bool
	// KeepTests: an attempt whose changes delete a test file (isTestFile)
	// or switch tests off in one (testsSwitchedOff) fails, its agent told
	// to keep them; without it the run only says so.
	KeepTests bool
	// Branch is the branch the run commits to: it switches there first,
	// making it from HEAD when no branch of that name exists (see
	// switchBranch). "" keeps the branch checked out. BranchFrom says
	// where the name came from, for the messages.
	Branch     string
	BranchFrom string
	// MaxFileSize: a new file larger than this many bytes is left out of
	// the loop's commits (0: no limit).
	MaxFileSize int64
	// VerifyHooks: the agent's hooks are installed, so each attempt checks
	// that the guard hook saw the agent's shell commands, and an attempt
	// that ran them unseen stops the run (the hooks are off somewhere).
	VerifyHooks bool
	// GitShim is a directory holding wiggum's git shim (hooks.GitShim),
	// put first on the agent's PATH: "" for none.
	GitShim string
	Policy  string // what hooks do with failing tests mid-iteration (session.Policy*)
	Out     io.Writer
	Live    bool       // a terminal: redraw a status line
	Width   func() int // the terminal's columns now, when Live: asked at each redraw
	Quiet   bool       // do not echo the agent's output
	Command []string
	// Coordinator, when set, shares the run with other machines through a
	// git server (wiggum run --remote): stories are claimed there before
	// they start and land there, always through worktrees as with Workers.
	Coordinator Coordinator
	// Workers > 1 runs that many stories at once, each in its own worktree
	// (RunParallel).
	Workers int
	// Tracer exports the run as a trace; nil exports nothing.
	Tracer *telemetry.Tracer
}

// Summary is how a run ended.
type Summary struct {
	Iterations int
	Completed  []string
	// Unchanged: the completed stories whose agent changed nothing git
	// tracks (ticked on its exit status alone).
	Unchanged []string
	Skipped   []string
	// Kept: finished stories whose branch could not land (a conflict),
	// kept; not counted in Completed.
	Kept    []string
	Left    int
	Backups []string
	// MergeTime is the time parallel workers spent landing their merged
	// stories under the repository mutex: merge, plan tick and worktree
	// removal.
	MergeTime time.Duration
	// Resumed: the run continued one that was killed or interrupted.
	Resumed bool
	// Spent is the run's cost in USD (across resumes), as agents reported it.
	Spent float64
}

// StopError is a run that stopped with work left (exit 5).
type StopError struct{ Reason string }

func (e *StopError) Error() string { return e.Reason }

// ProgressFile is the human-readable log, in the runtime directory so that
// no rollback ever erases it and no commit ever carries it.
const ProgressFile = "progress.md"

// Run runs the loop until no story is open, a stop condition, or ctx is
// cancelled (a signal). It holds the agent lock for the whole run. A run
// that a kill, a crash or a signal cut short is resumed: its journal gives
// each story's failed attempts, the failure context and the spending back,
// and what the killed run left in the tree is saved and cleaned first.
func Run(ctx context.Context, st *checkpoint.State, opts Options) (*Summary, error) {
	if err := validate(&opts); err != nil {
		return nil, err
	}
	if opts.Workers > 1 || opts.Coordinator != nil {
		return runParallel(ctx, st, opts)
	}
	return runSerial(ctx, st, opts)
}

func validate(o *Options) error {
	if o.Workers < 0 || o.Workers > MaxWorkers {
		return badinput.Errorf("run: --workers must be between 1 and %d, got %d", MaxWorkers, o.Workers)
	}
	if o.MaxIter < 0 || o.MaxIter > MaxIterationsLimit {
		return badinput.Errorf("run: --max-iterations must be between 1 and %d (0: stories x attempts), got %d", MaxIterationsLimit, o.MaxIter)
	}
	if o.Retries < 0 || o.Retries > 100 {
		return badinput.Errorf("run: --retries must be between 0 and 100, got %d", o.Retries)
	}
	if o.NoProgress < 1 {
		return badinput.Errorf("run: --no-progress must be at least 1, got %d", o.NoProgress)
	}
	if o.Timeout < 0 || o.IdleTimeout < 0 {
		return badinput.Errorf("run: timeouts cannot be negative")
	}
	if o.MaxCost < 0 || o.MaxStoryCost < 0 || math.IsNaN(o.MaxCost) || math.IsNaN(o.MaxStoryCost) || math.IsInf(o.MaxCost, 0) || math.IsInf(o.MaxStoryCost, 0) {
		return badinput.Errorf("run: --max-cost and --max-story-cost must be amounts in USD, 0 or more")
	}
	if o.Prompt == "" {
		o.Prompt = DefaultPrompt
	}
	if o.Policy == "" {
		o.Policy = session.PolicyRollback
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	return nil
}

func storyText(s *plan.Story) string {
	if strings.TrimSpace(s.Details) != "" {
		return s.Details
	}
	return s.ID + ": " + s.Title
}

func commitNote(sha string) string {
	if sha == "" {
		return " (no changes to commit)"
	}
	return ", commit " + sha
}

func backupNote(ref string) string {
	if ref == "" {
		return ""
	}
	return "; the attempt is saved in " + ref
}

// appendLine appends to the progress log; the log is a courtesy, so a
// failure to write it never stops the loop.
func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line + "\n")
}

// DryRun prints the stories a run would work on, in order, with the prompt
// each would get, and changes nothing - not even wiggum's own state, which
// is why it takes the working-tree root rather than a State.
func DryRun(root string, opts Options) error {
	if err := validate(&opts); err != nil {
		return err
	}
	stories, err := opts.Plan.Stories()
	if err != nil {
		return err
	}
	planRel := relPath(root, opts.Plan.Path())
	progress := layout.RuntimeDir + "/" + ProgressFile
	w := opts.Out
	fmt.Fprintf(w, "plan %s (%s): %d story(ies), %d open\n", planRel, opts.Plan.Kind(), len(stories), plan.Open(stories))
	for _, s := range stories {
		mark := " "
		if s.Done {
			mark = "x"
		}
		fmt.Fprintf(w, "  [%s] %s: %s\n", mark, termtext.Clean(s.ID), termtext.Title(s.Title))
	}
	fmt.Fprintf(w, "agent: %s\n", commandLine(opts.Agent.Argv))
	if opts.TestCmd != "" {
		fmt.Fprintf(w, "gate: %s\n", opts.TestCmd)
	}
	if opts.Branch != "" {
		fmt.Fprintf(w, "branch: %s (%s); the run switches there first, making it from HEAD if it does not exist\n", opts.Branch, opts.BranchFrom)
	}
	iter := 0
	for i := range stories {
		s := &stories[i]
		if s.Done {
			continue
		}
		iter++
		if opts.MaxIter > 0 && iter > opts.MaxIter {
			fmt.Fprintf(w, "\n(--max-iterations %d reached; later stories would wait for another run)\n", opts.MaxIter)
			break
		}
		fmt.Fprintf(w, "\n===== iteration %d: %s =====\n", iter, termtext.Clean(s.ID))
		fmt.Fprint(w, termtext.Lines(Render(opts.Prompt, Vars{
			StoryID: s.ID, StoryTitle: s.Title, Story: storyText(s),
			PlanPath: planRel, ProgressPath: progress, Iteration: iter,
		})))
	}
	return nil
}
