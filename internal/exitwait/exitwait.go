// Package exitwait waits for a child process to end with the waiting
// goroutine parked in the runtime's poller, not a thread blocked in
// waitid: while any thread sits in a blocking system call the Go runtime's
// monitor thread wakes every 20 µs to 10 ms to check on it - tens of
// context switches for each git command a loop iteration runs, and for
// every second of every agent a supervisor waits for.
package exitwait

import "os"

// For returns once p has exited, without reaping it: cmd.Wait (or
// p.Wait) then reaps it at once. Where the poller cannot watch a process
// (no pidfd: not Linux, or a kernel before 5.3), it returns at once and the
// Wait that follows blocks as before.
func For(p *os.Process) {
	if p != nil {
		await(p.Pid)
	}
}
