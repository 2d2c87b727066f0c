package proc

import "syscall"

// The supervisor hears of wiggum's death as SIGTERM, which it catches and
// turns into a group kill; SIGKILL would leave the group running.
func supervisorAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// becomeSubreaper makes orphaned descendants of the command re-parent to the
// supervisor, so it can reap them and know when the tree is gone.
func becomeSubreaper() {
	const prSetChildSubreaper = 36
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}
