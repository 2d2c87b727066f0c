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
)

// UnusableError is an agent that cannot work here at all: retrying it is
// pointless, so a loop stops at once with the agent's own words.
type UnusableError struct {
	Agent  string
	Reason string
}

func (e *UnusableError) Error() string {
	return fmt.Sprintf("the %s agent cannot run: %s", e.Agent, e.Reason)
}

// IsUnusable reports whether err says the agent cannot run at all.
func IsUnusable(err error) bool {
	var u *UnusableError
	return errors.As(err, &u)
}

// Preflight finds what would make every attempt of a built-in agent fail,
// or run without wiggum's hooks, before the first one starts. root is the
// repository the agent will work in; env is the agent's environment.
func Preflight(p Profile, root string, env []string) error {
	switch p.Name {
	case "claude":
		if slices.Contains(p.Argv, "--dangerously-skip-permissions") && os.Geteuid() == 0 && getenv(env, "IS_SANDBOX") != "1" {
			return &UnusableError{Agent: "claude", Reason: "claude refuses --dangerously-skip-permissions as root; " +
				"run wiggum as a normal user, or on a disposable machine or container set IS_SANDBOX=1 (claude's own switch for that)"}
		}
	case "codex":
		foreign, err := foreignCodexHooks(filepath.Join(root, ".codex", "hooks.json"))
		if err != nil {
			return &UnusableError{Agent: "codex", Reason: err.Error()}
		}
		if len(foreign) > 0 {
			return &UnusableError{Agent: "codex", Reason: fmt.Sprintf(".codex/hooks.json has hooks that are not wiggum's (%s); "+
				"wiggum runs codex with --dangerously-bypass-hook-trust so that its own hooks run, and will not do that for hooks "+
				"nobody approved: remove them, or approve them in codex (/hooks) and run it with --agent-cmd",
				strings.Join(foreign, "; "))}
		}
	}
	return nil
}

// foreignCodexHooks lists the hook commands in a codex hooks file that are
// not wiggum's.
func foreignCodexHooks(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	entries, err := hookEntries(data)
	if err != nil {
		return nil, fmt.Errorf("%s is not valid hooks JSON (%v); fix it before running codex", path, err)
	}
	var out []string
	for _, e := range entries {
		f := strings.Fields(e.command)
		if len(f) >= 2 && filepath.Base(f[0]) == "wiggum" && f[1] == "hook" {
			continue
		}
		if !slices.Contains(out, e.command) {
			out = append(out, e.command)
		}
	}
	slices.Sort(out)
	return out, nil
}

// hookEntry is one command hook in a hook file.
type hookEntry struct {
	event, matcher, command string
}

// hookEntries reads the hook commands of the layout claude's settings,
// codex's hooks.json and gemini's settings share: hooks.EVENT[] =
// {matcher, hooks[] = {command}}.
func hookEntries(data []byte) ([]hookEntry, error) {
	var doc struct {
		Hooks map[string][]struct {
			Matcher any `json:"matcher"`
			Hooks   []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var out []hookEntry
	for event, groups := range doc.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				out = append(out, hookEntry{event: event, matcher: fmt.Sprint(g.Matcher), command: h.Command})
			}
		}
	}
	return out, nil
}

func getenv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// hookFiles are where each agent reads hooks: the project's files, then
// the user's (relative to the agent's UserDir).
var hookFiles = map[string]struct{ project, user []string }{
	"claude": {[]string{".claude/settings.json", ".claude/settings.local.json"}, []string{"settings.json"}},
	"codex":  {[]string{".codex/hooks.json"}, []string{"hooks.json"}},
	"gemini": {[]string{".gemini/settings.json"}, []string{"settings.json"}},
}

// HasHooks reports whether wiggum installs hooks for the built-in agent.
func HasHooks(name string) bool {
	_, ok := hookFiles[name]
	return ok
}

// HooksMissing returns a warning when none of the agent's hook files in the
// repository or the home directory registers wiggum's hooks: the run would
// have no guard and no mid-iteration rollback, and should say so.
func HooksMissing(p Profile, root, home string) string {
	if !HasHooks(p.Name) || registers(p.Name, hookPaths(p.Name, root, home)...) {
		return ""
	}
	return fmt.Sprintf("wiggum's hooks are not installed for %s here, so the agent runs without the command guard and without the mid-iteration test rollback; run 'wiggum install --%s' to add them", p.Name, p.Name)
}

