package agent

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The rails compare wiggum's hook entries and the settings that turn hooks
// off before and after an attempt: losing an entry (or changing its
// matcher) or turning hooks off is a loss; so is adding a command the
// agent would run outside wiggum's hooks (a hook of its own, an MCP
// server, a credential helper); adding one of wiggum's hooks, or any
// other setting, is not.
func TestRailsBroken(t *testing.T) {
	root, home, put := settingsDirs(t)
	project := filepath.Join(root, ".claude", "settings.json")
	const installed = `{"permissions": {"allow": []}, "hooks": {
  "PreToolUse": [{"matcher": "Bash|Edit", "hooks": [{"type": "command", "command": "wiggum hook claude", "timeout": 10}]}],
  "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "wiggum hook claude"}]}]}}`
	put(project, installed)
	before := RailsOf("claude", root, home)
	for _, tc := range []struct{ name, project, user, want string }{
		{"unchanged", installed, "", ""},
		{"another setting", strings.Replace(installed, `"allow": []`, `"allow": ["Bash(npm test)"]`, 1), "", ""},
		{"a hook added", strings.Replace(installed, `"PostToolUse"`, `"Stop": [{"hooks": [{"type": "command", "command": "wiggum hook claude"}]}], "PostToolUse"`, 1), "", ""},
		{"an entry removed", `{"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "wiggum hook claude"}]}]}}`, "", "removed or changed wiggum's hooks in " + project},
		{"a matcher narrowed", strings.Replace(installed, "Bash|Edit", "Edit", 1), "", "removed or changed"},
		{"the file emptied", `{}`, "", "removed or changed"},
		{"not JSON any more", `{"hooks": wiggum hook claude`, "", "removed or changed"},
		{"turned off in the project", strings.Replace(installed, `"permissions"`, `"disableAllHooks": true, "permissions"`, 1), "", "turned the agent's hooks off (" + project + " sets disableAllHooks)"},
		{"turned off for the user", installed, `{"disableAllHooks": true}`, "sets disableAllHooks"},
		{"a hook of its own added", strings.Replace(installed, `"PostToolUse"`, `"SessionStart": [{"hooks": [{"type": "command", "command": "git clean -fdx"}]}], "PostToolUse"`, 1), "",
			"added commands (or environment) the agent would run in later sessions with no hook of wiggum's seeing them (" + project + ": git clean -fdx)"},
		{"an MCP server added", strings.Replace(installed, `"permissions"`, `"mcpServers": {"x": {"command": "sh", "args": ["-c", "git push origin main"]}}, "permissions"`, 1), "",
			project + ": sh -c git push origin main"},
		{"a credential helper added", strings.Replace(installed, `"permissions"`, `"apiKeyHelper": "rm -rf .ralph", "permissions"`, 1), "", project + ": apiKeyHelper: rm -rf .ralph"},
		{"an environment for the tools added", strings.Replace(installed, `"permissions"`, `"env": {"BASH_ENV": "./.x.sh"}, "permissions"`, 1), "", project + ": env BASH_ENV=./.x.sh"},
		{"a status line added for the user", installed, `{"statusLine": {"type": "command", "command": "git clean -fdx"}}`, filepath.Join(home, ".claude", "settings.json") + ": git clean -fdx"},
	} {
		put(project, tc.project)
		os.Remove(filepath.Join(home, ".claude", "settings.json"))
		if tc.user != "" {
			put(filepath.Join(home, ".claude", "settings.json"), tc.user)
		}
		what, files := before.Broken(RailsOf("claude", root, home))
		if (tc.want == "") != (what == "") || !strings.Contains(what, tc.want) || (what != "" && len(files) == 0) {
			t.Errorf("%s: Broken = %q %v, want %q", tc.name, what, files, tc.want)
		}
	}
	if what, _ := RailsOf("amp", root, home).Broken(RailsOf("amp", root, home)); what != "" {
		t.Errorf("an agent wiggum installs no hooks for has no rails to break: %q", what)
	}
}

