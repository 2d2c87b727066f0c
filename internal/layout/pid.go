package layout

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
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
	state, _, ok := ProcStat(pid)
	if !ok || state == "" {
		return 0
	}
	return state[0]
}

// ProcStat reads a process's state (R, S, Z, ...) and parent from
// /proc/PID/stat; ok is false when the process is gone (or there is no
// /proc).
func ProcStat(pid int) (state string, ppid int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	// After the parenthesised name (which may hold spaces and
	// parentheses): state, ppid.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0], ppid, err == nil
}

// EachProcess calls fn with every process /proc lists: its pid, state
// and parent (ProcStat); none where there is no /proc.
func EachProcess(fn func(pid int, state string, ppid int)) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, ppid, ok := ProcStat(pid); ok {
			fn(pid, state, ppid)
		}
	}
}
