package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/wiggum-dev/wiggum/guard"
)

// Rails is what makes an agent's wiggum hooks run, as its settings files
// say at one moment: each hook entry that runs wiggum (file, event, matcher,
// command), and which setting, if any, turns hooks off (HooksOff). An
// attempt that changes them - a script that rewrites .claude/settings.json,
// a setting that turns hooks off - would leave every later attempt without
// the guard, so the loop compares the rails before and after each attempt.
//
// It also holds the other commands those files make the agent run - hooks
// that are not wiggum's, MCP servers, claude's apiKeyHelper and the like:
// each runs in a later session with no hook of wiggum's seeing it, so an
// attempt that adds one breaks the rails as surely as one that removes
// wiggum's hooks.
type Rails struct {
	entries map[string][]string // file -> "event|matcher|command", sorted
	off     string
	foreign map[string][]string // file -> the commands that are not wiggum's hooks, sorted
	files   map[string][]byte   // the files as read; nil for a missing one
	// startup: the home directory's shell startup files as read (nil
	// for a missing one), for an agent whose shell reads them.
	startup map[string][]byte
	// goEnv: Go's environment file (go env -w writes it; every go
	// command reads it, wiggum's go test gate's too) and its content, nil
	// when missing; goEnv is "" when there is none to watch.
	goEnv     string
	goEnvData []byte
}

// shellStartup are the shell startup files in the home directory. Claude
// Code's shell snapshot takes their functions and aliases into every
// later session's commands (a git() function planted in ~/.bashrc ran for
// a later session's `git status`, which the guard had judged as git); a
// login shell (codex's bash -lc) reads the profile files.
var shellStartup = []string{".bashrc", ".bash_profile", ".bash_login", ".profile", ".bash_aliases",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".config/fish/config.fish"}

// toolConfigs are the home directory's files of the tools wiggum itself
// runs for the project, whose settings run commands: npm's user config.
var toolConfigs = []string{".npmrc"}

// readsStartup: the agents whose shells read the home directory's startup
// files (gemini runs bash -c, which reads none).
var readsStartup = map[string]bool{"claude": true, "codex": true}

// ToolRailsOf reads the rails every agent has, a --agent-cmd's too: the
// home directory's configs of the tools wiggum's own --test-cmd gate
// runs. npm's user config (a script-shell or node-options there runs a
// command in wiggum's gate and every later npm of the person's), and
// Go's environment file (a GOFLAGS=-run=^$ there makes go test run no
// test, and the gate pass).
func ToolRailsOf(home string) Rails {
	r := Rails{entries: map[string][]string{}, foreign: map[string][]string{}, files: map[string][]byte{}, startup: map[string][]byte{}}
	if home != "" {
		for _, f := range toolConfigs {
			data, _ := os.ReadFile(filepath.Join(home, f))
			r.startup[filepath.Join(home, f)] = data
		}
	}
	if f := guard.GoEnvFile(home); f != "" {
		// Through a link (a dotfiles repository's file) to the file
		// itself, which Restore writes.
		if real, err := filepath.EvalSymlinks(f); err == nil {
			f = real
		}
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			r.goEnv = f
			r.goEnvData, _ = os.ReadFile(f)
		} else if errors.Is(err, fs.ErrNotExist) {
			r.goEnv = f
		}
	}
	return r
}

// RailsOf reads the agent's rails in the project at root and the home
// directory: ToolRailsOf's, and for an agent wiggum installs hooks for,
// its settings and shell startup files.
func RailsOf(agent, root, home string) Rails {
	r := ToolRailsOf(home)
	if !HasHooks(agent) {
		return r
	}
	if readsStartup[agent] && home != "" {
		for _, f := range shellStartup {
			path := filepath.Join(home, f)
			data, err := os.ReadFile(path)
			if err != nil {
				data = nil
			}
			r.startup[path] = data
		}
	}
	for _, path := range railFiles(agent, root, home) {
		data, err := os.ReadFile(path)
		if err != nil {
			r.files[path] = nil
			continue
		}
		r.files[path] = data
		if e := wiggumEntries(agent, data); len(e) > 0 {
			r.entries[path] = e
		}
		if f := foreignCommands(agent, data); len(f) > 0 {
			r.foreign[path] = f
		}
	}
	r.off = HooksOff(agent, root, home)
	return r
}

