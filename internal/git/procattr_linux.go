package git

import (
	"os/exec"
	"syscall"
)

// procAttr makes every git command die with wiggum: a SIGKILLed wiggum frees
// the agent lock at once, and a git command it left running would go on
// writing refs and files while another process holds the lock. SIGTERM,
// not SIGKILL, so git removes its own lock files (index.lock) on the way
// out instead of leaving the repository blocked.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// detach starts cmd in a session of its own: it has no controlling
// terminal, so nothing it runs can open /dev/tty and wait there.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr.Setsid = true
}
