package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Rails is what makes an agent's wiggum hooks run, as its settings files
// say at one moment: each hook entry that runs wiggum (file, event, matcher,
// command), and which setting, if any, turns hooks off (HooksOff). An
// attempt that changes them - a script that rewrites .claude/settings.json,
// a setting that turns hooks off - would leave every later attempt without
// the guard, so the loop compares the rails before and after each attempt.
type Rails struct {
	entries map[string][]string // file -> "event|matcher|command", sorted
	off     string
}

// RailsOf reads the agent's rails in the project at root and the home
// directory. Agents wiggum installs no hooks for have none.
func RailsOf(agent, root, home string) Rails {
	r := Rails{entries: map[string][]string{}}
	if !HasHooks(agent) {
		return r
	}
	var paths []string
	for _, f := range hookFiles[agent].project {
		paths = append(paths, filepath.Join(root, f))
	}
	for _, path := range append(paths, userHookFiles(agent, home)...) {
		if e := wiggumEntries(agent, path); len(e) > 0 {
			r.entries[path] = e
		}
	}
	r.off = HooksOff(agent, root, home)
	return r
}

// Broken says how after lost what r had: a hook entry that ran wiggum is
// gone or changed, or hooks are turned off where they were not. files are
// the settings files concerned; "" and nil when nothing was lost (adding
// hooks, or changing other settings, is no loss).
func (r Rails) Broken(after Rails) (what string, files []string) {
	var lost []string
	for _, path := range slices.Sorted(maps.Keys(r.entries)) {
		if !subset(r.entries[path], after.entries[path]) {
			lost = append(lost, path)
		}
	}
	switch {
	case len(lost) > 0:
		return "removed or changed wiggum's hooks in " + strings.Join(lost, " and "), lost
	case r.off == "" && after.off != "":
		file, _, _ := strings.Cut(after.off, " sets ")
		return "turned the agent's hooks off (" + after.off + ")", []string{file}
	}
	return "", nil
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
// agent, as "event|matcher|command": the layout claude's settings, codex's
// hooks.json and gemini's settings share (hooks.EVENT[] = {matcher,
// hooks[] = {command}}). A file that is missing or not that JSON has none.
func wiggumEntries(agent, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil || !mentions(agent, data) {
		return nil
	}
	var doc struct {
		Hooks map[string][]struct {
			Matcher any `json:"matcher"`
			Hooks   []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	var out []string
	for event, groups := range doc.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if strings.Contains(h.Command, "wiggum hook "+agent) {
					out = append(out, fmt.Sprintf("%s|%v|%s", event, g.Matcher, h.Command))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
