package proc

import (
	"os/signal"

	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wiggum-dev/wiggum/internal/layout"
)

// The supervisor hears of wiggum's death as SIGTERM, which it catches and
// turns into a group kill; SIGKILL would leave the group running.
func supervisorAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// childAttr puts the command in its own process group, so the whole group
// can be signalled. When the supervisor's stdin is the terminal and it is in
// the terminal's foreground group, the command's group becomes the
// foreground instead: an interactive agent under `wiggum lock` would
// otherwise be stopped (SIGTTIN) the first time it reads the terminal. The
// returned function gives the terminal back once the command is done.
func childAttr() (*syscall.SysProcAttr, func()) { return childAttrOn(0) }

// childAttrOn is childAttr for a command whose stdin is fd. With fd -1
// (an unattended command: an agent of wiggum run, its --test-cmd) the
// command gets a session of its own, which makes its process group too,
// and no controlling terminal: what it runs that would ask the terminal -
// a signing program's passphrase, ssh's host key question, an installer's
// prompt - fails at once, where in the terminal's session, outside its
// foreground group, the first read would stop it (SIGTTIN) until the
// attempt's timeout.
func childAttrOn(fd int) (*syscall.SysProcAttr, func()) {
	if fd < 0 {
		return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}, func() {}
	}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || fg != syscall.Getpgrp() {
		return attr, func() {}
	}
	attr.Foreground, attr.Ctty = true, 0
	return attr, func() {
		// Taking the terminal back from a background group raises SIGTTOU;
		// no command is started after this, so ignoring it here cannot be
		// inherited by an agent.
		signal.Ignore(syscall.SIGTTOU)
		_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, fg)
	}
}

// becomeSubreaper makes orphaned descendants of the command re-parent to the
// supervisor, so it can reap them and know when the tree is gone.
func becomeSubreaper() {
	const prSetChildSubreaper = 36
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}

// children lists the supervisor's live children: the command and whatever
// was re-parented to it. Zombies are left out; Wait4 reaps them.
func children() []int {
	self := os.Getpid()
	var pids []int
	layout.EachProcess(func(pid int, state string, ppid int) {
		if ppid == self && state != "Z" && state != "X" {
			pids = append(pids, pid)
		}
	})
	return pids
}

// pooling: supervisors may be pooled (the pool's socket is a
// SOCK_SEQPACKET pair).
const pooling = true

func socketpair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
}
