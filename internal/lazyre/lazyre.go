// Package lazyre compiles a regular expression on first use, so that a hook
// call, which starts wiggum hundreds of times an hour, never pays package
// initialisation for patterns it does not run.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function yielding expr compiled once; it panics on first use
// when expr is invalid, like regexp.MustCompile.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
