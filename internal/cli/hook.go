package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/wiggum-dev/wiggum/hooks"
	"github.com/wiggum-dev/wiggum/internal/hookentry"
)

// HookCmd is `wiggum hook AGENT|git NAME`.
type HookCmd struct {
	Claude HookAgentCmd `cmd:"" help:"Answer one Claude Code hook event (JSON on stdin)."`
	Codex  HookAgentCmd `cmd:"" help:"Answer one Codex hook event (JSON on stdin)."`
	Gemini HookAgentCmd `cmd:"" help:"Answer one Gemini CLI hook event (JSON on stdin)."`
	Cursor HookAgentCmd `cmd:"" help:"Answer one Cursor hook event (JSON on stdin)."`
	Git    HookGitCmd   `cmd:"" help:"Run one git hook (post-commit, post-merge, pre-push)."`
}

// Help is shown by `wiggum hook --help`.
func (c *HookCmd) Help() string {
	return `Agents and git call these; 'wiggum install' registers them. An agent hook reads
one event on stdin and always exits 0 with valid output, whatever it is given:
problems go to .ralph/wiggum/hook-debug.log (and stderr with -v).

  PreToolUse (BeforeTool, beforeShellExecution): while a wiggum session holds
    the lock, shell commands are parsed and destructive ones denied: git push,
    merges into main, reset --hard, clean -f, checkout/restore of the whole
    tree, branch -D, update-ref, commit --no-verify, touching .ralph/ state or
    refs/wiggum/, rm -rf of /, home or the working tree. What cannot be parsed
    is asked about.
  PostToolUse / PostToolUseFailure: a failing test run is logged for the
    loop's retry prompt and, inside a session whose policy is rollback, rolled
    back to the checkpoint (only when safe); the agent is told what happened.
  UserPromptSubmit: Claude Code's note that a command it ran in the
    background ended; a test run started there is judged as above.
  Stop: recorded for the loop; never blocks.

  echo '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push"},"cwd":"'$PWD'"}' \
    | wiggum hook claude --guard always
  wiggum hook git pre-push origin url`
}

// HookAgentCmd answers one agent event. Its flags are parsed by
// hookentry.Parse alone - the same parser that answers hooks before the CLI
// is initialised - so they are declared once, in hookentry.Flags.
type HookAgentCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"Hook flags, see above."`
}

// Help lists the flags from the table the parser reads.
func (c *HookAgentCmd) Help() string {
	var b strings.Builder
	b.WriteString("Hook flags (after the agent name; an unknown one is reported and ignored, never blocking the agent):\n")
	for _, f := range hookentry.Flags {
		fmt.Fprintf(&b, "  %-28s %s\n", f.Usage, f.Help)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Run answers the event. One command type serves every agent; the agent is
// the subcommand's name ("hook claude").
func (c *HookAgentCmd) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	agent := ""
	if words := strings.Fields(k.Command()); len(words) > 1 {
		agent = words[1]
	}
	h, _ := hookentry.Parse(append([]string{"hook", agent}, c.Args...))
	if g.Verbose {
		h.Opts.Verbose = g.stderr
	}
	h.Run(os.Stdin, g.stdout, g.stderr)
	return nil
}

// HookGitCmd runs one git hook.
type HookGitCmd struct {
	Name string   `arg:"" help:"The git hook: post-commit, post-merge or pre-push."`
	Args []string `arg:"" optional:"" passthrough:"" help:"What git passed to the hook."`
}

// Run runs the git hook. Only pre-push can fail, and only to refuse a push
// during a session; anything else wiggum cannot do is not git's problem.
func (c *HookGitCmd) Run(ctx context.Context, g *Globals) error {
	if c.Name == "pre-push" {
		// git writes the refs being pushed on stdin; drain it so git never
		// sees a broken pipe.
		defer io.Copy(io.Discard, os.Stdin)
	}
	err := hooks.GitHook(ctx, g.WorkDir(), c.Name)
	if err == nil {
		return nil
	}
	var refused *hooks.PushRefusedError
	if errors.As(err, &refused) {
		return err
	}
	if g.Verbose {
		g.Log().Warn("git hook", "name", c.Name, "err", err)
	}
	return nil
}
