package cli

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/proc"
	"github.com/wiggum-dev/wiggum/internal/signals"
)

// LockCmd is `wiggum lock [--wait D] -- CMD ARGS...`.
type LockCmd struct {
	Wait    time.Duration `help:"Wait up to this long for the lock instead of failing at once (e.g. 30s, 5m)."`
	Grace   time.Duration `default:"5s" help:"On SIGINT/SIGTERM, how long CMD's process group gets before SIGKILL."`
	Command []string      `arg:"" optional:"" passthrough:"" name:"cmd" help:"The command to run, after --."`
}

// Help is shown by `wiggum lock --help`.
func (c *LockCmd) Help() string {
	return `Runs CMD while holding the exclusive agent lock (an flock on .ralph/.agent-lock at
the working-tree root, the same file the bash ralph loop locks). CMD gets
WIGGUM_SESSION in its environment, so wiggum checkpoint/rollback/hook calls
from inside it act as part of this session. stdin, stdout, stderr and CMD's
exit code pass through. SIGINT/SIGTERM go to CMD's whole process group, then
SIGKILL after --grace. CMD never outlives wiggum, even if wiggum is SIGKILLed,
and the lock stays held until CMD's process group is gone.

If the lock is held, wiggum exits 3 and names the holder.

  wiggum lock -- claude -p "implement the next story"
  wiggum lock --wait 10m -- ./my-agent.sh`
}

// Run runs the command under the lock.
func (c *LockCmd) Run(ctx context.Context, g *Globals) error {
	if len(c.Command) > 0 && c.Command[0] == "--" {
		c.Command = c.Command[1:]
	}
	if len(c.Command) == 0 {
		return badinput.Errorf("lock: no command given; usage: wiggum lock [--wait D] -- CMD ARGS...")
	}
	st, err := g.State(ctx)
	if err != nil {
		return err
	}
	l, err := st.Acquire(ctx, layout.AcquireOptions{Wait: c.Wait, Command: c.Command})
	if err != nil {
		// A signal during --wait cancels the wait: that is an interrupt
		// (130/143), not a failure to lock.
		if ierr := Interrupted(ctx); ierr != nil {
			return ierr
		}
		var held *layout.HeldError
		if errors.As(err, &held) {
			held.Waits, held.Waited = true, c.Wait
		}
		return err
	}
	defer l.Release()
	g.Log().Debug("lock acquired", "session", l.Holder.Session, "cmd", proc.CommandLine(c.Command))
	// An agent run under the lock runs its hooks as `wiggum hook ...`.
	note, err := agent.OnPath(st.Path(layout.RuntimeDir))
	if err != nil {
		return err
	}
	if note != "" {
		g.Log().Warn(note)
	}
	hold := l.Dup()
	env := append(os.Environ(), layout.SessionEnv+"="+l.Holder.Session, layout.RootEnv+"="+st.Repo.Root)
	p, err := proc.Start(context.WithoutCancel(ctx), c.Command, proc.Options{
		Dir: g.WorkDir(), Env: env, Stdin: os.Stdin, Stdout: g.stdout, Stderr: g.stderr, Grace: c.Grace, Hold: hold,
	})
	if hold != nil {
		hold.Close()
	}
	if err != nil {
		return err
	}
	go func() {
		select {
		case <-ctx.Done():
			if sig := signals.Caught(ctx); sig != 0 {
				p.Signal(sig)
			}
		case <-p.Done():
		}
	}()
	code, err := p.Wait()
	if err != nil {
		return err
	}
	if ierr := Interrupted(ctx); ierr != nil {
		return ierr
	}
	return Silent(code)
}
