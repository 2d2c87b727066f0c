package guard

import "strings"

// The git subcommands that run shell commands they are given: submodule
// foreach CMD, bisect run CMD, rebase --exec CMD. The command is checked
// like any other.
func (w *walk) gitRunsCode(sub string, rest []string) {
	switch {
	case sub == "bisect" && len(rest) > 1 && rest[0] == "run":
		w.command(nil, rest[1:], 1) // run as an argument vector, not through a shell
	case sub == "rebase":
		for i, a := range rest {
			if code, ok := strings.CutPrefix(a, "--exec="); ok {
				w.g.script(code, w.depth+1)
			} else if (a == "-x" || a == "--exec") && i+1 < len(rest) {
				w.g.script(rest[i+1], w.depth+1)
			}
		}
	}
}

// gitAlias checks what a git alias would run: "!CODE" is shell code,
// anything else a git command line.
func (w *walk) gitAlias(value string) {
	if code, ok := strings.CutPrefix(value, "!"); ok {
		w.g.script(code, w.depth+1)
		return
	}
	w.g.script("git "+value, w.depth+1)
}
