package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/internal/exitwait"
	"github.com/wiggum-dev/wiggum/internal/killpoint"
)

// Supervise is the supervisor mode: args are what Start put after
// SuperviseArg. It returns the exit code for the supervisor process.
func Supervise(args []string) int {
	// The supervisor waits: for its command, for wiggum's messages, for
	// signals. One P is all it uses, and spares it the runtime's hand-offs
	// between threads.
	runtime.GOMAXPROCS(1)
	// A supervisor that dies before it starts anything, as one whose Go
	// runtime cannot make its threads under a process limit does.
	killpoint.At("supervisor-start")
	if len(args) == 1 && args[0] == serveArg {
		return serve()
	}
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "wiggum: supervisor: missing command")
		return 2
	}
	grace, err := time.ParseDuration(args[0])
	if err != nil {
		grace = DefaultGrace
	}
	var hold, report *os.File
	fd := 3
	flags := strings.Split(args[1], ",")
	if slices.Contains(flags, "hold") {
		// fd 3 is the agent lock; keep it open, but never hand it on.
		syscall.CloseOnExec(fd)
		hold = os.NewFile(uintptr(fd), "agent-lock")
		fd++
	}
	if slices.Contains(flags, reportArg) {
		// The report pipe (readReport): never the command's either, so
		// that its end is this process's.
		syscall.CloseOnExec(fd)
		report = os.NewFile(uintptr(fd), "report")
	}
	say := func(b []byte) {
		if report != nil {
			_, _ = report.Write(b)
		}
	}
	argv := args[2:]
	becomeSubreaper()

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	var restoreTerminal func()
	cmd.SysProcAttr, restoreTerminal = childAttr()
	if err := cmd.Start(); err != nil {
		var errno syscall.Errno
		errors.As(err, &errno)
		say(fmt.Appendf(nil, "%c%d", reportFailed, int(errno)))
		fmt.Fprintf(os.Stderr, "wiggum: cannot start %s: %v\n", argv[0], err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	say([]byte{reportStarted})
	pgid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() {
		// Parked while the command runs, not a thread blocked in waitid.
		exitwait.For(cmd.Process)
		waited <- cmd.Wait()
	}()

	var killAt <-chan time.Time
	var code int
loop:
	for {
		select {
		case s := <-sigs:
			sig := s.(syscall.Signal)
			_ = syscall.Kill(-pgid, sig)
			if sig != syscall.SIGQUIT && killAt == nil {
				killAt = time.After(grace)
			}
		case <-killAt:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		case err := <-waited:
			code = exitCode(err)
			break loop
		}
	}
	restoreTerminal()
	reapGroup(pgid, grace, sigs)
	if hold != nil {
		hold.Close()
	}
	say([]byte{reportEnded})
	return code
}

// reapGroup ends what the command left behind in its group (a background
// job, a daemon that did not call setsid) and what left the group but, the
// supervisor being a subreaper, was re-parented to it (a daemon that did call
// setsid, a detached spawn), and reaps them all, so nothing writes to the
// repository once the lock is free.
func reapGroup(pgid int, grace time.Duration, sigs <-chan os.Signal) {
	// Each process gets SIGTERM once, also those re-parented here during
	// the grace period when their parent dies: a second SIGTERM would make
	// a process that traps it run its handler again.
	termed := map[int]bool{}
	terminateEscaped := func() bool {
		found := false
		for _, pid := range children() {
			if termed[pid] {
				continue
			}
			termed[pid] = true
			if g, err := syscall.Getpgid(pid); err == nil && g != pgid && syscall.Kill(pid, syscall.SIGTERM) == nil {
				found = true
			}
		}
		return found
	}
	groupLeft := syscall.Kill(-pgid, syscall.SIGTERM) == nil
	if !groupLeft && noChildren() {
		// The common case: nothing was left behind. As a subreaper, any
		// surviving descendant would be a child here, so there is no need
		// to scan /proc.
		return
	}
	if escaped := terminateEscaped(); groupLeft || escaped {
		deadline := time.Now().Add(grace)
		for time.Now().Before(deadline) && (groupAlive(pgid) || len(children()) > 0) {
			select {
			case <-sigs:
				deadline = time.Now()
			case <-time.After(20 * time.Millisecond):
			}
			terminateEscaped()
		}
	}
	signalAll := func(sig syscall.Signal) {
		_ = syscall.Kill(-pgid, sig)
		for _, pid := range children() {
			_ = syscall.Kill(pid, sig)
		}
	}
	// Killing a re-parented process re-parents its own children here in
	// turn, so kill and reap until none is left.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		signalAll(syscall.SIGKILL)
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.ECHILD) {
			return
		}
		if pid <= 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// noChildren reaps exited children and reports whether none is left.
func noChildren() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.ECHILD) {
			return true
		}
		if err != nil || pid == 0 {
			return false
		}
	}
}

// groupAlive reports whether the group has members that are not zombies
// waiting for the supervisor to reap them.
func groupAlive(pgid int) bool {
	for {
		var ws syscall.WaitStatus
		pid, _ := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 {
			break
		}
	}
	return syscall.Kill(-pgid, 0) == nil
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 1
}
