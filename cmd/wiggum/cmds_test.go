package main

import (
	"errors"
	"os/exec"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

type scriptCmd = func(ts *testscript.TestScript, neg bool, args []string)

// scriptCmds are extra testscript commands shared by all scripts. Areas add
// theirs to extraCmds from their own files.
func scriptCmds() map[string]scriptCmd {
	m := map[string]scriptCmd{"exits": exits}
	for k, v := range extraCmds {
		m[k] = v
	}
	return m
}

var extraCmds = map[string]scriptCmd{}

// exits N PROG ARGS... runs PROG and requires exit code N; stdout and
// stderr are kept for the following stdout/stderr checks.
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Logf("[stdout]\n%s[stderr]\n%s", ts.ReadFile("stdout"), ts.ReadFile("stderr"))
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}
