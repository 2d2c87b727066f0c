package layout

import (
	"errors"
	"syscall"
)

// PIDAlive reports whether pid names a live process in this PID namespace.
func PIDAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
