// Package hookentry answers `wiggum hook AGENT [flags]` - the command agents
// run around every tool call - from its package init, before the packages a
// hook does not use are initialised, and exits. Any other command line
// returns from the init untouched and reaches the full CLI.
//
// # Why an init
//
// Go initialises a program's packages one at a time, each after the
// packages it imports: the specification (go.dev/ref/spec#Package_initialization)
// repeatedly picks the first package, in the list of all packages sorted
// by import path, whose imports are all initialised. cmd/wiggum imports
// this package, and this package imports only what a hook needs (hooks with
// the guard, the shell parser, git and the state files). So it becomes ready
// as soon as that closure is initialised, and its init runs before every
// package that needs more: kong and the command tree, the TUI (bubbletea,
// lipgloss), net and net/http, html/template, the OpenTelemetry SDK. A hook
// call never runs their inits nor touches their pages. (Packages that
// import little and sort early - charm's ANSI tables, go-runewidth, the
// crypto packages - still run first: among ready packages the order is the
// import path's.)
//
// # Keeping it so
//
//   - This package, and everything it imports, must not import the CLI's
//     heavy packages: TestHookEntryImports (cmd/wiggum) lists the closure
//     with `go list -deps` and fails when kong, charm, net, net/http,
//     html/template or the OpenTelemetry SDK enter it, and
//     TestHookRunsBeforeCLIInits checks the built binary with
//     GODEBUG=inittrace=1. A package on the hook path that wants one of
//     them takes it through an interface the CLI sets instead. (The agent
//     supervisor is not answered here for that reason: internal/proc
//     imports net, whose inits would cost every hook ~0.3 ms, and runs once
//     per worker, not per tool call.)
//   - Nothing a hook does may depend on an init outside this closure: here
//     such a package has not run yet.
//   - Only `wiggum hook AGENT [hook flags]` with a known agent (the form
//     `wiggum install` writes, any path to the binary) is answered here.
//     --help, `wiggum hook git ...`, global flags before `hook` and every
//     other command go on to the CLI, which parses hook flags with this
//     package's Parse so that both paths behave alike.
package hookentry

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/hooks"
)

func init() {
	// As the agent's git (a link named git the run puts first on its
	// PATH): refuse a push the session forbids, exec the real git.
	switch filepath.Base(os.Args[0]) {
	case hooks.GitShimName:
		os.Exit(hooks.GitShim(os.Args[1:], os.Stderr))
	case hooks.NoPushHelperName:
		os.Exit(hooks.NoPushHelper(os.Args[1:], os.Stderr))
	}
	if h, ok := Parse(os.Args[1:]); ok {
		os.Exit(h.Run(os.Stdin, os.Stdout, os.Stderr))
	}
}

// AgentHook is `wiggum hook AGENT [flags]` parsed. A flag it does not know
// is reported on stderr and otherwise ignored: a hook entry with a typo must
// not block the agent (Claude Code treats exit 2 as "block").
type AgentHook struct {
	Agent    string
	Opts     hooks.Options
	Warnings []string
}

// Flags are the flags of `wiggum hook AGENT`.
var Flags = []struct {
	Name, Usage, Help string
	Value             bool // takes a value
	set               func(h *AgentHook, v string)
}{
	{"--guard", "--guard=session|always|off", "When the command guard is on: while a wiggum session holds the lock (default), always, or off.", true,
		func(h *AgentHook, v string) { h.setGuard(v) }},
	{"--require-read", "--require-read", "Deny editing an existing file not read first in this conversation.", false,
		func(h *AgentHook, _ string) { h.Opts.RequireRead = true }},
	{"--allow", "--allow=PATTERN", "Allow a command the guard would deny when its words match PATTERN (* any characters within a word but a ':' - a refspec's destination is its own - ** any at all, ? one), e.g. 'git push origin feature/*'. Repeatable.", true,
		func(h *AgentHook, v string) { h.Opts.Allow = append(h.Opts.Allow, v) }},
	{"--verbose", "-v, --verbose", "Also write problems to stderr.", false,
		func(h *AgentHook, _ string) { h.Opts.Verbose = os.Stderr }},
}

// Parse reads args (the command line after the program name) as
// `hook AGENT [flags]`; ok is false for anything else, -h and --help
// included, which the full CLI answers.
func Parse(args []string) (h AgentHook, ok bool) {
	if len(args) < 2 || args[0] != "hook" {
		return AgentHook{}, false
	}
	h = AgentHook{Agent: args[1], Opts: hooks.Options{Guard: hooks.GuardSession}}
	if _, ok := hooks.Adapters[h.Agent]; !ok {
		return AgentHook{}, false
	}
next:
	for i := 2; i < len(args); i++ {
		a := args[i]
		if a == "-h" || a == "--help" {
			return AgentHook{}, false
		}
		if a == "-v" {
			a = "--verbose"
		}
		for _, f := range Flags {
			switch {
			case a == f.Name && !f.Value:
				f.set(&h, "")
				continue next
			case a == f.Name && i+1 < len(args):
				i++
				f.set(&h, args[i])
				continue next
			case f.Value && strings.HasPrefix(a, f.Name+"="):
				f.set(&h, strings.TrimPrefix(a, f.Name+"="))
				continue next
			}
		}
		h.Warnings = append(h.Warnings, fmt.Sprintf("unknown flag %q ignored", a))
	}
	return h, true
}

func (h *AgentHook) setGuard(v string) {
	switch v {
	case hooks.GuardSession, hooks.GuardAlways, hooks.GuardOff:
		h.Opts.Guard = v
	default:
		h.Warnings = append(h.Warnings, fmt.Sprintf("--guard %q is not session, always or off; using session", v))
	}
}

// Run answers one event from stdin; its exit code is always 0.
func (h AgentHook) Run(stdin io.Reader, stdout, stderr io.Writer) int {
	for _, w := range h.Warnings {
		fmt.Fprintf(stderr, "wiggum hook %s: %s\n", h.Agent, w)
	}
	if h.Opts.Verbose != nil {
		h.Opts.Verbose = stderr
	}
	hooks.Run(context.Background(), h.Agent, stdin, stdout, h.Opts)
	return 0
}
