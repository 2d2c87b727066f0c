//go:build !linux

package git

import (
	"os"
	"os/exec"
	"syscall"
)

func procAttr() *syscall.SysProcAttr { return nil }

func detach(*exec.Cmd) {}

func stopGroup(p *os.Process) error { return p.Kill() }
