package git

import (
	"os"
	"os/exec"
	"syscall"
	"time"
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

// stopGroup ends a detached git and everything in its process group:
// SIGTERM first, so git removes its lock files (index.lock) on the way
// out, then SIGKILL for what ignores it.
func stopGroup(p *os.Process) error {
	pid := p.Pid
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		return p.Kill()
	}
	time.AfterFunc(2*time.Second, func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	return nil
}
