//go:build !linux

package proc

import "syscall"

func supervisorAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func childAttr() (*syscall.SysProcAttr, func()) {
	return &syscall.SysProcAttr{Setpgid: true}, func() {}
}

func childAttrOn(int) (*syscall.SysProcAttr, func()) { return childAttr() }

func becomeSubreaper() {}

// children is empty without a subreaper: nothing is re-parented to the
// supervisor.
func children() []int { return nil }

// pooling: no SOCK_SEQPACKET here; every command gets its own supervisor.
const pooling = false

func socketpair() ([2]int, error) { return [2]int{}, syscall.ENOTSUP }
