// Package proc starts an agent so that it can never outlive wiggum: the
// direct child is a small supervisor (wiggum itself, in a hidden mode) that
// runs the command in its own process group and kills that whole group when
// told to, when the command exits, or when wiggum dies.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/internal/exitwait"
)

// SuperviseArg is the hidden first argument that puts wiggum in supervisor mode.
const SuperviseArg = "__supervise"

// DefaultGrace is how long a process group gets between SIGTERM and SIGKILL.
const DefaultGrace = 5 * time.Second

// Options tunes Start.
type Options struct {
	Dir    string
	Env    []string // full environment; nil means this process's
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Grace  time.Duration
	// Hold is a file the supervisor keeps open for its whole life (the agent
	// lock), so the lock outlives a SIGKILLed wiggum until the group is dead.
	// The command itself never inherits it.
	Hold *os.File
	// Pool, when set, runs the command on one of its supervisors rather
	// than starting one for it (Stdin, Stdout and Stderr must then be
	// files or nil; otherwise, or when the pool cannot take the command,
	// a one-shot supervisor runs it).
	Pool *Pool
}

// Process is a supervised command.
type Process struct {
	pid    int                  // the supervisor's; the command's when pooled
	signal func(syscall.Signal) // asks the supervisor to pass a signal on
	done   chan struct{}
	code   int // set before done is closed
	err    error
}

// Start runs argv under a supervisor.
func Start(ctx context.Context, argv []string, opts Options) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command to run")
	}
	self, err := selfPath()
	if err != nil {
		return nil, fmt.Errorf("find wiggum's own binary: %w", err)
	}
	grace := opts.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	if opts.Pool != nil && pooling {
		p, err := opts.Pool.start(argv, opts, grace)
		if err == nil {
			watch(ctx, p)
			return p, nil
		}
		if !errors.Is(err, errNotPooled) {
			return nil, startFailed(argv[0], err)
		}
	}
	// The supervisor reports on a pipe of its own (see Supervise): the
	// command started, or why not, and at its end that it ended itself.
	repR, repW, err := os.Pipe()
	if err != nil {
		return nil, startFailed(argv[0], fmt.Errorf("supervisor report pipe: %w", err))
	}
	args := []string{SuperviseArg, grace.String()}
	if opts.Hold != nil {
		args = append(args, "hold,"+reportArg)
	} else {
		args = append(args, reportArg)
	}
	args = append(args, argv...)
	cmd := exec.Command(self, args...)
	cmd.Dir = opts.Dir
	cmd.Env = opts.Env
	cmd.Stdin = opts.Stdin
	cmd.Stdout = opts.Stdout
	cmd.Stderr = opts.Stderr
	if opts.Hold != nil {
		cmd.ExtraFiles = []*os.File{opts.Hold}
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, repW)
	cmd.SysProcAttr = supervisorAttr()
	err = cmd.Start()
	repW.Close()
	if err != nil {
		repR.Close()
		return nil, startFailed(argv[0], err)
	}
	report := make(chan []byte, 1)
	go func() {
		// At EOF when the supervisor is gone: the command never has it.
		b, _ := io.ReadAll(io.LimitReader(repR, 64))
		repR.Close()
		report <- b
	}()
	p := &Process{pid: cmd.Process.Pid, done: make(chan struct{})}
	// A supervisor stopped by wiggum before it reported (an idle timeout
	// of nothing, a ^C at once) ended as told, not for want of anything.
	var signalled atomic.Bool
	p.signal = func(sig syscall.Signal) {
		signalled.Store(true)
		_ = cmd.Process.Signal(sig)
	}
	go func() {
		exitwait.For(cmd.Process) // parked while it runs, not blocked in waitid
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.code = 128 + int(ws.Signal())
			}
		default:
			p.err = err
		}
		if rep := <-report; p.err == nil && (len(rep) > 0 || !signalled.Load()) {
			p.err = readReport(rep, argv[0], p.code)
		}
		close(p.done)
	}()
	watch(ctx, p)
	return p, nil
}

// reportArg, in the supervisor's flags, says its report pipe follows the
// descriptors it is given (after the hold, when there is one).
const reportArg = "report"

// What a one-shot supervisor writes on its report pipe: reportStarted once
// the command runs, or reportFailed and the errno of its failure to start
// it; and reportEnded when it ends by itself, the command's group gone.
const (
	reportStarted = 's'
	reportFailed  = 'e'
	reportEnded   = 'x'
)

// readReport is what a supervisor's report says of its end, given its exit
// status code: nil when it ran the command and ended by itself, or could
// not start it for the command's own sake (not found, not executable: its
// exit status says so); a *StartError when it ended before starting the
// command, or could not start it for want of a resource; ErrSupervisorLost
// when it died while the command ran (the command died with it).
func readReport(rep []byte, argv0 string, code int) error {
	switch {
	case len(rep) == 0:
		how := fmt.Sprintf("exit status %d", code)
		if code > 128 {
			how = fmt.Sprintf("killed by signal %d", code-128)
		}
		return &StartError{Command: argv0, Err: fmt.Errorf("wiggum's supervisor ended (%s) before it could start it; the system may be out of processes or memory (ulimit -u)", how)}
	case rep[0] == reportFailed:
		n, err := strconv.Atoi(string(rep[1:]))
		if errno := syscall.Errno(n); err == nil && wantOfResource(errno) {
			return &StartError{Command: argv0, Err: errno}
		}
		return nil
	case rep[len(rep)-1] != reportEnded:
		return fmt.Errorf("%w before %s ended (%s)", ErrSupervisorLost, argv0, fmt.Sprintf("exit status %d", code))
	}
	return nil
}

// watch stops p when ctx is cancelled.
func watch(ctx context.Context, p *Process) {
	go func() {
		select {
		case <-ctx.Done():
			p.Signal(syscall.SIGTERM)
		case <-p.done:
		}
	}()
}

// Signal asks the supervisor to pass sig to the command's process group; on
// SIGINT/SIGTERM it follows with SIGKILL after the grace period.
func (p *Process) Signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		if p.signal != nil {
			p.signal(sig)
		}
	}
}

// Done is closed when the supervisor (and so the whole group) has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the command and returns its exit code: the command's own,
// or 128+signal when a signal killed it.
func (p *Process) Wait() (int, error) {
	<-p.done
	if p.err != nil {
		return -1, p.err
	}
	return p.code, nil
}

// selfPath finds the binary to re-run as the supervisor. argv[0] comes
// first: a test harness runs wiggum through a link whose name selects it.
func selfPath() (string, error) {
	if a := os.Args[0]; strings.Contains(a, "/") {
		if abs, err := filepath.Abs(a); err == nil {
			return abs, nil
		}
	} else if p, err := exec.LookPath(a); err == nil {
		return filepath.Abs(p)
	}
	return os.Executable()
}

// Pid is the supervisor's pid; for a pooled command, the command's own.
func (p *Process) Pid() int { return p.pid }

// CommandLine renders argv for messages.
func CommandLine(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`|&;<>()*?[]#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}
