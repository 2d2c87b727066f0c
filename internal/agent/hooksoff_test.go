package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// settingsDirs makes a project root, a home directory and system settings
// paths of the test's own, and returns them with a writer of settings files.
func settingsDirs(t *testing.T) (root, home string, put func(path, data string)) {
	root, home, etc := t.TempDir(), t.TempDir(), t.TempDir()
	claudeManaged, geminiSystem = filepath.Join(etc, "managed.json"), filepath.Join(etc, "gemini.json")
	t.Cleanup(func() {
		claudeManaged, geminiSystem = "/etc/claude-code/managed-settings.json", "/etc/gemini-cli/settings.json"
	})
	t.Setenv("CODEX_HOME", "")
	put = func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, home, put
}

func TestHooksOff(t *testing.T) {
	root, home, put := settingsDirs(t)
	check := func(what, agent, want string) {
		t.Helper()
		got := HooksOff(agent, root, home)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%s: HooksOff(%s) = %q, want %q", what, agent, got, want)
		}
	}
	for _, a := range []string{"claude", "codex", "gemini", "amp"} {
		check("no settings", a, "")
	}

	put(filepath.Join(home, ".claude", "settings.json"), `{"disableAllHooks": true}`)
	check("claude user", "claude", "disableAllHooks")
	put(filepath.Join(root, ".claude", "settings.json"), `{"disableAllHooks": false, "hooks": {}}`)
	check("the project's false overrides the user's true", "claude", "")
	put(filepath.Join(root, ".claude", "settings.local.json"), `{"disableAllHooks": true}`)
	check("local overrides project", "claude", "settings.local.json sets disableAllHooks")
	put(filepath.Join(root, ".claude", "settings.json"), `{"hooks": {}}`)
	put(filepath.Join(root, ".claude", "settings.local.json"), "{\n  // for now\n  \"disableAllHooks\": false\n}\n")
	check("a file claude ignores (not valid JSON) sets nothing: the user's true decides", "claude", filepath.Join(home, ".claude", "settings.json")+" sets disableAllHooks")
	put(filepath.Join(root, ".claude", "settings.json"), `{"disableAllHooks": false, "hooks": {}}`)
	put(filepath.Join(root, ".claude", "settings.local.json"), `{"disableAllHooks": true}`)
	put(claudeManaged, `{"allowManagedHooksOnly": true}`)
	check("managed", "claude", "allowManagedHooksOnly")
	put(claudeManaged, `not json`)
	check("a managed file that is no JSON is the client's to report", "claude", "settings.local.json")

	put(filepath.Join(home, ".gemini", "settings.json"), `{"hooksConfig": {"enabled": false}}`)
	check("gemini user", "gemini", "hooksConfig.enabled to false")
	put(filepath.Join(root, ".gemini", "settings.json"), `{"hooksConfig": {"enabled": true}, "hooks": {}}`)
	check("the workspace's true overrides the user's false", "gemini", "")
	put(geminiSystem, `{"hooksConfig": {"disabled": ["other", "wiggum"]}}`)
	check("disabled by name", "gemini", `"wiggum" in hooksConfig.disabled`)

	path := filepath.Join(home, ".codex", "config.toml")
	put(path, "model = \"x\"\n[features]\nother = false\n")
	check("codex other feature", "codex", "")
	put(path, "model = \"x\"\n\n[features] # comment\nhooks = false # off\n")
	check("codex table", "codex", "[features] hooks = false")
	put(path, "features.codex_hooks = false\n[projects.\"/x\"]\ntrust_level = \"trusted\"\n")
	check("codex dotted legacy name", "codex", "hooks feature off")
	put(path, "[projects.\"/x\"]\nhooks = false\n")
	check("a key of another table", "codex", "")
	t.Setenv("CODEX_HOME", filepath.Join(t.TempDir(), "codexhome"))
	check("CODEX_HOME is where codex reads its config", "codex", "")

	// Codex reads the project's .codex/config.toml too (wiggum runs it
	// with --trust), over the user's: a project file that turned the
	// hooks off was missed, and the first command ran unguarded.
	project := filepath.Join(root, ".codex", "config.toml")
	put(project, "[features]\nhooks = false\n")
	check("codex project", "codex", project+" turns the hooks feature off")
	put(filepath.Join(os.Getenv("CODEX_HOME"), "config.toml"), "[features]\nhooks = false\n")
	put(project, "[features]\nhooks = true\n")
	check("the project's true overrides the user's false", "codex", "")
	put(project, "model = \"x\"\n")
	check("a project file without the key leaves the user's", "codex", "codexhome")
}

// Claude Code 2.1 reads the managed settings' drop-in files too, and
// Gemini CLI reads settings with comments: a setting there that turns
// hooks off was missed, and the run started with the first shell
// command unguarded.
func TestHooksOffDropInsAndComments(t *testing.T) {
	root, home, put := settingsDirs(t)
	dropIns := filepath.Join(filepath.Dir(claudeManaged), "managed-settings.d")
	put(filepath.Join(dropIns, "10-base.json"), `{"disableAllHooks": false}`)
	if got := HooksOff("claude", root, home); got != "" {
		t.Fatalf("a drop-in that keeps hooks on: %q", got)
	}
	put(filepath.Join(dropIns, "20-lockdown.json"), `{"disableAllHooks": true}`)
	if got := HooksOff("claude", root, home); !strings.Contains(got, "20-lockdown.json sets disableAllHooks") {
		t.Fatalf("a managed drop-in that turns hooks off: %q", got)
	}
	put(filepath.Join(dropIns, "30-only.json"), `{"allowManagedHooksOnly": true}`)
	if got := HooksOff("claude", root, home); !strings.Contains(got, "30-only.json sets allowManagedHooksOnly") {
		t.Fatalf("a managed drop-in that allows managed hooks only: %q", got)
	}

	put(filepath.Join(root, ".gemini", "settings.json"), "{\n  // the team's settings\n  \"url\": \"http://x/*not a comment*/\", /* off for now */\n  \"hooksConfig\": {\"enabled\": false}\n}\n")
	if got := HooksOff("gemini", root, home); !strings.Contains(got, "hooksConfig.enabled to false") {
		t.Fatalf("gemini settings with comments: %q", got)
	}
}
