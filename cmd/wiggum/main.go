// Command wiggum makes AI coding-agent loops safe: an exclusive agent lock,
// provably safe rollback, fast agent and git hooks, and a loop over a plan.
package main

import (
	"os"

	"github.com/wiggum-dev/wiggum/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
