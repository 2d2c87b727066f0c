package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The rails compare wiggum's hook entries and the settings that turn hooks
// off before and after an attempt: losing an entry (or changing its
// matcher) or turning hooks off is a loss; adding hooks, or any other
// setting, is not.
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
