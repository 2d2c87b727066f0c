//go:build !linux

package proc

import "syscall"

func supervisorAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func becomeSubreaper() {}
