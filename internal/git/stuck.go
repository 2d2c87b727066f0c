package git

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// A git command that opens or reads a named pipe (FIFO) waits until
// something writes to it: for ever, when what planted it - an agent's
// mkfifo .gitignore, a FIFO made .gitattributes or .git/info/exclude -
// never does. Every git process wiggum starts would then hang: the
// loop's status after an attempt, a rollback's, a hook's. So while a git
// command runs, a watch (stuck_linux.go) looks every StuckTick at what it
// and the processes it started wait on, and a command found waiting on
// the same FIFO at two looks in a row is stopped (SIGTERM, so that git
// takes its index.lock away) and reported as a Stuck. Nothing wiggum runs
// git for reads a FIFO on purpose: the pipes it feeds git are anonymous.

// StuckTick is how often a running git command is looked at, and so about
// how long it waits on a FIFO before it is stopped (between one and two
// ticks). A variable for tests.
var StuckTick = time.Second

// Stuck is what a git command waited on when it was stopped.
type Stuck struct {
	Path string        // the FIFO, absolute
	Op   string        // "opening" or "reading"
	Pid  int           // the process that waited: the command's git or one it started
	Cmd  string        // that process's command line, when git started it
	For  time.Duration // how long it was seen waiting, at least
}

func (s *Stuck) String() string {
	who := "it"
	if s.Cmd != "" {
		who = strconv.Quote(s.Cmd)
	}
	return fmt.Sprintf("stopped: %s waited %s %s %s, a FIFO (named pipe) that nothing writes to, and git would have waited for ever. It is not a file git can read: remove it (rm %q) and run wiggum again",
		who, s.For.Round(100*time.Millisecond), s.Op, s.Path, s.Path)
}

// StuckOf is what stopped the git command err is from, or nil when it was
// not stopped waiting on a FIFO.
func StuckOf(err error) *Stuck {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Stuck
	}
	return nil
}
