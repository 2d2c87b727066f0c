package agent

import (
	"maps"
	"os"
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
	for _, path := range hookPaths(agent, root, home) {
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
// agent, as "event|matcher|command". A file that is missing or not hooks
// JSON has none.
func wiggumEntries(agent, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil || !mentions(agent, data) {
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
