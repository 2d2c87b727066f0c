// Package agent runs one coding-agent invocation: the prompt on stdin, the
// whole process group bounded by a wall-clock and an idle timeout, output
// drained without deadlock however large, and - for claude's stream-json -
// live progress, cost, tokens and usage-limit detection.
package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
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
	// StartAlone: this process starts one such agent at a time - the next
	// once the last has printed its first line, exited, or had
	// startAloneFor - because starting writes shared state in the user's
	// home (see codex's profile).
	StartAlone bool
	// Cost: the agent reports what each run cost (claude's result
	// event); --max-cost and --max-story-cost count nothing else.
	Cost bool
}

// builtins are the non-interactive invocations of each agent, checked
// against their documentation (late 2026). Every one reads the prompt from
// stdin and may edit files and run commands without asking: a loop has
// nobody to answer a permission prompt, and wiggum's lock, checkpoint and
// hooks are the guard rails.
var builtins = map[string]Profile{
	// -p is print (headless) mode and reads the prompt from stdin;
	// stream-json needs --verbose in print mode.
	"claude": {Name: "claude", Events: true, Cost: true, Argv: []string{
		"claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}},
	// `codex exec -` reads the prompt from stdin; workspace-write lets it
	// edit the repository; --json is its event stream (tool calls,
	// tokens, errors). Codex runs a project's .codex/hooks.json only in a
	// trusted project (--trust records the trust in ~/.codex/config.toml)
	// and only hooks the user approved: --dangerously-bypass-hook-trust
	// runs them unapproved, which Preflight allows only when every
	// project hook is wiggum's own. Terminal sessions are off
	// (unified_exec_tty): what codex's write_stdin types into a shell
	// left running in one reaches no hook (codex 0.171 runs none for
	// it), so a command typed there would pass the guard unseen; without
	// a terminal, a command codex leaves running has no stdin to type
	// into. Its shell is no login shell (allow_login_shell): a login
	// shell's /etc/profile sets PATH afresh, which drops wiggum's git
	// shim (hooks.GitShim) from the front of it.
	// Starting, codex writes its home directory (~/.codex): --trust
	// records the project in config.toml, and its state database and
	// PATH-alias directory are set up under a lock; two started at once
	// by a parallel run's workers raced there ("could not create PATH
	// aliases: operation would block", "thread ... not found"), and one
	// of them could be answered as if its conversation were further on -
	// its story ticked with no work done. They start one at a time.
	"codex": {Name: "codex", Events: true, StartAlone: true, Argv: []string{"codex", "exec", "--json", "--sandbox", "workspace-write",
		"--trust", "--dangerously-bypass-hook-trust", "--disable", codexTTYFeature, "-c", codexLoginShell + "=false", "-"}},
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

// reserved are, per built-in agent, the flags of its command line that
// make it run headless and print what wiggum reads: extra arguments may
// not give them again (a second --output-format would leave wiggum reading
// text as events; codex refuses a repeated flag outright).
var reserved = map[string][]string{
	"claude":   {"-p", "--print", "--output-format", "--input-format"},
	"codex":    {"--json", "--sandbox", "-s", "--trust", "--dangerously-bypass-hook-trust"},
	"gemini":   {"-o", "--output-format", "--approval-mode", "-y", "--yolo", "-p", "--prompt", "-i", "--prompt-interactive"},
	"amp":      {"-x", "--execute", "--dangerously-allow-all"},
	"opencode": {},
}

// codexTTYFeature is codex's feature flag for terminal sessions
// (exec_command with tty, then write_stdin), which wiggum's codex profile
// turns off.
const codexTTYFeature = "unified_exec_tty"

// codexLoginShell is codex's setting for running commands in a login
// shell, which wiggum's codex profile turns off.
const codexLoginShell = "allow_login_shell"

// locked are, per built-in agent, the settings its profile sets that no
// extra argument may name, with why.
var locked = map[string][]struct{ name, why string }{
	"codex": {
		{codexTTYFeature, "wiggum turns codex's terminal sessions (" + codexTTYFeature + ") off: what codex's write_stdin types into one reaches no hook, so wiggum's guard would never see it"},
		{codexLoginShell, "wiggum runs codex's commands in no login shell (" + codexLoginShell + "=false): a login shell's profile sets PATH afresh and drops wiggum's git shim, which stops a push git runs no hooks for"},
	},
}

// WithArgs returns the built-in profile p with extra arguments on its
// command line - after its own flags, before codex's "-" (the prompt read
// from stdin) - and, when model is set, the agent's --model flag. An
// argument that sets one of the flags wiggum relies on is refused.
func WithArgs(p Profile, model string, args []string) (Profile, error) {
	res, ok := reserved[p.Name]
	if !ok {
		return p, fmt.Errorf("extra arguments apply to built-in agents only")
	}
	if p.Name == "claude" {
		if err := claudeHooksOff(args); err != nil {
			return p, err
		}
		if err := claudeOwnTree(args); err != nil {
			return p, err
		}
	}
	for _, a := range args {
		for _, l := range locked[p.Name] {
			if strings.Contains(a, l.name) {
				return p, fmt.Errorf("--agent-arg %s: %s", a, l.why)
			}
		}
		for _, r := range res {
			if a == r || strings.HasPrefix(a, r+"=") {
				return p, fmt.Errorf("--agent-arg %s: wiggum sets %s itself to run %s headless and read its output; for another command line use --agent-cmd", a, r, p.Name)
			}
		}
	}
	if model != "" {
		if p.Name == "amp" {
			return p, fmt.Errorf("--model: amp has no model flag (it picks its model by mode); use --agent-arg")
		}
		args = append([]string{"--model", model}, args...)
	}
	if len(args) == 0 {
		return p, nil
	}
	argv := append([]string(nil), p.Argv...)
	tail := []string(nil)
	if argv[len(argv)-1] == "-" {
		argv, tail = argv[:len(argv)-1], []string{"-"}
	}
	p.Argv = append(append(argv, args...), tail...)
	return p, nil
}

// claudeHooksOff refuses claude's flags that turn its hooks off - and
// with them wiggum's guard and test rollbacks - before the agent starts:
// --bare, --setting-sources without project (where wiggum run keeps its
// hooks, .claude/settings.json), --settings with disableAllHooks. Seen
// only once the agent ran its first command unguarded, too late for what
// that command did (a branch force-deleted).
func claudeHooksOff(args []string) error {
	const why = "it turns claude's hooks off, and wiggum's guard and test rollbacks are those hooks"
	for i := 0; i < len(args); i++ {
		name, value, inline := strings.Cut(args[i], "=")
		if !inline && i+1 < len(args) && (name == "--setting-sources" || name == "--settings") {
			value = args[i+1]
			i++
		}
		switch name {
		case "--bare":
			return fmt.Errorf("--agent-arg %s: %s (claude --bare skips hooks)", args[i], why)
		case "--setting-sources":
			if !slices.Contains(strings.Split(strings.ReplaceAll(value, " ", ""), ","), "project") {
				return fmt.Errorf("--agent-arg %s %s: %s (without the project source claude does not read .claude/settings.json, where wiggum's hooks are); keep project in the list", name, value, why)
			}
		case "--settings":
			data := []byte(value)
			if t := strings.TrimSpace(value); !strings.HasPrefix(t, "{") {
				data, _ = os.ReadFile(t)
			}
			var settings struct {
				DisableAllHooks bool `json:"disableAllHooks"`
			}
			if json.Unmarshal(data, &settings) == nil && settings.DisableAllHooks {
				return fmt.Errorf("--agent-arg --settings %s: %s (disableAllHooks)", value, why)
			}
		}
	}
	return nil
}

// claudeOwnTree refuses claude's flags that make it work in a worktree of
// its own (--worktree, -w; --tmux, which needs one): wiggum owns the
// session's working tree - it checks out the story, rolls a failing test
// run back and commits the work there - so with the agent's work left in
// .claude/worktrees/, every story was ticked done with none of it, a
// failing test run there was ignored and the work stayed uncommitted.
func claudeOwnTree(args []string) error {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if name == "--worktree" || name == "-w" || name == "--tmux" {
			return fmt.Errorf("--agent-arg %s: it makes claude work in a worktree of its own, and wiggum checks out, rolls back and commits each story in the session's tree (for stories in worktrees of their own use 'wiggum run --workers N')", a)
		}
	}
	return nil
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
