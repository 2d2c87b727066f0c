package hooks

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollWait waits up to wait for pfd's events: ppoll(2) as a raw system
// call, so the runtime does not hand this thread's P to a new thread while
// it waits (a payload larger than the pipe's buffer is waited for while the
// agent writes the rest) - a thread the hook would otherwise start on every
// such call. A raw call holds its P: the runtime's preemption signal ends it
// with EINTR, and the caller, back in Go code, can be preempted.
func pollWait(pfd *unix.PollFd, wait time.Duration) unix.Errno {
	ts := unix.NsecToTimespec(int64(wait))
	_, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return e
}
