//go:build !linux

package proc

import "syscall"

func supervisorAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func childAttr() (*syscall.SysProcAttr, func()) {
	return &syscall.SysProcAttr{Setpgid: true}, func() {}
}

func becomeSubreaper() {}

// children is empty without a subreaper: nothing is re-parented to the
// supervisor.
func children() []int { return nil }
