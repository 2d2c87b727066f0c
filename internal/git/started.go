package git

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"

	"github.com/wiggum-dev/wiggum/internal/exitwait"
)

// Started is a git command started before its input is ready: the process
// starts and git reads its configuration and finds the repository while
// the caller is still working out what to tell it, so that start-up is off
// the caller's critical path. git reads its stdin only when Finish gives
// it; a command that acts on its input at end of input (`update-ref
// --stdin`, `update-index --index-info`) has done nothing before then, and
// Abandon stops it unheard.
type Started struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	stdout bytes.Buffer
	stderr bytes.Buffer
	args   []string
	err    error // a failure to start, returned by Finish
	ended  bool
	// watched ends the watch on git waiting on a FIFO (stuck.go) and
	// says what it was stopped for.
	watched func() *Stuck
}

// Start starts git in the working tree with extra environment variables;
// Finish or Abandon must follow.
func (r *Repo) Start(ctx context.Context, env []string, args ...string) *Started {
	s := &Started{args: args}
	s.cmd = command(ctx, r.Root, r.env(env), args...)
	s.cmd.Stdout = &s.stdout
	s.cmd.Stderr = &s.stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err == nil {
		err = s.cmd.Start()
	}
	if err != nil {
		s.err = &Error{Args: args, Err: err}
		s.ended = true
		return s
	}
	s.watched = watchStuck(s.cmd.Process)
	if subcommand(args) == "update-ref" && slices.Contains(args, "--stdin") {
		// Until its input ends it has taken no ref's lock: a stale lock is
		// not this git's (ClearStaleLock).
		markIdle(s.cmd.Process.Pid, true)
	}
	return s
}

// Finish gives git stdin (nil: none), closes it and waits for git; it
// returns what RunEnv would have.
func (s *Started) Finish(stdin []byte) (string, error) {
	if s.ended {
		if s.err == nil {
			s.err = &Error{Args: s.args, Err: errors.New("finished twice")}
		}
		return "", s.err
	}
	s.ended = true
	markIdle(s.cmd.Process.Pid, false)
	var werr error
	if len(stdin) > 0 {
		// git may stop reading (a bad line); its error says why, the
		// broken pipe does not.
		_, werr = s.in.Write(stdin)
	}
	s.in.Close()
	exitwait.For(s.cmd.Process) // parked while git runs, not a thread blocked in waitid
	err := s.cmd.Wait()
	stuck := s.watched()
	if err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return s.stdout.String(), &Error{Args: s.args, Stderr: s.stderr.String(), Err: err, Stuck: stuck}
	}
	return s.stdout.String(), nil
}

// Abandon stops git before it has read any input (it acts on nothing)
// and reaps it; after Finish, or a second time, it does nothing.
func (s *Started) Abandon() {
	if s.ended {
		return
	}
	s.ended = true
	markIdle(s.cmd.Process.Pid, false)
	_ = s.cmd.Process.Kill()
	s.in.Close()
	_ = s.cmd.Wait()
	s.watched()
}
