package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/jsonc"
)

// The settings people write, each as it is on disk.
var handWritten = []struct{ name, file string }{
	{"2-space inline array", "{\n  \"permissions\": {\n    \"allow\": [\"Bash(npm test)\", \"Read\"],\n    \"deny\": []\n  },\n  \"model\": \"opus\"\n}\n"},
	{"4-space", "{\n    \"model\": \"opus\",\n    \"env\": {\"A\": \"1\", \"B\": \"2\"}\n}\n"},
	{"tabs", "{\n\t\"model\": \"opus\",\n\t\"permissions\": {\n\t\t\"allow\": [\"Read\"]\n\t}\n}\n"},
	{"CRLF", "{\r\n  \"model\": \"opus\",\r\n  \"permissions\": {\r\n    \"allow\": [\r\n      \"Read\"\r\n    ]\r\n  }\r\n}\r\n"},
	{"no trailing newline", "{\n  \"model\": \"opus\"\n}"},
	{"foreign hook on the same event", "{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"Bash\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"./lint.sh\"\n          }\n        ]\n      }\n    ]\n  },\n  \"model\": \"opus\"\n}\n"},
	{"inline foreign hook", "{\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]\n  }\n}\n"},
	{"4-space CRLF foreign hook", "{\r\n    \"hooks\": {\r\n        \"PostToolUse\": [\r\n            {\r\n                \"matcher\": \"Edit\",\r\n                \"hooks\": [\r\n                    {\r\n                        \"type\": \"command\",\r\n                        \"command\": \"gofmt -l .\"\r\n                    }\r\n                ]\r\n            }\r\n        ]\r\n    }\r\n}\r\n"},
	{"one line", "{\"model\":\"opus\",\"permissions\":{\"allow\":[\"Read\"]}}\n"},
	{"{}", "{}\n"},
	{"{} without newline", "{}"},
}

// Install changes only what it adds, in the file's own layout, and
// uninstall gives back the person's bytes: inline arrays stay inline, CRLF
// stays CRLF, a file without a final newline gets none, and a {} the
// person had stays (it was removed, with its directory).
func TestInstallKeepsThePersonsBytes(t *testing.T) {
	cursor := []struct{ name, file string }{
		{"4-space CRLF", "{\r\n    \"version\": 1,\r\n    \"hooks\": {\r\n        \"stop\": [{\"command\": \"./say-done.sh\"}]\r\n    }\r\n}\r\n"},
		{"{}", "{}\n"},
	}
	for _, name := range []string{"claude", "codex", "gemini", "cursor"} {
		a := Agents[name]
		cases := handWritten
		if a.Flat {
			cases = cursor // a Cursor file holds its version first
		}
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "."+name, "settings.json")
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				orig := []byte(tc.file)
				if err := os.WriteFile(path, orig, 0o644); err != nil {
					t.Fatal(err)
				}
				if _, err := InstallAgent(a, path, AgentOptions{}); err != nil {
					t.Fatal(err)
				}
				installed := read(t, path)
				registered(t, a, installed)
				keptLines(t, tc.file, string(installed))
				if ch, err := InstallAgent(a, path, AgentOptions{}); err != nil || ch != nil {
					t.Fatalf("second install: %v %v", ch, err)
				}
				if _, err := UninstallAgent(a, path); err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(path)
				if errors.Is(err, os.ErrNotExist) {
					t.Fatal("uninstall removed a settings file the person had")
				}
				if !bytes.Equal(got, orig) {
					t.Fatalf("after uninstall:\n%q\nwant\n%q", got, orig)
				}
			})
		}
	}
}

