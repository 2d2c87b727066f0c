package proc

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// The supervisor hears of wiggum's death as SIGTERM, which it catches and
// turns into a group kill; SIGKILL would leave the group running.
func supervisorAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// becomeSubreaper makes orphaned descendants of the command re-parent to the
// supervisor, so it can reap them and know when the tree is gone.
func becomeSubreaper() {
	const prSetChildSubreaper = 36
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}

// children lists the supervisor's live children: the command and whatever
// was re-parented to it. Zombies are left out; Wait4 reaps them.
func children() []int {
	self := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the parenthesised name (which may hold anything): state, ppid.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) >= 2 && f[1] == self && f[0] != "Z" && f[0] != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}
