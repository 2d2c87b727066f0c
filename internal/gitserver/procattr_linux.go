package gitserver

import "syscall"

// daemonAttr puts the test's git daemon in a process group of its own and
// has the kernel kill it when the test process dies.
func daemonAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
