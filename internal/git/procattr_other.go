//go:build !linux

package git

import (
	"os/exec"
	"syscall"
)

func procAttr() *syscall.SysProcAttr { return nil }

func detach(*exec.Cmd) {}
