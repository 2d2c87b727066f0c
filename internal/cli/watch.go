package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/watch"
)

// WatchCmd is `wiggum watch`.
type WatchCmd struct {
	Once     bool          `name:"once" help:"Print the newest run's events and exit, without following."`
	NoFollow bool          `name:"no-follow" help:"Same as --once."`
	Plain    bool          `name:"plain" help:"Plain lines, one per event, even on a terminal."`
	JSON     bool          `name:"json" help:"Print each event as one JSON object (the event log's record; implies --plain)."`
	Interval time.Duration `name:"interval" default:"250ms" help:"How often to look for new events."`
}

// Help is shown by `wiggum watch --help`.
func (c *WatchCmd) Help() string {
	return `Shows the repository's run live, from any terminal in the repository or in a
linked worktree of it, while the run goes on or after it has ended. On a
terminal it is a full-screen view: each worker's story, attempt, elapsed
time, the agent's last tool call, tokens and cost so far; the plan's progress;
recent rollbacks, guard denials, merges, conflicts and usage-limit waits.

Keys: up/down (or k/j) or 1-9 select a worker; enter or f follows its agent's
output; esc goes back; ? shows help; q or ctrl-c quits.

Not on a terminal (or with --plain) it prints one line per event and follows
the log until the run ends; --once prints what is there and exits.

watch only reads the event log (.ralph/wiggum/events.jsonl), the worktrees'
logs and the agents' output logs (.ralph/wiggum/agent/): it never takes a
lock and never writes, so it cannot disturb the run.

  wiggum watch                     # full-screen, live
  wiggum watch --once              # the newest run's events, then exit
  wiggum watch | grep -E 'merged|rolled back'
  wiggum watch --once --json | jq -r 'select(.event == "tool") | .tool'
  wiggum watch -C ../other-repo --plain`
}

// Run shows the run.
func (c *WatchCmd) Run(ctx context.Context, g *Globals) error {
	if c.Interval < 10*time.Millisecond || c.Interval > time.Minute {
		return badinput.Errorf("watch: --interval must be between 10ms and 1m, got %s", c.Interval)
	}
	root, err := mainRoot(ctx, g.WorkDir())
	if err != nil {
		return badinput.Wrap(err)
	}
	src := watch.NewSource(root)
	defer src.Close()
	once := c.Once || c.NoFollow
	if once || c.Plain || c.JSON || !isTerminal(g.stdout) || !isTerminal(os.Stdin) {
		err := watch.Plain(ctx, src, g.stdout, watch.PlainOptions{
			Follow: !once, Interval: c.Interval, JSON: c.JSON, Alive: runAlive(root),
			Notice: func(s string) { fmt.Fprintln(g.stderr, "wiggum watch: "+s) },
		})
		if src.Bad > 0 {
			fmt.Fprintf(g.stderr, "wiggum watch: skipped %d unreadable line(s) in %s\n", src.Bad, watch.EventLog)
		}
		if ierr := Interrupted(ctx); ierr != nil {
			return ierr
		}
		return err
	}
	m := watch.NewModel(src, c.Interval, runAlive(root))
	_, err = tea.NewProgram(m, tea.WithContext(ctx), tea.WithOutput(g.stdout), tea.WithInput(os.Stdin)).Run()
	if ierr := Interrupted(ctx); ierr != nil {
		return ierr
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("watch: %w", err)
	}
	return nil
}

// runAlive is watch's and report's test of whether the run that recorded
// pid in the event log of the main tree at root is still at work: it is
// the live wiggum holding that tree's agent lock (layout.Tree.LiveHolder,
// as wiggum status decides). The pid alone is no proof: a run in a
// container recorded its pid there (1, often), and after a reboot any
// process may have it.
func runAlive(root string) func(pid int) bool {
	tree := layout.At(root)
	return func(pid int) bool {
		h, err := tree.LiveHolder()
		if err != nil {
			return layout.PIDAlive(pid) // the lock cannot be read: the pid is all there is
		}
		return h != nil && h.PID == pid
	}
}

// mainRoot is the main working tree of the repository holding dir: a run's
// records live there, and a linked worktree (a parallel worker's, say)
// shares them. Finding it only reads.
func mainRoot(ctx context.Context, dir string) (string, error) {
	repo, err := git.Open(ctx, dir)
	if err != nil {
		return "", err
	}
	if filepath.Base(repo.CommonDir) == ".git" {
		main := filepath.Dir(repo.CommonDir)
		if fi, err := os.Stat(filepath.Join(main, ".git")); err == nil && fi.IsDir() {
			return main, nil
		}
	}
	return repo.Root, nil
}