// Gemini CLI reads its settings with // and /* */ comments: install and
// uninstall refused such a file as "not valid JSON". Now they merge into it
// and take wiggum's entries out again, keeping the person's comments where
// they were (one on a member's line stays on it when an entry follows),
// and uninstall gives back every byte. Other agents' files stay strict,
// refused with the line named.
func TestGeminiSettingsWithComments(t *testing.T) {
	a := Agents["gemini"]
	for _, tc := range []struct{ name, file string }{
		{"hunt17", "{\n  // my theme\n  \"ui\": { \"theme\": \"GitHub\" }, /* block comment */\n  \"hooks\": { \"BeforeTool\": [ { \"matcher\": \"write_file\", \"hooks\": [ { \"type\": \"command\", \"command\": \"./my-check.sh\", \"name\": \"mine\" } ] // trailing\n  } ] },\n  \"model\": { \"name\": \"gemini-2.5-pro\" } // the model\n}\n"},
		{"first line", "// team settings: keep\n{\n  \"model\": { \"name\": \"gemini-2.5-pro\" }\n}\n"},
		{"last member noted", "{\n  \"ui\": {\"theme\": \"GitHub\"}, // theme\n  \"model\": {\"name\": \"x\"} /* why: cost */\n}\n"},
		{"comment above the end", "{\n  \"model\": {\"name\": \"x\"}\n  // more to come\n}\n"},
		{"commented hooks", "{\n  \"hooks\": {\n    // ours\n    \"AfterTool\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"./fmt.sh\"}]}] // format\n  }\n}\n"},
		{"CRLF", "{\r\n  \"model\": {\"name\": \"x\"} // m\r\n}\r\n"},
		{"marks in strings", "{\n  \"url\": \"http://x/*y*/\" // the proxy, /* not closed\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".gemini", "settings.json")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			orig := []byte(tc.file)
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := InstallAgent(a, path, AgentOptions{}); err != nil {
				t.Fatal(err)
			}
			installed := read(t, path)
			registered(t, a, jsonc.Blank(installed))
			if got, want := comments(installed), comments(orig); !slices.Equal(got, want) {
				t.Fatalf("comments after install %q, want %q:\n%s", got, want, installed)
			}
			if ch, err := InstallAgent(a, path, AgentOptions{}); err != nil || ch != nil {
				t.Fatalf("second install: %v %v", ch, err)
			}
			if _, err := UninstallAgent(a, path); err != nil {
				t.Fatal(err)
			}
			if got := read(t, path); !bytes.Equal(got, orig) {
				t.Fatalf("after uninstall:\n%q\nwant\n%q", got, orig)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, []byte("{\n  \"model\": \"opus\" // mine\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallAgent(Agents["claude"], path, AgentOptions{}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("claude settings with a comment: %v, want a refusal naming line 2", err)
	}
}

// comments are the // and /* */ comments in data, in order.
func comments(data []byte) []string {
	var out []string
	plain := jsonc.Blank(data)
	for i := 0; i < len(data); i++ {
		if plain[i] == data[i] {
			continue
		}
		j := i
		for j < len(data) && plain[j] != data[j] {
			j++
		}
		out = append(out, string(data[i:j]))
		i = j
	}
	return out
}

// registered fails unless every event the agent wants holds wiggum's hook.
func registered(t *testing.T, a *Agent, data []byte) {
	t.Helper()
	var doc struct{ Hooks map[string]json.RawMessage }
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not JSON after install: %v\n%s", err, data)
	}
	for _, ev := range a.Events() {
		var groups []json.RawMessage
		if err := json.Unmarshal(doc.Hooks[ev], &groups); err != nil {
			t.Fatalf("hooks.%s: %v\n%s", ev, err, data)
		}
		found := false
		for _, raw := range groups {
			var g struct {
				Command string
				Hooks   []struct{ Command string }
			}
			_ = json.Unmarshal(raw, &g) // another tool's group, any shape
			found = found || a.Flat && g.Command == a.Command(AgentOptions{})
			for _, h := range g.Hooks {
				found = found || h.Command == a.Command(AgentOptions{})
			}
		}
		if !found {
			t.Errorf("no wiggum hook for %s:\n%s", ev, data)
		}
	}
}

// keptLines fails unless every line of before is in after, in order, as
// it was - but for a comma after a line an entry now follows (a line the
// person wrote on its own is no longer on its own when an entry joins it:
// that is the only change to it) - and every line after adds is laid out
// as the file is: its line ending, its indentation unit.
func keptLines(t *testing.T, before, after string) {
	t.Helper()
	crlf := strings.Contains(before, "\r\n")
	if crlf && strings.Count(after, "\n") != strings.Count(after, "\r\n") {
		t.Errorf("a CRLF file got LF lines:\n%q", after)
	}
	unit := detectIndent([]byte(before))
	inline := !strings.Contains(strings.TrimSpace(before), "\n")
	if strings.TrimSpace(before) == "{}" {
		return // the person's one line is now the first and the last
	}
	old, lines := strings.Split(before, "\n"), strings.Split(after, "\n")
	j := 0
	for _, line := range lines {
		if j < len(old) && (line == old[j] || line == strings.TrimSuffix(old[j], "\r")+","+strings.TrimPrefix(old[j], strings.TrimSuffix(old[j], "\r"))) {
			j++
			continue
		}
		// A list or object the person wrote on one line takes wiggum's
		// entry on that line: the line keeps every byte it had.
		if j < len(old) && inlineContainer.MatchString(old[j]) && subsequence(old[j], line) {
			j++
			continue
		}
		ind := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if !inline && strings.ReplaceAll(ind, unit, "") != "" {
			t.Errorf("added line %q is not indented by %q", line, unit)
		}
	}
	if j < len(old) && !(j == len(old)-1 && old[j] == "") {
		t.Errorf("line %d of the person's file, %q, is gone or changed:\n%s", j+1, old[j], after)
	}
}

var inlineContainer = regexp.MustCompile(`\[.*\]|\{.*\}`)

// subsequence reports whether every byte of s is in t, in order.
func subsequence(s, t string) bool {
	for i := 0; i < len(t) && s != ""; i++ {
		if t[i] == s[0] {
			s = s[1:]
		}
	}
	return s == ""
}

// A settings file install made, left with nothing of the person's, goes
// with the directory install made for it; one the person changed since
// stays.
func TestUninstallRemovesOnlyWhatInstallCreated(t *testing.T) {
	a := Agents["claude"]
	dir := filepath.Join(t.TempDir(), ".claude")
	path := filepath.Join(dir, "settings.json")
	if _, err := InstallAgent(a, path, AgentOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallAgent(a, path, AgentOptions{RequireRead: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := UninstallAgent(a, path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("install's file and directory are still there: %v", err)
	}

	// The directory was the person's: it stays.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallAgent(a, path, AgentOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := UninstallAgent(a, path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("install's file is still there: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the person's directory went: %v", err)
	}

	// The person edited the file install made: it is theirs too.
	if _, err := InstallAgent(a, path, AgentOptions{}); err != nil {
		t.Fatal(err)
	}
	edited := bytes.ReplaceAll(read(t, path), []byte("  "), []byte("\t")) // the person's editor's tabs
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := UninstallAgent(a, path); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); string(got) != "{}\n" {
		t.Fatalf("a file the person changed: %q", got)
	}
}

// FuzzRoundTrip: install then uninstall gives back any settings file that
// holds nothing of wiggum's, byte for byte.
func FuzzRoundTrip(f *testing.F) {
	for _, tc := range handWritten {
		f.Add([]byte(tc.file))
	}
	for _, name := range []string{"claude_settings.json", "gemini_settings.json", "codex_hooks.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	a := Agents["claude"]
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.Contains(data, []byte("wiggum")) || !roundTrips(data) {
			return
		}
		path := filepath.Join(t.TempDir(), "settings.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := InstallAgent(a, path, AgentOptions{}); err != nil {
			return // not a settings object: refused, as it should be
		}
		registered(t, a, read(t, path))
		if _, err := UninstallAgent(a, path); err != nil {
			t.Fatal(err)
		}
		if got := read(t, path); !bytes.Equal(got, data) {
			t.Fatalf("after uninstall:\n%q\nwant\n%q", got, data)
		}
	})
}

// roundTrips reports whether uninstall can know what install added to a
// file: an empty "hooks" object or event list install filled, or an empty
// top-level object with spaces inside, is put back as install would have
// made it ({} with no spaces) or dropped.
func roundTrips(data []byte) bool {
	var root map[string]any
	if json.Unmarshal(data, &root) != nil || len(root) == 0 && string(bytes.TrimSpace(data)) != "{}" {
		return false
	}
	h, ok := root["hooks"]
	if !ok {
		return true
	}
	hooks, ok := h.(map[string]any)
	if !ok || len(hooks) == 0 {
		return false
	}
	for _, v := range hooks {
		if list, ok := v.([]any); ok && len(list) == 0 {
			return false
		}
	}
	return true
}
