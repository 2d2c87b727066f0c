package layout

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// PIDAlive reports whether pid names a live process in this PID namespace.
func PIDAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil {
		return errors.Is(err, syscall.EPERM)
	}
	return !zombie(pid)
}

// zombie reports whether pid has exited and waits for its parent to reap
// it (state Z): kill(pid, 0) still finds it, and a container's init that
// reaps late - or never - kept a killed wiggum "alive" to the next run,
// which then waited out its claims' leases instead of taking them over.
// Where /proc cannot tell, it is not one.
func zombie(pid int) bool { return procState(pid) == 'Z' }

// PIDStopped reports whether pid is stopped (state T: ^Z, SIGSTOP, or t:
// held by a debugger): alive, holding what it holds, and doing nothing
// until someone resumes it. Where /proc cannot tell, it is not.
func PIDStopped(pid int) bool {
	s := procState(pid)
	return s == 'T' || s == 't'
}

// procState is pid's state letter in /proc (0 when unknown).
func procState(pid int) byte {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return 0
	}
	return data[i+2]
}
