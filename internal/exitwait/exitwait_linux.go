package exitwait

import (
	"os"

	"golang.org/x/sys/unix"
)

// await parks until the process pid has exited: a pidfd is readable from
// the moment its process exits, and a non-blocking one goes to the
// runtime's poller. The pid is still ours to name: only the Wait that
// follows reaps it.
func await(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// Read calls the func again each time the poller says the pidfd is
	// readable, until it returns true; it returns an error at once (and
	// so does this) when the pidfd could not join the poller.
	_ = rc.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0
	})
}