// railFiles are the agent's hook files and the other files that make it
// start commands: for claude the project's .mcp.json, the home
// directory's .claude.json (`claude mcp add` writes MCP servers there, per
// project) and its plugins' hooks and servers; for gemini the extensions
// in the home directory (gemini 0.61 started the MCP server of one an
// agent wrote there in the next session).
func railFiles(agent, root, home string) []string {
	paths := hookPaths(agent, root, home)
	switch agent {
	case "claude":
		paths = append(paths, filepath.Join(root, ".mcp.json"))
		// With CLAUDE_CONFIG_DIR set, Claude Code keeps .claude.json
		// in that directory instead of the home directory.
		if dir := os.Getenv("CLAUDE_CONFIG_DIR"); dir != "" {
			paths = append(paths, filepath.Join(dir, ".claude.json"))
		} else if home != "" {
			paths = append(paths, filepath.Join(home, ".claude.json"))
		}
		if dir := UserDir("claude", home); dir != "" {
			paths = append(paths, findFiles(filepath.Join(dir, "plugins"), 8, "hooks.json", ".mcp.json", "plugin.json")...)
		}
	case "gemini":
		if dir := UserDir("gemini", home); dir != "" {
			paths = append(paths, findFiles(filepath.Join(dir, "extensions"), 3, "gemini-extension.json", "hooks.json")...)
		}
	}
	return paths
}

// maxRailFiles bounds how many files findFiles lists.
const maxRailFiles = 2000

// findFiles lists the files under dir, at most depth levels down, whose
// names are among names (symbolic links are not followed).
func findFiles(dir string, depth int, names ...string) []string {
	var out []string
	base := strings.Count(filepath.Clean(dir), string(filepath.Separator))
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil || len(out) >= maxRailFiles:
			return filepath.SkipDir
		case d.IsDir() && strings.Count(path, string(filepath.Separator))-base >= depth:
			return filepath.SkipDir
		case d.Type().IsRegular() && slices.Contains(names, d.Name()):
			out = append(out, path)
		}
		return nil
	})
	return out
}

// Broken says how after lost what r had: a hook entry that ran wiggum is
// gone or changed, hooks are turned off where they were not, or a file
// gained a command the agent runs outside wiggum's hooks. files are the
// settings files concerned; "" and nil when nothing was lost (changing
// other settings is no loss).
func (r Rails) Broken(after Rails) (what string, files []string) {
	var lost []string
	for _, path := range slices.Sorted(maps.Keys(r.entries)) {
		if !subset(r.entries[path], after.entries[path]) {
			lost = append(lost, path)
		}
	}
	var added, addedIn []string
	for _, path := range slices.Sorted(maps.Keys(after.foreign)) {
		var cmds []string
		for _, c := range after.foreign[path] {
			if !slices.Contains(r.foreign[path], c) {
				cmds = append(cmds, c)
			}
		}
		if len(cmds) > 0 {
			added = append(added, path+": "+strings.Join(cmds, "; "))
			addedIn = append(addedIn, path)
		}
	}
	switch {
	case len(lost) > 0:
		return "removed or changed wiggum's hooks in " + strings.Join(lost, " and "), lost
	case r.off == "" && after.off != "":
		file, _, _ := strings.Cut(after.off, " sets ")
		return "turned the agent's hooks off (" + after.off + ")", []string{file}
	case len(added) > 0:
		return "added commands (or environment) the agent would run in later sessions with no hook of wiggum's seeing them (" + strings.Join(added, "; ") + ")", addedIn
	}
	return "", nil
}

// StartupChanged says which of the home directory's shell startup files
// after finds changed, and what lines they gained; "" when none. No
// rollback reaches them, and they are the person's: the loop stops.
func (r Rails) StartupChanged(after Rails) string {
	var shells, tools []string
	for _, path := range slices.Sorted(maps.Keys(r.startup)) {
		was, now := r.startup[path], after.startup[path]
		if sameContent(was, now) {
			continue
		}
		if slices.Contains(toolConfigs, filepath.Base(path)) {
			tools = append(tools, path+newLines(was, now))
		} else {
			shells = append(shells, path+newLines(was, now))
		}
	}
	var parts []string
	if len(shells) > 0 {
		parts = append(parts, "changed the shell startup file "+strings.Join(shells, "; ")+
			", whose functions and aliases the agent's shell runs in place of the commands wiggum's guard judged")
	}
	if len(tools) > 0 {
		parts = append(parts, "changed npm's user config "+strings.Join(tools, "; ")+
			", whose settings (script-shell, node-options) run commands in wiggum's own test gate and every later npm of yours")
	}
	return strings.Join(parts, "; ")
}

