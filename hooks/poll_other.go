//go:build unix && !linux

package hooks

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// pollWait waits up to wait for pfd's events with poll(2).
func pollWait(pfd *unix.PollFd, wait time.Duration) unix.Errno {
	ms := int((wait + time.Millisecond - 1) / time.Millisecond)
	fds := []unix.PollFd{*pfd}
	_, err := unix.Poll(fds, ms)
	pfd.Revents = fds[0].Revents
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}
