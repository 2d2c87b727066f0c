package remote

import "syscall"

// diesWithUs is the process attributes of a git this package starts: it
// is SIGKILLed when wiggum dies, so no push goes on after its run is
// gone; group puts it in a process group of its own.
func diesWithUs(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group, Pdeathsig: syscall.SIGKILL}
}