// GoEnvChanged says whether after finds Go's environment file changed:
// the file, and what the attempt did (the lines it gained); "" when it
// did not change. RestoreGoEnv puts it back.
func (r Rails) GoEnvChanged(after Rails) (file, what string) {
	if r.goEnv == "" || r.goEnv != after.goEnv || sameContent(r.goEnvData, after.goEnvData) {
		return "", ""
	}
	return r.goEnv, "changed Go's environment file " + r.goEnv + newLines(r.goEnvData, after.goEnvData) +
		", which every go command reads - wiggum's go test gate's, and yours after the run (a GOFLAGS there can make go test run no test)"
}

// RestoreGoEnv writes Go's environment file back as r read it (removed
// when there was none).
func (r Rails) RestoreGoEnv() error {
	if r.goEnv == "" {
		return nil
	}
	if r.goEnvData == nil {
		if err := os.Remove(r.goEnv); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return renameio.WriteFile(r.goEnv, r.goEnvData, 0o644)
}

// newLines says which lines now has that was lacks (at most three), as
// " (added: ...)"; "" when none (lines were only removed).
func newLines(was, now []byte) string {
	old := map[string]bool{}
	for _, l := range strings.Split(string(was), "\n") {
		old[strings.TrimSpace(l)] = true
	}
	var add []string
	for _, l := range strings.Split(string(now), "\n") {
		if l = strings.TrimSpace(l); l != "" && !old[l] && len(add) < 3 {
			add = append(add, l)
		}
	}
	if len(add) == 0 {
		return ""
	}
	return " (added: " + strings.Join(add, " | ") + ")"
}

// Restore writes back, as r read them, the files under root that after
// found changed (removing one that was missing), and reports which. Files
// outside root - the home directory's - are the person's to mend.
func (r Rails) Restore(after Rails, root string) ([]string, error) {
	var fixed []string
	for _, path := range slices.Sorted(maps.Keys(r.files)) {
		rel, err := filepath.Rel(root, path)
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		was, now := r.files[path], after.files[path]
		if sameContent(was, now) {
			continue
		}
		if was == nil {
			err = os.Remove(path)
		} else if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = renameio.WriteFile(path, was, 0o644)
		}
		if err != nil && !os.IsNotExist(err) {
			return fixed, err
		}
		fixed = append(fixed, rel)
	}
	return fixed, nil
}

// sameContent reports whether two reads of a file found the same: both
// missing (nil), or the same bytes.
func sameContent(was, now []byte) bool {
	return (was == nil) == (now == nil) && bytes.Equal(was, now)
}

// subset reports whether every entry of a is in b.
func subset(a, b []string) bool {
	for _, e := range a {
		if !slices.Contains(b, e) {
			return false
		}
	}
	return true
}

// wiggumEntries lists a hook file's entries that run wiggum's hook for the
// agent, as "event|matcher|command". A file that is not hooks JSON has
// none.
func wiggumEntries(agent string, data []byte) []string {
	if !mentions(agent, data) {
		return nil
	}
	entries, err := hookEntries(data)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.Contains(e.command, "wiggum hook "+agent) {
			out = append(out, e.event+"|"+e.matcher+"|"+e.command)
		}
	}
	slices.Sort(out)
	return out
}

// commandKeys are settings whose string value is a command the agent runs
// (claude's credential and telemetry helpers, gemini's tool discovery).
var commandKeys = map[string]bool{
	"apiKeyHelper": true, "awsAuthRefresh": true, "awsCredentialExport": true, "otelHeadersHelper": true,
	"discoveryCommand": true, "callCommand": true,
}

// foreignCommands lists the commands a settings file makes the agent run
// that are not wiggum's hooks: every "command" in it (hooks, MCP servers,
// a status line) with its "args", the helpers of commandKeys, and the
// environment its "env" objects give the agent's tools. A file that is not
// JSON has none.
func foreignCommands(agent string, data []byte) []string {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if c, ok := v["command"].(string); ok && !strings.Contains(c, "wiggum hook "+agent) {
				if args, ok := v["args"].([]any); ok {
					for _, a := range args {
						if s, ok := a.(string); ok {
							c += " " + s
						}
					}
				}
				out = append(out, c)
			}
			for k, x := range v {
				if s, ok := x.(string); ok && commandKeys[k] {
					out = append(out, k+": "+s)
				}
				if env, ok := x.(map[string]any); ok && k == "env" {
					// The environment the agent gives its tools: BASH_ENV
					// runs a file before every shell command the guard
					// judged, GIT_CONFIG_* can turn git's hooks off.
					for name, val := range env {
						out = append(out, "env "+name+"="+fmt.Sprint(val))
					}
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	slices.Sort(out)
	return slices.Compact(out)
}
