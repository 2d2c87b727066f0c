package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// stoppedHolder is the testscript program `stoppedholder FILE CMD [ARGS...]`:
// a process of its own takes an flock on FILE and stops itself (SIGSTOP,
// as ^Z does), and CMD runs while it is stopped, its exit status passed on.
// The holder is resumed and killed after. In the holder role (env
// WIGGUM_TEST_HOLD=FILE) it takes the lock, says so and stops.
func stoppedHolder() {
	if path := os.Getenv("WIGGUM_TEST_HOLD"); path != "" {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("locked")
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		select {}
	}
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: stoppedholder FILE CMD [ARGS...]")
		os.Exit(2)
	}
	holder := exec.Command(os.Args[0])
	holder.Env = append(os.Environ(), "WIGGUM_TEST_HOLD="+os.Args[1])
	out, err := holder.StdoutPipe()
	if err == nil {
		err = holder.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		fmt.Fprintln(os.Stderr, "the holder did not take the lock")
		os.Exit(1)
	}
	// Stopped is a state the kernel shows, not a moment: wait for it.
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(holder.Process.Pid) + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) && stat[i+2] == 'T' {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	_ = holder.Process.Signal(syscall.SIGCONT)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		_ = holder.Process.Kill()
		_ = holder.Wait()
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