// HooksOutdated returns a warning when the agent's hook files register
// wiggum's hooks, but not for each of the events want (install's): a file
// an older wiggum wrote, which misses what a newer one does there.
func HooksOutdated(p Profile, root, home string, want []string) string {
	if !HasHooks(p.Name) {
		return ""
	}
	have := map[string]bool{}
	for _, path := range hookPaths(p.Name, root, home) {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, e := range wiggumEntries(p.Name, data) {
			ev, _, _ := strings.Cut(e, "|")
			have[ev] = true
		}
	}
	if len(have) == 0 {
		return ""
	}
	var missing []string
	for _, ev := range want {
		if !have[ev] {
			missing = append(missing, ev)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("wiggum's hooks for %s here were written by an older wiggum and miss its %s hook (a test run the agent starts in the background goes unseen without UserPromptSubmit); run 'wiggum install --%s' again to bring them up to date",
		p.Name, strings.Join(missing, ", "), p.Name)
}

// Hooks is where an agent's wiggum hooks are registered.
type Hooks struct {
	Agent string `json:"agent"`
	// Files register them: project files (relative to the repository) as
	// they are in the working tree, and the user's (absolute).
	Files []string `json:"files"`
	// Committed: a project file registers them at HEAD, so the worktrees
	// of a parallel run get them; User: a file in the home directory does,
	// for every repository.
	Committed bool `json:"committed"`
	User      bool `json:"user"`
	// Off says which of the agent's own settings turns them off (HooksOff).
	Off string `json:"off,omitempty"`
	// Ignored are the files that hold them but that the agent ignores
	// whole, and why.
	Ignored []IgnoredFile `json:"ignored"`
}

// IgnoredFile is a hook file the agent does not read at all: Claude Code
// ignores a settings file that is not valid JSON (a // comment, a
// trailing comma), its hooks with the rest.
type IgnoredFile struct {
	// File is relative to the repository for a project file, absolute
	// for the user's.
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// InstalledHooks lists, for each built-in agent wiggum installs hooks for,
// where they are registered; an agent with none is left out. atHead reads
// a project file's committed content (ok false when HEAD has no such
// file).
func InstalledHooks(root, home string, atHead func(path string) (data []byte, ok bool)) []Hooks {
	var out []Hooks
	for _, name := range slices.Sorted(maps.Keys(hookFiles)) {
		if h := installedHooks(name, root, home, atHead); h != nil {
			h.Off = HooksOff(name, root, home)
			out = append(out, *h)
		}
	}
	return out
}

func installedHooks(agent, root, home string, atHead func(string) ([]byte, bool)) *Hooks {
	h := &Hooks{Agent: agent, Files: []string{}}
	for _, f := range hookFiles[agent].project {
		if registers(agent, filepath.Join(root, f)) {
			h.Files = append(h.Files, f)
		}
		if data, ok := atHead(f); ok && mentions(agent, data) {
			h.Committed = true
		}
	}
	for _, f := range userHookFiles(agent, home) {
		if registers(agent, f) {
			h.Files, h.User = append(h.Files, f), true
		}
	}
	h.Ignored = ignoredHookFiles(agent, root, home)
	if len(h.Files) == 0 && !h.Committed && len(h.Ignored) == 0 {
		return nil
	}
	if h.Ignored == nil {
		h.Ignored = []IgnoredFile{}
	}
	return h
}

// ignoredHookFiles are the agent's hook files that hold wiggum's hook
// command but that the agent ignores whole (ignoredBy).
func ignoredHookFiles(agent, root, home string) []IgnoredFile {
	var out []IgnoredFile
	for _, path := range hookPaths(agent, root, home) {
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(data, []byte("wiggum hook "+agent)) {
			continue
		}
		if why := ignoredBy(agent, data); why != "" {
			f := path
			if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
				f = filepath.ToSlash(rel)
			}
			out = append(out, IgnoredFile{File: f, Reason: why})
		}
	}
	return out
}

// HooksIgnored refuses a run whose agent would find wiggum's hooks only in
// files it ignores whole (a claude settings file that is not valid JSON):
// it would work without the guard and without the test rollbacks, and its
// first command would run before anything noticed.
func HooksIgnored(p Profile, root, home string) error {
	if !HasHooks(p.Name) || registers(p.Name, hookPaths(p.Name, root, home)...) {
		return nil
	}
	ignored := ignoredHookFiles(p.Name, root, home)
	if len(ignored) == 0 {
		return nil
	}
	var files []string
	for _, f := range ignored {
		files = append(files, fmt.Sprintf("%s is ignored by %s: %s", f.File, p.Name, f.Reason))
	}
	return &UnusableError{Agent: p.Name, Reason: fmt.Sprintf("wiggum's hooks are only in files it does not read (%s), so it would work without the guard and without test rollbacks; fix the file (wiggum install --%s says what is wrong), then run again",
		strings.Join(files, "; "), p.Name)}
}

// HooksNotCommitted returns an error for a parallel run (each story in a
// worktree checked out from HEAD) whose agent would find wiggum's hooks
// only in project files the worktrees do not get: files not committed, or
// committed without the hooks. Hooks in the home directory reach every
// worktree.
func HooksNotCommitted(p Profile, root, home string, atHead func(path string) (data []byte, ok bool)) error {
	if !HasHooks(p.Name) {
		return nil
	}
	h := installedHooks(p.Name, root, home, atHead)
	if h == nil || len(h.Files) == 0 || h.Committed || h.User {
		return nil // not installed at all: HooksMissing warns (or HooksIgnored refuses)
	}
	return &UnusableError{Agent: p.Name, Reason: fmt.Sprintf("wiggum's hooks are in %s, which is not committed (or not with them): "+
		"a parallel run's agents work in worktrees checked out from HEAD and would run there without the guard. "+
		"Commit it (git add %s && git commit), or install the hooks for your user (wiggum install --%s --user)",
		strings.Join(h.Files, " and "), strings.Join(h.Files, " "), p.Name)}
}

// hookPaths are all the files the agent reads hooks from: the project's
// (under root), then the user's.
func hookPaths(agent, root, home string) []string {
	var paths []string
	for _, f := range hookFiles[agent].project {
		paths = append(paths, filepath.Join(root, f))
	}
	return append(paths, userHookFiles(agent, home)...)
}

// UserDir is the directory the agent reads its user settings from: the
// one its own variable names (Claude Code's CLAUDE_CONFIG_DIR, Gemini
// CLI's GEMINI_CLI_HOME, whose .gemini it reads), else the one in the home
// directory. The client reads that one only, so a setting there that turns
// hooks off, a hook added there, a user skill there - each is read from
// where the client reads it (watching ~/.claude missed them all). Codex's
// CODEX_HOME is read beside ~/.codex by userHookFiles.
func UserDir(agent, home string) string {
	switch agent {
	case "claude":
		if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
			return d
		}
	case "gemini":
		if d := os.Getenv("GEMINI_CLI_HOME"); d != "" {
			return filepath.Join(d, ".gemini")
		}
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, "."+agent)
}

// userHookFiles are the agent's hook files in its user directory (UserDir;
// and codex's CODEX_HOME).
func userHookFiles(agent, home string) []string {
	var paths []string
	if dir := UserDir(agent, home); dir != "" {
		for _, f := range hookFiles[agent].user {
			paths = append(paths, filepath.Join(dir, f))
		}
	}
	if agent == "codex" {
		if ch := os.Getenv("CODEX_HOME"); ch != "" {
			paths = append(paths, filepath.Join(ch, "hooks.json"))
		}
	}
	return paths
}

// registers reports whether one of the files registers wiggum's hooks for
// the agent.
func registers(agent string, paths ...string) bool {
	for _, path := range paths {
		if data, err := os.ReadFile(path); err == nil && mentions(agent, data) {
			return true
		}
	}
	return false
}

// mentions reports whether a hook file's content holds wiggum's hook
// command for the agent, in a file the agent reads (ignoredBy).
func mentions(agent string, data []byte) bool {
	return bytes.Contains(data, []byte("wiggum hook "+agent)) && ignoredBy(agent, data) == ""
}

// ignoredBy says why the agent ignores a hook file's content whole; ""
// when it reads it. Claude Code reads its settings as strict JSON and
// ignores a file that is not (install refuses to edit one so): its hooks
// never run.
func ignoredBy(agent string, data []byte) string {
	if agent != "claude" || json.Valid(data) {
		return ""
	}
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return "not valid JSON"
	}
	return fmt.Sprintf("not valid JSON (line %d)", 1+bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n")))
}

// ProjectHookFiles are the project files, relative to the repository,
// where agents read hooks.
func ProjectHookFiles() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(hookFiles)) {
		out = append(out, hookFiles[name].project...)
	}
	return out
}

