package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	extraCmds["signalrun"] = signalRun
	extraCmds["pidgone"] = pidGone
}

// scriptEnv is the environment testscript gives exec'd commands.
var scriptEnvNames = []string{"PATH", "HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME",
	"GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "TERM", "WORK", "TMPDIR"}

// signalRun starts a program, waits until a file exists (the agent is
// running), sends it a signal and checks its exit code:
//
//	signalrun INT|TERM|KILL WAITFILE CODE PROG ARGS...
//
// A process killed by a signal has CODE 128+signal, as a shell reports it.
func signalRun(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 {
		ts.Fatalf("usage: signalrun INT|TERM|KILL WAITFILE CODE PROG ARGS...")
	}
	sig := map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL}[args[0]]
	if sig == 0 {
		ts.Fatalf("unknown signal %s", args[0])
	}
	want, err := strconv.Atoi(args[2])
	ts.Check(err)
	prog := lookPath(ts, args[3])
	cmd := exec.Command(prog, args[4:]...)
	cmd.Dir = ts.Getenv("PWD")
	if cmd.Dir == "" {
		cmd.Dir = ts.MkAbs(".")
	}
	for _, n := range scriptEnvNames {
		cmd.Env = append(cmd.Env, n+"="+ts.Getenv(n))
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ts.Check(cmd.Start())
	wait := ts.MkAbs(args[1])
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(wait); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			ts.Fatalf("%s never appeared; output:\n%s\n%s", args[1], stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Check(cmd.Process.Signal(sig))
	err = cmd.Wait()
	ts.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		ts.Fatalf("wait: %v", err)
	}
	if code != want {
		ts.Fatalf("exit code %d, want %d", code, want)
	}
	ts.Check(os.WriteFile(filepath.Join(ts.Getenv("WORK"), "signalrun.stdout"), []byte(stdout.String()), 0o644))
	ts.Check(os.WriteFile(filepath.Join(ts.Getenv("WORK"), "signalrun.stderr"), []byte(stderr.String()), 0o644))
}

func lookPath(ts *testscript.TestScript, name string) string {
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	ts.Fatalf("%s not found in PATH", name)
	return ""
}

// pidGone checks that the process whose pid is in FILE no longer runs,
// waiting up to TIMEOUT (default: not at all) for it to go.
//
//	pidgone FILE [TIMEOUT]
func pidGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: pidgone FILE [TIMEOUT]")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	ts.Check(err)
	var wait time.Duration
	if len(args) == 2 {
		wait, err = time.ParseDuration(args[1])
		ts.Check(err)
	}
	deadline := time.Now().Add(wait)
	for {
		if gone(pid) {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			ts.Fatalf("process %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func gone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return strings.Contains(string(stat), ") Z ")
}
