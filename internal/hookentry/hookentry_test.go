package hookentry

import (
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/hooks"
)

// The fast path and `wiggum hook AGENT` under kong share one parser and one
// flag table; a bad flag or value warns and never fails the agent.
func TestParseAgentHook(t *testing.T) {
	for _, c := range []struct {
		args     []string
		ok       bool
		guard    string
		read     bool
		verbose  bool
		warnings int
	}{
		{[]string{"hook", "claude"}, true, hooks.GuardSession, false, false, 0},
		{[]string{"hook", "codex", "--guard", "always", "--require-read"}, true, hooks.GuardAlways, true, false, 0},
		{[]string{"hook", "gemini", "--guard=off", "-v"}, true, hooks.GuardOff, false, true, 0},
		{[]string{"hook", "cursor", "--guard=sometimes", "--bogus"}, true, hooks.GuardSession, false, false, 2},
		{[]string{"hook", "claude", "--guard"}, true, hooks.GuardSession, false, false, 1},
		{[]string{"hook", "claude", "--help"}, false, "", false, false, 0},
		{[]string{"hook", "git", "pre-push"}, false, "", false, false, 0},
		{[]string{"status"}, false, "", false, false, 0},
	} {
		h, ok := Parse(c.args)
		name := strings.Join(c.args, " ")
		if ok != c.ok {
			t.Errorf("%s: ok = %v", name, ok)
			continue
		}
		if !ok {
			continue
		}
		if h.Opts.Guard != c.guard || h.Opts.RequireRead != c.read || (h.Opts.Verbose != nil) != c.verbose || len(h.Warnings) != c.warnings {
			t.Errorf("%s: guard %q read %v verbose %v warnings %q", name, h.Opts.Guard, h.Opts.RequireRead, h.Opts.Verbose != nil, h.Warnings)
		}
	}
}

// --allow takes a pattern, as one word or after =, and repeats.
func TestParseAllow(t *testing.T) {
	h, ok := Parse([]string{"hook", "claude", "--allow", "git push origin feature/*", "--guard=always", "--allow=npm publish --dry-run"})
	if !ok || strings.Join(h.Opts.Allow, "|") != "git push origin feature/*|npm publish --dry-run" || h.Opts.Guard != hooks.GuardAlways || len(h.Warnings) != 0 {
		t.Fatalf("%+v %v", h, ok)
	}
}
