//go:build !linux

package remote

import "syscall"

// diesWithUs is the process attributes of a git this package starts. No
// parent-death signal here: its process group (group) is what a stop
// ends.
func diesWithUs(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group}
}
