// Command wiggum makes AI coding-agent loops safe: an exclusive agent lock,
// provably safe rollback, fast agent and git hooks, and a loop over a plan.
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
