//go:build !linux

package gitserver

import "syscall"

// daemonAttr puts the test's git daemon in a process group of its own; no
// parent-death signal outside Linux, so the test's cleanup kills the group.
func daemonAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
