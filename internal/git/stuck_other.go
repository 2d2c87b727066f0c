//go:build !linux

package git

import "os"

// watchStuck is stuck_linux.go's: elsewhere what a process waits on is not
// looked at, and a git blocked on a FIFO waits until its context ends.
func watchStuck(*os.Process) func() *Stuck { return func() *Stuck { return nil } }
