// Package install registers wiggum's hooks with agents (Claude Code, Codex,
// Gemini CLI, Cursor) and git, and removes exactly what it added: settings
// are merged entry by entry, keeping every unrelated key and hook, and git
// hooks that were there first are chained, never deleted.
package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
)

// Agent describes where an agent keeps its hooks and which wiggum wants.
type Agent struct {
	Name string
	// File is the settings file, relative to the project root or, with
	// --user, to the home directory.
	File string
	// Flat agents (Cursor) list {command} objects per event; the others
	// nest {matcher, hooks: [{type, command, timeout}]} groups.
	Flat bool
	// Comments: the agent reads its settings as JSON with // and /* */
	// comments (Gemini CLI), so wiggum does too, keeping them.
	Comments bool
	events   func(requireRead bool) []event
	// timeoutUnit scales a timeout in seconds to the agent's unit.
	timeoutUnit int
	extra       func(h *node) // fields an agent's hook objects carry besides command
}

type event struct {
	name    string
	matcher string // "" for none
	timeout int    // seconds
}

// Agents wiggum can install into.
var Agents = map[string]*Agent{
	"claude": {Name: "claude", File: ".claude/settings.json", timeoutUnit: 1, events: func(rr bool) []event {
		shell := "Bash|PowerShell"
		// Skill (SlashCommand before it): a skill or command runs the
		// shell commands its file holds as it loads, with no hook of
		// their own; Agent (Task before it): a subagent's definition may
		// declare hooks.
		pre, post := shell+"|Edit|MultiEdit|Write|NotebookEdit|Skill|SlashCommand|Agent|Task", shell
		if rr {
			// A file the agent wrote or edited, its content is what the
			// agent gave: known as a Read makes it (Claude Code tells
			// the model not to read it back).
			post += "|Read|Edit|MultiEdit|Write|NotebookEdit"
		}
		// UserPromptSubmit: Claude Code tells the model that a command
		// run in the background (a test run among them) ended in a prompt
		// of its own; it also starts a new prompt's reads for
		// --require-read.
		evs := []event{{"PreToolUse", pre, 10}, {"PostToolUse", post, 120}, {"PostToolUseFailure", shell, 120}, {"Stop", "", 30}, {"UserPromptSubmit", "", 120}}
		if rr {
			evs = append(evs, event{"SessionStart", "", 10})
		}
		return evs
	}},
	"codex": {Name: "codex", File: ".codex/hooks.json", timeoutUnit: 1, events: func(rr bool) []event {
		// Codex reports its shell as Bash and its file edits as
		// apply_patch (tool_input.command holds the patch).
		evs := []event{{"PreToolUse", "Bash|apply_patch", 10}, {"PostToolUse", "Bash", 120}, {"Stop", "", 30}}
		if rr {
			evs = append(evs, event{"SessionStart", "", 10})
		}
		return evs
	}},
	"gemini": {Name: "gemini", File: ".gemini/settings.json", Comments: true, timeoutUnit: 1000, events: func(rr bool) []event {
		pre, post := "run_shell_command|replace|write_file", "run_shell_command"
		if rr {
			post += "|read_file"
		}
		evs := []event{{"BeforeTool", pre, 10}, {"AfterTool", post, 120}, {"AfterAgent", "", 30}}
		if rr {
			evs = append(evs, event{"SessionStart", "", 10})
		}
		return evs
	}, extra: func(h *node) { h.set("name", scalar("wiggum")) }},
	"cursor": {Name: "cursor", File: ".cursor/hooks.json", Flat: true, events: func(rr bool) []event {
		evs := []event{{"beforeShellExecution", "", 0}, {"afterShellExecution", "", 0}, {"stop", "", 0}}
		if rr {
			evs = append(evs, event{"beforeSubmitPrompt", "", 0})
		}
		return evs
	}},
}

// AgentOptions are the hook flags written into the agent's hook command.
type AgentOptions struct {
	Guard       string // "session" (default) or "always"
	RequireRead bool
	Migrate     bool // also remove the bash loop's .agents/ralph/hooks/*.sh entries
	// Allow: the guard's exceptions (wiggum hook --allow), each written
	// shell-quoted: every client runs the hook command through a shell.
	Allow []string
}

// Events are the agent's events install registers wiggum's hooks for
// (without --require-read's).
func (a *Agent) Events() []string {
	var out []string
	for _, ev := range a.events(false) {
		out = append(out, ev.name)
	}
	return out
}

