// Command wiggum makes AI coding-agent loops safe: an exclusive agent lock,
// provably safe rollback, fast agent and git hooks, and a loop over a plan.
//
// Every start of this binary is on a hot path (a hook runs around each
// tool call, and the loop starts it twice an iteration), so the runtime is
// told not to size GOMAXPROCS from the cgroup CPU limit: that probe reads
// /proc/self/cgroup and mountinfo at every start and re-reads them in the
// background, and wiggum's work is processes and I/O, not CPU (serial runs
// and supervisors use one P; parallel runs wait on their agents).
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"os"

	// Answers `wiggum checkpoint` and `wiggum rollback` from its init, the
	// same way (see its package doc).
	_ "github.com/wiggum-dev/wiggum/internal/checkpointentry"
	"github.com/wiggum-dev/wiggum/internal/cli"
	// Answers `wiggum hook AGENT` from its init, before the CLI's packages
	// are initialised (see its package doc); cli imports it too, this
	// import says why it matters here.
	_ "github.com/wiggum-dev/wiggum/internal/hookentry"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
