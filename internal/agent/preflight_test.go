package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPreflightCodexHooks(t *testing.T) {
	prof, err := Builtin("codex")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, hooks string
		refuse      string // "" when the run may start
	}{
		{"no hooks file", "", ""},
		{"only wiggum's", `{"hooks":{"PreToolUse":[{"matcher":"Bash|apply_patch","hooks":[{"type":"command","command":"wiggum hook codex"}]}],
			"Stop":[{"hooks":[{"type":"command","command":"/usr/local/bin/wiggum hook codex --guard always"}]}]}}`, ""},
		{"a foreign hook", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"wiggum hook codex"},{"type":"command","command":"./audit.sh"}]}]}}`,
			"not wiggum's (./audit.sh)"},
		{"a command that only mentions wiggum", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo wiggum hook"}]}]}}`,
			"not wiggum's (echo wiggum hook)"},
		{"not JSON", `{"hooks":`, "not valid hooks JSON"},
	} {
		root := t.TempDir()
		if tc.hooks != "" {
			if err := os.MkdirAll(filepath.Join(root, ".codex"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, ".codex", "hooks.json"), []byte(tc.hooks), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := Preflight(prof, root, nil)
		switch {
		case tc.refuse == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse) || !IsUnusable(err)):
			t.Errorf("%s: got %v, want an UnusableError saying %q", tc.name, err, tc.refuse)
		}
	}
}

func TestPreflightClaudeRoot(t *testing.T) {
	prof, err := Builtin("claude")
	if err != nil {
		t.Fatal(err)
	}
	err = Preflight(prof, t.TempDir(), []string{"IS_SANDBOX=1"})
	if err != nil {
		t.Fatalf("IS_SANDBOX=1 refused: %v", err)
	}
	err = Preflight(prof, t.TempDir(), []string{"IS_SANDBOX=1", "IS_SANDBOX="})
	if root := os.Geteuid() == 0; root != (err != nil) {
		t.Fatalf("as root=%v, without IS_SANDBOX: %v", root, err)
	}
	if err != nil && !strings.Contains(err.Error(), "IS_SANDBOX=1") {
		t.Fatalf("the refusal does not name the fix: %v", err)
	}
}

func TestHooksMissing(t *testing.T) {
	for _, name := range []string{"claude", "codex", "gemini"} {
		prof, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		root, home := t.TempDir(), t.TempDir()
		t.Setenv("CODEX_HOME", "")
		if w := HooksMissing(prof, root, home); !strings.Contains(w, "wiggum install --"+name) {
			t.Errorf("%s: no warning without hooks: %q", name, w)
		}
		file := hookFiles[name].user[0]
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, file)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, file), []byte(`{"hooks":{"X":[{"hooks":[{"command":"wiggum hook `+name+`"}]}]}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if w := HooksMissing(prof, root, home); w != "" {
			t.Errorf("%s: warned with the user's hooks installed: %q", name, w)
		}
	}
	if w := HooksMissing(Profile{Name: "amp"}, t.TempDir(), ""); w != "" {
		t.Errorf("an agent wiggum has no hooks for is warned about: %q", w)
	}
}
