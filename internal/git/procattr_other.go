//go:build !linux

package git

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
