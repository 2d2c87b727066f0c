package proc

import (
	"os"
	"strconv"
	"strings"
)

// Stat reads a process's state (R, S, Z, ...) and parent from
// /proc/PID/stat; ok is false when the process is gone (or there is no
// /proc).
func Stat(pid int) (state string, ppid int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	// After the parenthesised name (which may hold anything): state, ppid.
	i := strings.LastIndexByte(string(data), ')')
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
