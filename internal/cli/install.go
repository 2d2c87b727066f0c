package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/install"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
)

// installTargets are the flags choosing what install and uninstall touch.
type installTargets struct {
	Claude bool `help:"Claude Code: .claude/settings.json (~/.claude/settings.json, or $CLAUDE_CONFIG_DIR/settings.json, with --user)."`
	Codex  bool `help:"Codex: .codex/hooks.json."`
	Gemini bool `help:"Gemini CLI: .gemini/settings.json."`
	Cursor bool `help:"Cursor: .cursor/hooks.json."`
	Git    bool `help:"Git hooks: post-commit (commit journal) and pre-push (no push during a session)."`
	User   bool `help:"Agent settings in the home directory instead of the project."`
}

func (t *installTargets) agents() []*install.Agent {
	var out []*install.Agent
	for _, pick := range []struct {
		on   bool
		name string
	}{{t.Claude, "claude"}, {t.Codex, "codex"}, {t.Gemini, "gemini"}, {t.Cursor, "cursor"}} {
		if pick.on {
			out = append(out, install.Agents[pick.name])
		}
	}
	return out
}

// settingsPath is where an agent's settings live for this command.
func (t *installTargets) settingsPath(g *Globals, repo *git.Repo, a *install.Agent) (string, error) {
	if t.User {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", badinput.Errorf("install: no home directory for --user: %v", err)
		}
		if a.Name == "claude" || a.Name == "gemini" {
			// Where the client reads its user settings: under
			// CLAUDE_CONFIG_DIR or GEMINI_CLI_HOME when set.
			return filepath.Join(agent.UserDir(a.Name, home), filepath.Base(a.File)), nil
		}
		return filepath.Join(home, a.File), nil
	}
	return filepath.Join(repo.Root, a.File), nil
}

// InstallCmd is `wiggum install`.
type InstallCmd struct {
	installTargets
	Guard       string   `enum:"session,always" default:"session" help:"When the command guard is on: session (while a wiggum session holds the lock) or always."`
	RequireRead bool     `name:"require-read" help:"Deny editing an existing file the agent has not read in this conversation."`
	GuardAllow  []string `name:"guard-allow" sep:"none" placeholder:"PATTERN" help:"Let the agent run a command the guard would deny when its words match PATTERN (* any characters within a word but a ':' - a refspec's destination is its own - ** any at all, ? one), e.g. 'git push origin feature/*'. Repeatable. (A push also needs WIGGUM_ALLOW_PUSH=1 for the run: the session's git refuses it too.)"`
	Force       bool     `help:"Install git hooks even where core.hooksPath points (existing hooks are chained)."`
	Migrate     bool     `help:"Replace the bash ralph loop's .agents/ralph/hooks/*.sh entries with wiggum's."`
}

// Help is shown by `wiggum install --help`.
func (c *InstallCmd) Help() string {
	return `Registers 'wiggum hook ...' with agents and git. Settings are merged: every
unrelated key and hook stays, wiggum's own entries are recognised by their
command, and running install twice changes nothing. Files are written
atomically and the change is printed as a diff. Without a target flag,
--claude and --git are installed.

Git hooks go where git runs them (the shared hooks directory, so linked
worktrees are covered - not with a relative core.hooksPath, which each
worktree reads as its own directory). A hook that is already there is kept as NAME.old and
run first (a shell script under its own name, as git ran it). A core.hooksPath set by another tool, or a .git/hooks linked into the
working tree (where the hooks would be committed), is refused without --force.

  wiggum install                      # Claude Code + git hooks
  wiggum install --claude --user      # ~/.claude/settings.json
  wiggum install --codex --gemini --cursor
  wiggum install --claude --guard always --require-read
  wiggum install --claude --migrate   # replace .agents/ralph/hooks/*.sh entries`
}

// Run installs.
func (c *InstallCmd) Run(ctx context.Context, g *Globals) error {
	if !c.Claude && !c.Codex && !c.Gemini && !c.Cursor && !c.Git {
		c.Claude, c.Git = true, !c.User
	}
	repo, err := openRepo(ctx, g, c.User && !c.Git)
	if err != nil {
		return err
	}
	if c.Git {
		// What would refuse the git hooks is checked before anything is
		// written: the refusal is bad input and says nothing changed.
		if err := install.CheckGit(ctx, repo, c.Force); err != nil {
			return badinput.Wrap(fmt.Errorf("install git hooks: %w", err))
		}
	}
	opts := install.AgentOptions{Guard: c.Guard, RequireRead: c.RequireRead, Migrate: c.Migrate, Allow: c.GuardAllow}
	changed := false
	agents := c.agents()
	if len(agents) > 0 {
		if n := agent.HookNote(); n != "" {
			defer fmt.Fprintln(g.stdout, "note: "+n)
		}
	}
	home, _ := os.UserHomeDir()
	for _, a := range agents {
		path, err := c.settingsPath(g, repo, a)
		if err != nil {
			return err
		}
		ch, err := install.InstallAgent(a, path, opts)
		if err != nil {
			return badinput.Wrap(fmt.Errorf("install %s: %w", a.Name, err))
		}
		changed = report(g, ch) || changed
		if ch != nil {
			for _, n := range installNotes[a.Name] {
				fmt.Fprintln(g.stdout, "note: "+n)
			}
		}
		if off := agent.HooksOff(a.Name, repo.Root, home); off != "" {
			fmt.Fprintf(g.stdout, "note: %s's own settings turn these hooks off: %s; 'wiggum run --agent %s' refuses to start until that is undone\n", a.Name, off, a.Name)
		}
		if twice := agent.HooksTwice(a.Name, repo.Root, home); twice != "" {
			fmt.Fprintln(g.stdout, "note: "+twice)
		}
	}
	if c.Git {
		chs, err := install.InstallGit(ctx, repo, c.Force)
		for i := range chs {
			changed = report(g, &chs[i]) || changed
		}
		if e := install.HooksPathShared(ctx, repo); len(chs) > 0 && e != nil {
			fmt.Fprintf(g.stdout, "note: core.hooksPath %s is set in your %s git configuration: every repository on this machine runs these hooks now (a repository wiggum never ran in gets nothing written; a push is refused only during a wiggum session there). 'wiggum uninstall --git' takes them out again\n", e.Path, e.Scope)
		}
		if err == nil {
			for _, path := range install.RunByOtherName(ctx, repo, c.Force) {
				fmt.Fprintf(g.stdout, "note: %s, the hook that was there before, is run under that name, and it reads the name it is called by: if it picks what to run by it (a dispatcher), it finds nothing now. Make it call its target by name, or keep it as a shell script (run under its own name)\n", path)
			}
		}
		if hp := install.HooksPathRelative(ctx, repo); hp != "" && err == nil {
			// Git reads a relative core.hooksPath in the worktree it
			// runs in: the hooks written here are the main tree's only,
			// which the help's "linked worktrees are covered" hid.
			fmt.Fprintf(g.stdout, "note: core.hooksPath %s is relative, so git runs the hooks in each worktree's own %s: a linked worktree (git worktree add, a Claude Code subagent's isolation worktree) runs none of wiggum's git hooks - there a session's push is refused only by 'wiggum run''s git shim, not under 'wiggum lock', and commits are not journaled. An absolute core.hooksPath covers them all\n", hp, hp)
		}
		if err != nil {
			return badinput.Wrap(fmt.Errorf("install git hooks: %w", err))
		}
	}
	if !changed {
		fmt.Fprintln(g.stdout, "wiggum install: already installed; nothing changed")
	}
	return nil
}

