// Package agent runs one coding-agent invocation: the prompt on stdin, the
// whole process group bounded by a wall-clock and an idle timeout, output
// drained without deadlock however large, and - for claude's stream-json -
// live progress, cost, tokens and usage-limit detection.
package agent

import (
	"fmt"
	"sort"
	"strings"
)

// Profile is how to start one agent non-interactively with the prompt on stdin.
type Profile struct {
	Name string
	Argv []string
	// Events is set when the agent prints a JSON event stream wiggum reads
	// (tool calls, tokens), so a run that never got going can be told from
	// one that failed at its work.
	Events bool
	// Env is added to the agent's environment.
	Env []string
}

// builtins are the non-interactive invocations of each agent, checked
// against their documentation (late 2026). Every one reads the prompt from
// stdin and may edit files and run commands without asking: a loop has
// nobody to answer a permission prompt, and wiggum's lock, checkpoint and
// hooks are the guard rails.
var builtins = map[string]Profile{
	// -p is print (headless) mode and reads the prompt from stdin;
	// stream-json needs --verbose in print mode.
	"claude": {Name: "claude", Events: true, Argv: []string{
		"claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}},
	// `codex exec -` reads the prompt from stdin; workspace-write lets it
	// edit the repository; --json is its event stream (tool calls,
	// tokens, errors). Codex runs a project's .codex/hooks.json only in a
	// trusted project (--trust records the trust in ~/.codex/config.toml)
	// and only hooks the user approved: --dangerously-bypass-hook-trust
	// runs them unapproved, which Preflight allows only when every
	// project hook is wiggum's own.
	"codex": {Name: "codex", Events: true, Argv: []string{"codex", "exec", "--json", "--sandbox", "workspace-write",
		"--trust", "--dangerously-bypass-hook-trust", "-"}},
	// --execute with no message argument reads the message from stdin.
	"amp": {Name: "amp", Argv: []string{"amp", "--execute", "--dangerously-allow-all"}},
	// Piped stdin puts gemini in headless mode; yolo approves tool calls.
	// Headless gemini exits 55 in a folder the user never trusted, and
	// ignores the folder's .gemini/settings.json (wiggum's hooks) there.
	// GEMINI_CLI_TRUST_WORKSPACE=true trusts it for this run only; its
	// --skip-trust flag is not enough, as it is read after the settings.
	"gemini": {Name: "gemini", Events: true, Argv: []string{"gemini", "--approval-mode=yolo", "--output-format", "stream-json"},
		Env: []string{"GEMINI_CLI_TRUST_WORKSPACE=true"}},
	// `opencode run` reads a piped stdin to EOF as the message.
	"opencode": {Name: "opencode", Argv: []string{"opencode", "run"}},
}

// Names lists the built-in agents.
func Names() []string {
	var out []string
	for n := range builtins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Builtin returns the profile of a built-in agent.
func Builtin(name string) (Profile, error) {
	p, ok := builtins[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown agent %q (built in: %s; or use --agent-cmd)", name, strings.Join(Names(), ", "))
	}
	p.Argv = append([]string(nil), p.Argv...)
	p.Env = append([]string(nil), p.Env...)
	return p, nil
}

// Custom runs a user's command line through sh, so pipes, variables and
// quoting mean what they mean in a shell. A line of plain words (no quotes,
// variables, globs or operators) means the same without a shell, so it runs
// directly and saves every iteration a process. Stream-json output (a
// wrapped claude) is recognised line by line like the built-in's.
func Custom(cmdline string) (Profile, error) {
	if strings.TrimSpace(cmdline) == "" {
		return Profile{}, fmt.Errorf("--agent-cmd is empty")
	}
	if plainWords(cmdline) {
		return Profile{Name: "custom", Argv: strings.Fields(cmdline)}, nil
	}
	return Profile{Name: "custom", Argv: []string{"sh", "-c", cmdline}}, nil
}

// plainWords reports whether a shell would split cmdline on blanks and do
// nothing else to it.
func plainWords(cmdline string) bool {
	fields := strings.Fields(cmdline)
	if len(fields) == 0 || strings.Contains(fields[0], "=") {
		return false
	}
	for _, r := range cmdline {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune(" \t_./:,@%+=-", r):
		default:
			return false
		}
	}
	return true
}