// Command is the hook command line wiggum registers for an agent.
func (a *Agent) Command(opts AgentOptions) string {
	cmd := "wiggum hook " + a.Name
	if opts.Guard != "" && opts.Guard != "session" {
		cmd += " --guard " + opts.Guard
	}
	if opts.RequireRead {
		cmd += " --require-read"
	}
	for _, pat := range opts.Allow {
		cmd += " --allow " + shellQuote(pat)
	}
	return cmd
}

// ownCommand recognises wiggum's hook commands, whatever flags or path to
// the binary an earlier install wrote.
func ownCommand(cmd string) bool {
	fields := strings.Fields(cmd)
	return len(fields) >= 3 && filepath.Base(fields[0]) == "wiggum" && fields[1] == "hook"
}

// bashLoopCommand recognises the bash ralph loop's hook scripts.
func bashLoopCommand(cmd string) bool {
	return strings.Contains(cmd, ".agents/ralph/hooks/") && strings.Contains(cmd, ".sh")
}

// Change is one file install or uninstall wrote (or would write).
type Change struct {
	Path   string
	Before []byte // nil when the file did not exist
	After  []byte // nil when the file is removed
}

// Diff renders the change as a unified diff.
func (c Change) Diff() string { return unifiedDiff(c.Path, string(c.Before), string(c.After)) }

// InstallAgent merges wiggum's entries into the agent's settings file at
// path. Running it twice changes nothing the second time.
func InstallAgent(a *Agent, path string, opts AgentOptions) (*Change, error) {
	return edit(path, a.Comments, func(root *node) error { return a.merge(root, opts) })
}

// Settings returns a settings document holding only wiggum's hooks, for an
// agent started with its settings on the command line (claude --settings).
func Settings(a *Agent, opts AgentOptions) []byte {
	root := object()
	if err := a.merge(root, opts); err != nil {
		panic(err) // an empty document always takes the entries
	}
	return format(root, "  ")
}

func (a *Agent) merge(root *node, opts AgentOptions) error {
	hooks, err := hooksObject(root, true)
	if err != nil {
		return err
	}
	if a.Flat && root.get("version") == nil {
		root.keys = append([]string{"version"}, root.keys...)
		root.vals = append([]*node{scalar(1)}, root.vals...)
	}
	want := map[string]bool{}
	for _, ev := range a.events(opts.RequireRead) {
		want[ev.name] = true
		arr := hooks.get(ev.name)
		if arr == nil {
			arr = array()
			hooks.set(ev.name, arr)
		}
		if arr.kind != '[' {
			return fmt.Errorf("hooks.%s is not a list", ev.name)
		}
		entry := a.entry(ev, opts)
		if a.hasExactly(arr, entry) {
			continue
		}
		a.remove(arr, ownCommand)
		arr.items = append(arr.items, entry)
	}
	for i, name := range hooks.keys {
		if !want[name] && hooks.vals[i].kind == '[' {
			a.remove(hooks.vals[i], ownCommand)
		}
	}
	if opts.Migrate {
		for _, v := range hooks.vals {
			if v.kind == '[' {
				a.remove(v, bashLoopCommand)
			}
		}
	}
	pruneEmpty(hooks)
	return nil
}

// UninstallAgent removes every wiggum entry from the settings file.
func UninstallAgent(a *Agent, path string) (*Change, error) {
	return edit(path, a.Comments, func(root *node) error {
		hooks, err := hooksObject(root, false)
		if err != nil || hooks == nil {
			return err
		}
		removed := false
		for _, v := range hooks.vals {
			if v.kind == '[' && a.remove(v, ownCommand) {
				removed = true
			}
		}
		if !removed {
			return nil
		}
		pruneEmpty(hooks)
		if len(hooks.keys) == 0 {
			root.del("hooks")
			if a.Flat && len(root.keys) == 1 && root.keys[0] == "version" {
				root.del("version")
			}
		}
		return nil
	})
}

func hooksObject(root *node, create bool) (*node, error) {
	if root.kind != '{' {
		return nil, errors.New("the settings file is not a JSON object")
	}
	h := root.get("hooks")
	if h == nil {
		if !create {
			return nil, nil
		}
		h = object()
		root.set("hooks", h)
	}
	if h.kind != '{' {
		return nil, errors.New(`"hooks" is not an object`)
	}
	return h, nil
}

// pruneEmpty drops event lists that wiggum's removals emptied.
func pruneEmpty(hooks *node) {
	for i := 0; i < len(hooks.keys); i++ {
		if v := hooks.vals[i]; v.kind == '[' && len(v.items) == 0 && v.pruned {
			hooks.del(hooks.keys[i])
			i--
		}
	}
}