// HooksTwice returns a warning when the agent's hook files - the project's
// and the user's - register wiggum's hook for the same event with
// different commands (wiggum hook claude in the project, wiggum hook
// claude --guard always in ~/.claude/settings.json): the agent runs every
// entry, so each tool call is judged twice and a failing test run seen by
// two hooks, with two messages to the model. Identical commands are one
// hook to Claude Code, which de-duplicates them. "" when there is no such
// pair.
func HooksTwice(name, root, home string) string {
	if !HasHooks(name) {
		return ""
	}
	type where struct{ file, command string }
	seen := map[string][]where{} // event -> the files' commands
	for _, path := range hookPaths(name, root, home) {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, e := range wiggumEntries(name, data) {
			parts := strings.SplitN(e, "|", 3)
			if len(parts) != 3 {
				continue
			}
			seen[parts[0]] = append(seen[parts[0]], where{path, parts[2]})
		}
	}
	for _, ev := range slices.Sorted(maps.Keys(seen)) {
		ws := seen[ev]
		for i := range ws {
			for j := i + 1; j < len(ws); j++ {
				if ws[i].file != ws[j].file && ws[i].command != ws[j].command {
					return fmt.Sprintf("wiggum's hooks for %s are registered twice, with different commands: %q in %s and %q in %s. The agent runs both for every tool call (two guards; a failing test run seen by two hooks). Keep one: 'wiggum uninstall --%s' (the project's) or 'wiggum uninstall --%s --user' (yours), then install the one you want",
						name, ws[i].command, ws[i].file, ws[j].command, ws[j].file, name, name)
				}
			}
		}
	}
	return ""
}
