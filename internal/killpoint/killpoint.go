// Package killpoint lets crash tests SIGKILL wiggum at a named step between
// two durable effects (a merge's tree moved but not its branch, a story
// committed but not journaled): with WIGGUM_TEST_KILLPOINT=name in its
// environment the process kills itself the first time it reaches
// At(name). Without the variable - always, outside tests - At does nothing.
package killpoint

import (
	"os"
	"syscall"
)

// Env names the variable.
const Env = "WIGGUM_TEST_KILLPOINT"

var target = os.Getenv(Env)

// At kills the process with SIGKILL when name is the configured point.
func At(name string) {
	if target != "" && target == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