// UninstallCmd is `wiggum uninstall`.
type UninstallCmd struct {
	installTargets
}

// Help is shown by `wiggum uninstall --help`.
func (c *UninstallCmd) Help() string {
	return `Removes exactly what 'wiggum install' added: wiggum's entries in agent settings
(every other byte stays; a settings file install created, left empty, is
removed - one you had, even {}, stays) and
wiggum's git hooks, putting back any hook install had kept as NAME.old.
Without a target flag, every agent and git are cleaned.

  wiggum uninstall
  wiggum uninstall --claude --user`
}

// Run uninstalls.
func (c *UninstallCmd) Run(ctx context.Context, g *Globals) error {
	if !c.Claude && !c.Codex && !c.Gemini && !c.Cursor && !c.Git {
		c.Claude, c.Codex, c.Gemini, c.Cursor, c.Git = true, true, true, true, !c.User
	}
	repo, err := openRepo(ctx, g, c.User && !c.Git)
	if err != nil {
		return err
	}
	changed := false
	for _, a := range c.agents() {
		path, err := c.settingsPath(g, repo, a)
		if err != nil {
			return err
		}
		ch, err := install.UninstallAgent(a, path)
		if err != nil {
			return badinput.Wrap(fmt.Errorf("uninstall %s: %w", a.Name, err))
		}
		changed = report(g, ch) || changed
	}
	if c.Git {
		chs, err := install.UninstallGit(ctx, repo)
		for i := range chs {
			changed = report(g, &chs[i]) || changed
		}
		if err != nil {
			return err
		}
	}
	if !changed {
		fmt.Fprintln(g.stdout, "wiggum uninstall: nothing of wiggum's found; nothing changed")
	}
	return nil
}

// openRepo finds the working tree; user-level agent settings need none.
func openRepo(ctx context.Context, g *Globals, optional bool) (*git.Repo, error) {
	repo, err := git.Open(ctx, g.WorkDir())
	if err != nil {
		if optional {
			return &git.Repo{Root: g.WorkDir()}, nil
		}
		return nil, badinput.Wrap(err)
	}
	return repo, nil
}

// report prints a change as a diff, paths relative to the working
// directory when that is shorter.
func report(g *Globals, ch *install.Change) bool {
	if ch == nil {
		return false
	}
	shown := ch.Path
	// A file outside it (the user's settings) keeps its own path.
	if rel, err := filepath.Rel(g.WorkDir(), ch.Path); err == nil && len(rel) < len(shown) && !strings.HasPrefix(rel, "..") {
		shown = rel
	}
	c := *ch
	c.Path = shown
	fmt.Fprint(g.stdout, c.Diff())
	return true
}

// installNotes are what a user must know for the hooks to run at all.
var installNotes = map[string][]string{
	"codex": {
		"Codex runs a project's .codex/hooks.json only in a trusted project, and only hooks you approved (/hooks in codex); unapproved hooks are skipped without a word",
		"'wiggum run --agent codex' passes --trust and --dangerously-bypass-hook-trust itself (only while every hook in .codex/hooks.json is wiggum's); running codex yourself, trust the project and approve the hooks once",
		"what codex types into a terminal session it left running (write_stdin) reaches no hook, so a shell opened there runs commands the guard never sees: 'wiggum run --agent codex' passes --disable unified_exec_tty; running codex yourself, pass it too or set unified_exec_tty = false under [features] in ~/.codex/config.toml",
	},
	"gemini": {
		"headless gemini refuses a folder it was never told to trust (exit 55) and ignores its .gemini/settings.json (these hooks) there, even with --skip-trust; 'wiggum run --agent gemini' sets GEMINI_CLI_TRUST_WORKSPACE=true for its run, running gemini yourself trust the folder (/permissions) or set that variable",
		"gemini turns git hooks off in its shell (core.hooksPath is emptied), so wiggum's git hooks do not run for the agent's git commands; the BeforeTool guard is what stops a push",
	},
}
