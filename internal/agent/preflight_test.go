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
		file := filepath.Join(UserDir(name, home), hookFiles[name].user[0])
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(`{"hooks":{"X":[{"hooks":[{"command":"wiggum hook `+name+`"}]}]}}`), 0o644); err != nil {
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

func TestHooksNotCommitted(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	t.Setenv("CODEX_HOME", "")
	hooks := `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"wiggum hook claude"}]}]}}`
	head := map[string]string{}
	atHead := func(path string) ([]byte, bool) {
		data, ok := head[path]
		return []byte(data), ok
	}
	claude, _ := Builtin("claude")
	// Not installed at all: HooksMissing's warning, not this refusal.
	if err := HooksNotCommitted(claude, root, home, atHead); err != nil {
		t.Fatalf("no hooks anywhere: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(root, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".claude", "settings.json"), []byte(hooks), 0o644); err != nil {
		t.Fatal(err)
	}
	err := HooksNotCommitted(claude, root, home, atHead)
	if !IsUnusable(err) || !strings.Contains(err.Error(), ".claude/settings.json, which is not committed") {
		t.Fatalf("untracked settings: %v", err)
	}
	head[".claude/settings.json"] = `{"permissions":{}}`
	if err := HooksNotCommitted(claude, root, home, atHead); err == nil {
		t.Fatal("committed without the hooks: no refusal")
	}
	head[".claude/settings.json"] = hooks
	if err := HooksNotCommitted(claude, root, home, atHead); err != nil {
		t.Fatalf("committed with the hooks: %v", err)
	}
	// In the home directory they reach every worktree.
	delete(head, ".claude/settings.json")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(hooks), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := HooksNotCommitted(claude, root, home, atHead); err != nil {
		t.Fatalf("user-level hooks: %v", err)
	}
	// An agent wiggum installs no hooks for is never refused.
	amp, _ := Builtin("amp")
	if err := HooksNotCommitted(amp, root, "", atHead); err != nil {
		t.Fatal(err)
	}
}

func TestWithArgs(t *testing.T) {
	codex, _ := Builtin("codex")
	p, err := WithArgs(codex, "gpt-x", []string{"-c", "model_reasoning_effort=high"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Argv, " "); got != "codex exec --json --sandbox workspace-write --trust --dangerously-bypass-hook-trust --disable unified_exec_tty -c allow_login_shell=false --model gpt-x -c model_reasoning_effort=high -" {
		t.Fatalf("argv = %s", got)
	}
	if b, _ := Builtin("codex"); strings.Join(b.Argv, " ") != strings.Join(codex.Argv, " ") {
		t.Fatal("WithArgs changed the built-in profile")
	}
	claude, _ := Builtin("claude")
	if p, err := WithArgs(claude, "", nil); err != nil || strings.Join(p.Argv, " ") != strings.Join(claude.Argv, " ") {
		t.Fatalf("no extra arguments: %v %v", p.Argv, err)
	}
	for _, tc := range []struct {
		agent string
		arg   string
	}{
		{"claude", "--output-format=text"}, {"claude", "--input-format"}, {"codex", "--sandbox"}, {"codex", "-s"},
		{"gemini", "--approval-mode=default"}, {"gemini", "-o"}, {"amp", "--execute"},
	} {
		p, _ := Builtin(tc.agent)
		if _, err := WithArgs(p, "", []string{tc.arg}); err == nil || !strings.Contains(err.Error(), "wiggum sets") {
			t.Errorf("%s %s: err = %v", tc.agent, tc.arg, err)
		}
	}
	// codex's terminal sessions stay off, however they are asked for.
	for _, args := range [][]string{{"--enable", "unified_exec_tty"}, {"-c", "features.unified_exec_tty=true"}, {"-c", "allow_login_shell=true"}} {
		if _, err := WithArgs(codex, "", args); err == nil || !strings.Contains(err.Error(), "wiggum") {
			t.Errorf("codex %v: err = %v", args, err)
		}
	}
	// claude's flags that turn its hooks off are refused before it starts:
	// its first command would run unguarded (hunt 13).
	off := filepath.Join(t.TempDir(), "off.json")
	if err := os.WriteFile(off, []byte(`{"disableAllHooks": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--bare"}, {"--setting-sources=user"}, {"--setting-sources", "user,local"},
		{"--settings", `{"disableAllHooks": true}`}, {"--settings=" + off}} {
		if _, err := WithArgs(claude, "", args); err == nil || !strings.Contains(err.Error(), "turns claude's hooks off") {
			t.Errorf("claude %v: err = %v", args, err)
		}
	}
	for _, args := range [][]string{{"--setting-sources=project,local"}, {"--settings", `{"model": "x"}`}, {"--permission-mode", "plan"}} {
		if _, err := WithArgs(claude, "", args); err != nil {
			t.Errorf("claude %v refused: %v", args, err)
		}
	}
	amp, _ := Builtin("amp")
	if _, err := WithArgs(amp, "m", nil); err == nil {
		t.Error("amp took --model")
	}
	if _, err := WithArgs(Profile{Name: "custom", Argv: []string{"sh"}}, "m", nil); err == nil {
		t.Error("a custom agent took --model")
	}
}

func TestHooksOutdated(t *testing.T) {
	prof, err := Builtin("claude")
	if err != nil {
		t.Fatal(err)
	}
	root, home := t.TempDir(), t.TempDir()
	want := []string{"PreToolUse", "Stop", "UserPromptSubmit"}
	if w := HooksOutdated(prof, root, home, want); w != "" {
		t.Errorf("warned with no hooks at all (HooksMissing's case): %q", w)
	}
	entry := func(ev string) string {
		return `"` + ev + `":[{"hooks":[{"type":"command","command":"wiggum hook claude"}]}]`
	}
	write := func(events ...string) {
		t.Helper()
		var parts []string
		for _, ev := range events {
			parts = append(parts, entry(ev))
		}
		if err := os.MkdirAll(filepath.Join(root, ".claude"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, ".claude", "settings.json"), []byte(`{"hooks":{`+strings.Join(parts, ",")+`}}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("PreToolUse", "Stop")
	if w := HooksOutdated(prof, root, home, want); !strings.Contains(w, "miss its UserPromptSubmit hook") || !strings.Contains(w, "wiggum install --claude") {
		t.Errorf("an older install: %q", w)
	}
	write("PreToolUse", "Stop", "UserPromptSubmit")
	if w := HooksOutdated(prof, root, home, want); w != "" {
		t.Errorf("an up-to-date install: %q", w)
	}
	// The user's settings may hold the rest.
	write("PreToolUse", "Stop")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"hooks":{`+entry("UserPromptSubmit")+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if w := HooksOutdated(prof, root, home, want); w != "" {
		t.Errorf("the user's settings register the missing event: %q", w)
	}
}

// Claude Code ignores a settings file that is not valid JSON - a //
// comment or a trailing comma in it - whole, hooks included (install
// refuses to edit it for that). Such a file registering wiggum's hooks was
// counted as hooks installed: the run started, the agent's first command
// ran unguarded, and only then did the backstop stop the run. Now the run
// is refused before the agent starts and status says the file is ignored;
// a file claude reads that registers them still lets it run.
func TestHooksIgnored(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	t.Setenv("CODEX_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	claude, _ := Builtin("claude")
	put := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	atHead := func(string) ([]byte, bool) { return nil, false }
	if err := HooksIgnored(claude, root, home); err != nil {
		t.Fatalf("no settings: %v", err)
	}
	project := filepath.Join(root, ".claude", "settings.json")
	for _, bad := range []string{
		"{\n  \"hooks\": {\n  // guard\n    \"PreToolUse\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"wiggum hook claude\"}]}]\n  }\n}\n",
		"{\n  \"hooks\": {\"PreToolUse\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"wiggum hook claude\"}]}]},\n  \"env\": {\"A\": \"1\",}\n}\n",
	} {
		put(project, bad)
		err := HooksIgnored(claude, root, home)
		if !IsUnusable(err) || !strings.Contains(err.Error(), ".claude/settings.json is ignored by claude: not valid JSON (line 3)") {
			t.Errorf("settings claude ignores:\n%s\nerr = %v, want an UnusableError naming the file and line 3", bad, err)
		}
		hs := InstalledHooks(root, home, atHead)
		if len(hs) != 1 || hs[0].Agent != "claude" || len(hs[0].Files) != 0 || hs[0].Committed ||
			len(hs[0].Ignored) != 1 || hs[0].Ignored[0] != (IgnoredFile{File: ".claude/settings.json", Reason: "not valid JSON (line 3)"}) {
			t.Errorf("InstalledHooks = %+v, want claude's file listed as ignored, not as registering", hs)
		}
		if w := HooksMissing(claude, root, home); w == "" {
			t.Error("HooksMissing: hooks in a file claude ignores counted as installed")
		}
	}
	put(project, `{"hooks": {"PreToolUse": [{"hooks": [{"command": "wiggum hook claude"}]}]}}`)
	if err := HooksIgnored(claude, root, home); err != nil {
		t.Errorf("valid settings: %v", err)
	}
	if hs := InstalledHooks(root, home, atHead); len(hs) != 1 || len(hs[0].Files) != 1 || len(hs[0].Ignored) != 0 {
		t.Errorf("InstalledHooks of valid settings = %+v", hs)
	}
	// Hooks in a file claude reads run: the run may start, status still
	// names the file it ignores.
	put(project, "{\n  // mine\n  \"hooks\": {\"PreToolUse\": [{\"hooks\": [{\"command\": \"wiggum hook claude\"}]}]}\n}\n")
	put(filepath.Join(home, ".claude", "settings.json"), `{"hooks": {"PreToolUse": [{"hooks": [{"command": "wiggum hook claude"}]}]}}`)
	if err := HooksIgnored(claude, root, home); err != nil {
		t.Errorf("user settings claude reads register the hooks: %v", err)
	}
	if hs := InstalledHooks(root, home, atHead); len(hs) != 1 || !hs[0].User || len(hs[0].Ignored) != 1 {
		t.Errorf("InstalledHooks = %+v", hs)
	}
	// Other agents' files are not claude's to judge.
	codex, _ := Builtin("codex")
	if err := HooksIgnored(codex, root, home); err != nil {
		t.Errorf("codex: %v", err)
	}
}