func (a *Agent) entry(ev event, opts AgentOptions) *node {
	h := object()
	if !a.Flat {
		h.set("type", scalar("command"))
	}
	h.set("command", scalar(a.Command(opts)))
	if a.extra != nil {
		a.extra(h)
	}
	if ev.timeout > 0 {
		h.set("timeout", scalar(ev.timeout*a.timeoutUnit))
	}
	if a.Flat {
		return h
	}
	g := object()
	if ev.matcher != "" {
		g.set("matcher", scalar(ev.matcher))
	}
	list := array()
	list.items = []*node{h}
	g.set("hooks", list)
	return g
}

// hasExactly reports whether arr already holds entry as wiggum's only entry.
func (a *Agent) hasExactly(arr, entry *node) bool {
	found := 0
	exact := false
	for _, it := range arr.items {
		if a.owns(it) {
			found++
			exact = exact || equal(it, entry)
		}
	}
	return found == 1 && exact
}

// owns reports whether an entry (a flat hook or a group) holds a wiggum hook.
func (a *Agent) owns(it *node) bool {
	if it.kind != '{' {
		return false
	}
	if a.Flat {
		return ownCommand(it.get("command").str())
	}
	hs := it.get("hooks")
	if hs == nil || hs.kind != '[' {
		return false
	}
	for _, h := range hs.items {
		if h.kind == '{' && ownCommand(h.get("command").str()) {
			return true
		}
	}
	return false
}

// remove drops the hooks whose command matches, and groups left empty.
func (a *Agent) remove(arr *node, match func(string) bool) bool {
	removed := false
	var keep []*node
	for _, it := range arr.items {
		if it.kind != '{' {
			keep = append(keep, it)
			continue
		}
		if a.Flat {
			if match(it.get("command").str()) {
				removed = true
				continue
			}
			keep = append(keep, it)
			continue
		}
		hs := it.get("hooks")
		if hs == nil || hs.kind != '[' {
			keep = append(keep, it)
			continue
		}
		var kept []*node
		for _, h := range hs.items {
			if h.kind == '{' && match(h.get("command").str()) {
				removed = true
				continue
			}
			kept = append(kept, h)
		}
		if len(kept) == 0 && len(hs.items) > 0 {
			continue
		}
		hs.items = kept
		keep = append(keep, it)
	}
	arr.items = keep
	if removed {
		arr.pruned = true
	}
	return removed
}

// edit applies fn to the JSON file at path and writes the result
// atomically; it returns nil when nothing changed. The file is printed
// back from its own bytes (document.bytes): only what fn changed changes,
// in the file's indentation and line endings. A file left as {} is
// removed, with its directory when that is empty, only when install
// created it (created.go); one the person had stays, even {}.
//
// A settings file that is a symbolic link - a dotfiles manager's (stow,
// chezmoi, home-manager) or a monorepo's shared settings - is edited where
// it points: the link stays, and with it the person's management of the
// file; one that would be left as {} is written so, not removed. A link to
// nothing is refused, nothing changed.
func edit(path string, comments bool, fn func(root *node) error) (*Change, error) {
	linked := false
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, fmt.Errorf("%s is a symbolic link to a file that cannot be read (%v); create that file or remove the link, then run again", path, errors.Unwrap(err))
		}
		path, linked = target, true
	}
	key, err := filepath.Abs(path) // the record's name for the file
	if err != nil {
		key = path
	}
	before, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	existed := err == nil
	doc := &document{root: object(), post: "\n", style: style{indent: "  ", nl: "\n", colon: ": "}}
	if existed && len(bytes.TrimSpace(before)) > 0 {
		if doc, err = parseJSON(before, comments); err != nil {
			return nil, fmt.Errorf("%s: %w; fix or move it, then run again", path, err)
		}
	}
	root := doc.root
	if err := fn(root); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	after := doc.bytes()
	if existed && bytes.Equal(before, after) {
		return nil, nil
	}
	var made *createdFile
	if existed {
		made = created(key, before)
	}
	if root.kind == '{' && len(root.keys) == 0 && !linked {
		if !existed {
			return nil, nil
		}
		if made != nil {
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("remove %s: %w", path, err)
			}
			if made.Dir {
				_ = os.Remove(filepath.Dir(path)) // only succeeds when empty
			}
			recordCreated(key, nil, nil)
			return &Change{Path: path, Before: before}, nil
		}
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if !existed && !linked {
		_, err := os.Stat(filepath.Dir(path))
		made = &createdFile{Dir: errors.Is(err, fs.ErrNotExist)}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := renameio.WriteFile(path, after, mode); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if made != nil {
		recordCreated(key, made, after)
	}
	c := &Change{Path: path, After: after}
	if existed {
		c.Before = before
	}
	return c, nil
}