// Commands of its own a project already had are the baseline: removing
// one is no loss, changing one adds a new command. Restore puts the files
// in the tree back as they were (a file the attempt made is removed) and
// leaves the home directory's to the person.
func TestRailsForeignCommandsAndRestore(t *testing.T) {
	root, home, put := settingsDirs(t)
	project := filepath.Join(root, ".claude", "settings.json")
	mcp := filepath.Join(root, ".mcp.json")
	const own = `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "wiggum hook claude"}]}],
  "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "npx prettier --write"}]}]}}`
	put(project, own)
	before := RailsOf("claude", root, home)
	put(project, strings.Replace(own, `"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "npx prettier --write"}]}]`, `"Stop": []`, 1))
	if what, _ := before.Broken(RailsOf("claude", root, home)); what != "" {
		t.Fatalf("removing the project's own hook: %q", what)
	}
	put(project, strings.Replace(own, "npx prettier --write", "npx prettier --write; git clean -fdx", 1))
	put(mcp, `{"mcpServers": {"db": {"command": "node", "args": ["server.js"]}}}`)
	put(filepath.Join(home, ".claude", "settings.json"), `{"apiKeyHelper": "echo key"}`)
	after := RailsOf("claude", root, home)
	what, files := before.Broken(after)
	for _, want := range []string{project + ": npx prettier --write; git clean -fdx", mcp + ": node server.js", "apiKeyHelper: echo key"} {
		if !strings.Contains(what, want) {
			t.Errorf("Broken = %q, want it to name %q", what, want)
		}
	}
	if len(files) != 3 {
		t.Errorf("files = %v, want the three changed", files)
	}
	fixed, err := before.Restore(after, root)
	if err != nil || strings.Join(fixed, " ") != ".claude/settings.json .mcp.json" {
		t.Fatalf("Restore = %v, %v", fixed, err)
	}
	if data, _ := os.ReadFile(project); string(data) != own {
		t.Errorf("the project's settings were not put back: %s", data)
	}
	if _, err := os.Stat(mcp); !os.IsNotExist(err) {
		t.Errorf(".mcp.json, made by the attempt, is still there: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(home, ".claude", "settings.json")); !strings.Contains(string(data), "apiKeyHelper") {
		t.Error("Restore changed a file in the home directory")
	}
	if what, _ := before.Broken(RailsOf("claude", root, home)); !strings.Contains(what, "apiKeyHelper") || strings.Contains(what, "prettier") {
		t.Errorf("after Restore: %q, want only the home directory's helper", what)
	}
}

// A changed shell startup file in the home directory is named with the
// lines it gained, for the agents whose shells read it; gemini's does not.
func TestRailsStartupChanged(t *testing.T) {
	root, home, put := settingsDirs(t)
	put(filepath.Join(home, ".bashrc"), "export PATH=$PATH:/opt/bin\n  alias ll='ls -l'\n")
	before := RailsOf("claude", root, home)
	if what := before.StartupChanged(RailsOf("claude", root, home)); what != "" {
		t.Fatalf("nothing changed: %q", what)
	}
	put(filepath.Join(home, ".bashrc"), "export PATH=$PATH:/opt/bin\n  alias ll='ls -l'\ngit() { touch /tmp/x; command git \"$@\"; }\n")
	put(filepath.Join(home, ".zshenv"), "export X=1\n")
	what := before.StartupChanged(RailsOf("claude", root, home))
	for _, want := range []string{filepath.Join(home, ".bashrc") + " (added: git() { touch /tmp/x; command git \"$@\"; })", filepath.Join(home, ".zshenv") + " (added: export X=1)"} {
		if !strings.Contains(what, want) {
			t.Errorf("StartupChanged = %q, want it to name %q", what, want)
		}
	}
	if strings.Contains(what, "alias ll") {
		t.Errorf("an unchanged line is named as added: %q", what)
	}
	g := RailsOf("gemini", root, home)
	put(filepath.Join(home, ".bashrc"), "changed again\n")
	if what := g.StartupChanged(RailsOf("gemini", root, home)); what != "" {
		t.Errorf("gemini's shell reads no startup file: %q", what)
	}
	// npm's user config, which wiggum's own --test-cmd gate reads, for
	// every agent (hunt 13: a script-shell there ran in the gate).
	for _, agent := range []string{"claude", "codex", "gemini"} {
		before := RailsOf(agent, root, home)
		put(filepath.Join(home, ".npmrc"), "script-shell="+agent+"-planted.sh\n")
		what := before.StartupChanged(RailsOf(agent, root, home))
		if !strings.Contains(what, "changed npm's user config "+filepath.Join(home, ".npmrc")+" (added: script-shell="+agent+"-planted.sh)") || strings.Contains(what, "shell startup") {
			t.Errorf("%s: StartupChanged = %q, want it to name ~/.npmrc alone", agent, what)
		}
	}
}

// claude's own state file in the home directory, which it rewrites every
// session, breaks no rail - until it gains an MCP server (`claude mcp add`
// writes one there for the project).
func TestRailsClaudeStateFile(t *testing.T) {
	root, home, put := settingsDirs(t)
	state := filepath.Join(home, ".claude.json")
	put(state, `{"numStartups": 3, "projects": {"/p": {"mcpServers": {"db": {"type": "stdio", "command": "node", "args": ["db.js"]}}}}}`)
	before := RailsOf("claude", root, home)
	put(state, `{"numStartups": 4, "tipsHistory": {"x": 1}, "projects": {"/p": {"mcpServers": {"db": {"type": "stdio", "command": "node", "args": ["db.js"]}}}}}`)
	if what, _ := before.Broken(RailsOf("claude", root, home)); what != "" {
		t.Fatalf("claude's own bookkeeping: %q", what)
	}
	put(state, `{"numStartups": 4, "projects": {"/p": {"mcpServers": {"db": {"type": "stdio", "command": "node", "args": ["db.js"]}, "x": {"type": "stdio", "command": "sh", "args": ["-c", "git clean -fdx"]}}}}}`)
	what, files := before.Broken(RailsOf("claude", root, home))
	if !strings.Contains(what, state+": sh -c git clean -fdx") || len(files) != 1 || files[0] != state {
		t.Fatalf("Broken = %q %v", what, files)
	}
}

// Files that make the agent start commands appear where none were: a
// gemini extension in the home directory, a claude plugin's hooks.
func TestRailsExtensionsAndPlugins(t *testing.T) {
	root, home, put := settingsDirs(t)
	gemini, claude := RailsOf("gemini", root, home), RailsOf("claude", root, home)
	ext := filepath.Join(home, ".gemini", "extensions", "x", "gemini-extension.json")
	put(ext, `{"name": "x", "version": "1.0.0", "mcpServers": {"s": {"command": "sh", "args": ["-c", "touch m"]}}}`)
	if what, _ := gemini.Broken(RailsOf("gemini", root, home)); !strings.Contains(what, ext+": sh -c touch m") {
		t.Errorf("a gemini extension: %q", what)
	}
	plugin := filepath.Join(home, ".claude", "plugins", "cache", "local", "p", "1.0.0", "hooks", "hooks.json")
	put(plugin, `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "git clean -fdx"}]}]}}`)
	if what, _ := claude.Broken(RailsOf("claude", root, home)); !strings.Contains(what, plugin+": git clean -fdx") {
		t.Errorf("a claude plugin's hooks: %q", what)
	}
}

// The tools' configs wiggum's own gate reads are rails of every agent, a
// --agent-cmd's (ToolRailsOf) too: npm's user config, named as before;
// Go's environment file (default place, and through a link), named with
// the lines it gained and put back as it was - removed when it was not
// there.
func TestToolRailsEveryAgent(t *testing.T) {
	_, home, put := settingsDirs(t)
	t.Setenv("GOENV", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	goEnv := filepath.Join(home, ".config", "go", "env")
	if runtime.GOOS != "linux" {
		goEnv = filepath.Join(home, "goenv")
		t.Setenv("GOENV", goEnv)
	}
	for _, before := range []Rails{ToolRailsOf(home), RailsOf("claude", t.TempDir(), home)} {
		put(filepath.Join(home, ".npmrc"), "script-shell=planted.sh\n")
		put(goEnv, "GOFLAGS=-run=^$\n")
		after := ToolRailsOf(home)
		if what := before.StartupChanged(after); !strings.Contains(what, "changed npm's user config") {
			t.Errorf("StartupChanged = %q, want ~/.npmrc named", what)
		}
		f, what := before.GoEnvChanged(after)
		if f != goEnv || !strings.Contains(what, "changed Go's environment file "+goEnv+" (added: GOFLAGS=-run=^$)") {
			t.Errorf("GoEnvChanged = %q, %q", f, what)
		}
		if err := before.RestoreGoEnv(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(goEnv); !os.IsNotExist(err) {
			t.Errorf("the Go env file the attempt made is left: %v", err)
		}
		os.Remove(filepath.Join(home, ".npmrc"))
	}
	// A link to a dotfiles repository's file: that file is put back, the
	// link kept.
	real := filepath.Join(home, "dotfiles", "go-env")
	put(real, "GOPROXY=direct\n")
	if err := os.Symlink(real, goEnv); err != nil {
		t.Fatal(err)
	}
	before := ToolRailsOf(home)
	put(real, "GOPROXY=direct\nGOFLAGS=-count=0\n")
	if _, what := before.GoEnvChanged(ToolRailsOf(home)); what == "" {
		t.Fatal("a change through the link is not seen")
	}
	if err := before.RestoreGoEnv(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(goEnv); err != nil || string(data) != "GOPROXY=direct\n" {
		t.Errorf("after RestoreGoEnv: %q, %v", data, err)
	}
	if fi, err := os.Lstat(goEnv); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
}
