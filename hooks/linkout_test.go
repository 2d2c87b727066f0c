package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestWritesThroughALinkOutOfTheTree: a link in the tree to the home
// directory (ln -s "$HOME" hl, allowed) and then claude's Write to
// hl/.gitconfig replaced the person's own git config - identity, signing
// key - while the same Write by its own name is denied (hunt 23). Where a
// path leads through a link is judged, for every file tool and the shell's
// writes alike; an ordinary file through the link is not the guard's.
func TestWritesThroughALinkOutOfTheTree(t *testing.T) {
	dir := repo(t)
	inSession(t, dir)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GOENV", "")
	gitconfig := "[user]\n\tname = Precious Person\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home, filepath.Join(dir, "hl")); err != nil {
		t.Fatal(err)
	}
	// A link to the link, and one to the config directory.
	if err := os.Symlink("hl", filepath.Join(dir, "hl2")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".config", "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, ".config"), filepath.Join(dir, "cfg")); err != nil {
		t.Fatal(err)
	}
	send := func(agent string, m map[string]any) []byte {
		t.Helper()
		m["hook_event_name"], m["session_id"], m["cwd"] = "PreToolUse", "s", dir
		if agent == "gemini" {
			m["hook_event_name"] = "BeforeTool"
		}
		data, _ := json.Marshal(m)
		var out bytes.Buffer
		Run(context.Background(), agent, bytes.NewReader(data), &out, Options{})
		checkValidOutput(t, agent, out.Bytes())
		return out.Bytes()
	}
	denied := []struct {
		agent, tool string
		input       map[string]any
	}{
		{"claude", "Write", map[string]any{"file_path": filepath.Join(dir, "hl", ".gitconfig"), "content": "[alias]\n\tst = status\n"}},
		{"claude", "Write", map[string]any{"file_path": "hl2/.gitconfig", "content": "x"}},
		{"claude", "Edit", map[string]any{"file_path": "hl/.gitconfig", "old_string": "Precious", "new_string": "Other"}},
		{"claude", "Write", map[string]any{"file_path": "cfg/git/ignore", "content": "*.go\n"}},
		{"claude", "Write", map[string]any{"file_path": "cfg/git/config", "content": "[core]\n"}},
		{"claude", "Write", map[string]any{"file_path": "cfg/go/env", "content": "GOFLAGS=-run=^$\n"}},
		{"claude", "NotebookEdit", map[string]any{"notebook_path": "hl/.gitconfig", "new_source": "x"}},
		{"gemini", "write_file", map[string]any{"file_path": filepath.Join(dir, "hl", ".gitconfig"), "content": "x"}},
		{"gemini", "replace", map[string]any{"file_path": "hl/.gitconfig", "old_string": "a", "new_string": "b"}},
		{"claude", "Bash", map[string]any{"command": "echo '[alias]' > hl/.gitconfig"}},
		{"claude", "Bash", map[string]any{"command": "printf x | tee hl2/.gitconfig"}},
		{"claude", "Bash", map[string]any{"command": "cp /dev/null cfg/git/ignore"}},
		{"claude", "Bash", map[string]any{"command": "cd hl && echo x >> .gitconfig"}},
		{"claude", "Bash", map[string]any{"command": "python3 -c \"open('hl/.gitconfig', 'w').write('')\""}},
		// Made and written through in one command: the link is judged.
		{"claude", "Bash", map[string]any{"command": "ln -s \"$HOME\" h3 && echo x > h3/.gitconfig"}},
		{"claude", "Bash", map[string]any{"command": "ln -sf ~/.config/git g3"}},
	}
	for _, c := range denied {
		out := send(c.agent, map[string]any{"tool_name": c.tool, "tool_input": c.input})
		if !bytes.Contains(out, []byte("deny")) || !bytes.Contains(out, []byte("your own")) {
			t.Errorf("%s %s %v through a link to the home directory: %s", c.agent, c.tool, c.input, out)
		}
	}
	for _, p := range []string{"hl/notes.md", "cfg/other.txt"} {
		if out := send("claude", map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": p, "content": "x"}}); len(out) != 0 {
			t.Errorf("an ordinary file through the link, %s: %s", p, out)
		}
	}
	if out := send("claude", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "ln -s main.go alias.go && echo x > hl/notes.md"}}); len(out) != 0 {
		t.Errorf("an ordinary link and write: %s", out)
	}
	if out := send("claude", map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": "hl/.gitconfig", "content": "x"}}); !bytes.Contains(out, []byte("leads through a symbolic link to "+filepath.Join(home, ".gitconfig"))) {
		t.Errorf("the deny does not say where the link leads: %s", out)
	}
	if now, _ := os.ReadFile(filepath.Join(home, ".gitconfig")); string(now) != gitconfig {
		t.Fatalf("~/.gitconfig changed: %q", now)
	}
}
