package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

func TestTaskNotifications(t *testing.T) {
	block := func(id, file, status, summary string) string {
		return "<task-notification>\n<task-id>" + id + "</task-id>\n<tool-use-id>toolu_1</tool-use-id>\n<output-file>" + file +
			"</output-file>\n<status>" + status + "</status>\n<summary>" + summary + "</summary>\n</task-notification>"
	}
	for _, c := range []struct {
		name, prompt string
		want         []Task
	}{
		{"failed", block("b1", "/t/tasks/b1.output", "failed", `Background command "tests" failed with exit code 3`),
			[]Task{{ID: "b1", OutputFile: "/t/tasks/b1.output", Status: "failed", ExitCode: 3}}},
		{"two", block("b1", "/t/tasks/b1.output", "completed", `Background command "tests" completed (exit code 0)`) + "\n" +
			block("b2", "/t/tasks/b2.output", "failed", `Background command "x" failed with exit code 1.`),
			[]Task{{ID: "b1", OutputFile: "/t/tasks/b1.output", Status: "completed", ExitCode: -1},
				{ID: "b2", OutputFile: "/t/tasks/b2.output", Status: "failed", ExitCode: 1}}},
		{"exit not a number", block("b1", "f", "failed", "failed with exit code x"), []Task{{ID: "b1", OutputFile: "f", Status: "failed", ExitCode: -1}}},
		{"no id", block("", "f", "failed", ""), nil},
		{"unclosed", "<task-notification><task-id>b9</task-id><status>failed", []Task{{ID: "b9", ExitCode: -1}}},
		{"a person's prompt", "please fix the tests", nil},
		{"a tag with no end", "<task-notification><task-id>b9", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := taskNotifications(c.prompt); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// backgroundRun is a test command claude started in the background in
// dir: the PostToolUse that answers it at once, and the notification of
// its end with output in a file of the agent's.
type backgroundRun struct {
	t        *testing.T
	dir, id  string
	output   string // the output file
	command  string
	response []byte
}

func startBackground(t *testing.T, dir, id, command string) *backgroundRun {
	t.Helper()
	b := &backgroundRun{t: t, dir: dir, id: id, command: command,
		output: filepath.Join(t.TempDir(), "claude-0", "proj", "sess", "tasks", id+".output")}
	b.response = b.send(map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Bash",
		"tool_input":    map[string]any{"command": command, "run_in_background": true},
		"tool_response": map[string]any{"stdout": "", "stderr": "", "interrupted": false, "backgroundTaskId": id}})
	if len(b.response) != 0 {
		t.Fatalf("the background start was answered: %s", b.response)
	}
	return b
}

func (b *backgroundRun) send(m map[string]any) []byte {
	b.t.Helper()
	m["session_id"], m["cwd"] = "sess", b.dir
	data, _ := json.Marshal(m)
	var out bytes.Buffer
	Run(context.Background(), "claude", bytes.NewReader(data), &out, Options{})
	checkValidOutput(b.t, "background", out.Bytes())
	return out.Bytes()
}

// end writes the task's output and sends its notification.
func (b *backgroundRun) end(output, status, summary, outputFile string) []byte {
	b.t.Helper()
	if err := os.MkdirAll(filepath.Dir(b.output), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(b.output, []byte(output), 0o644); err != nil {
		b.t.Fatal(err)
	}
	if outputFile == "" {
		outputFile = b.output
	}
	return b.send(map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": "<task-notification>\n<task-id>" + b.id +
		"</task-id>\n<output-file>" + outputFile + "</output-file>\n<status>" + status + "</status>\n<summary>" + summary +
		"</summary>\n</task-notification>"})
}

const failingGoTest = "--- FAIL: TestX (0.00s)\n    x_test.go:9: broken\nFAIL\nFAIL\texample.com/x\t0.01s\nFAIL\n"

func TestBackgroundTestRunRollsBack(t *testing.T) {
	for _, c := range []struct{ name, command, status, summary string }{
		{"failed", "go test ./...", "failed", `Background command "tests" failed with exit code 1`},
		{"through a pipe", "go test ./... 2>&1 | tee test.log", "completed", `Background command "tests" completed (exit code 0)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := repo(t)
			st := inSession(t, dir)
			cp, err := st.Save(context.Background(), os.Getenv(layout.SessionEnv), checkpoint.SaveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b := startBackground(t, dir, "bk1", c.command)
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // broken\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out := b.end(failingGoTest, c.status, c.summary, "")
			if !bytes.Contains(out, []byte(`"hookEventName":"UserPromptSubmit"`)) || !bytes.Contains(out, []byte("wiggum: tests failed (go test)")) ||
				!bytes.Contains(out, []byte("rolled back to checkpoint")) {
				t.Fatalf("answer: %s", out)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "main.go")); string(got) != "package main\n" {
				t.Fatalf("main.go not rolled back: %q", got)
			}
			if refs := git(t, dir, "for-each-ref", "refs/wiggum/backup/"); refs == "" {
				t.Fatal("no backup ref")
			}
			if head := git(t, dir, "rev-parse", "HEAD"); head != cp.Head {
				t.Fatalf("HEAD moved: %s", head)
			}
			if _, err := os.Stat(filepath.Join(backgroundDir(dir), "bk1")); !os.IsNotExist(err) {
				t.Fatalf("the note outlived its task: %v", err)
			}
			// The same notification again (a resent prompt) finds no note.
			if out := b.end(failingGoTest, c.status, c.summary, ""); len(out) != 0 {
				t.Fatalf("judged twice: %s", out)
			}
		})
	}
}

func TestBackgroundTaskNotJudged(t *testing.T) {
	dir := repo(t)
	inSession(t, dir)
	change := func() {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // kept\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kept := func(what string, out []byte) {
		t.Helper()
		if len(out) != 0 {
			t.Fatalf("%s: answered %s", what, out)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "main.go")); string(got) != "package main // kept\n" {
			t.Fatalf("%s: main.go changed: %q", what, got)
		}
		if refs := git(t, dir, "for-each-ref", "refs/wiggum/backup/"); refs != "" {
			t.Fatalf("%s: a backup was made: %s", what, refs)
		}
	}
	change()
	// Not a test command: no note, nothing judged.
	b := startBackground(t, dir, "srv1", "npm run dev")
	kept("a dev server", b.end(failingGoTest, "failed", "failed with exit code 1", ""))
	// Killed (stopped by the agent, timed out): no verdict.
	b = startBackground(t, dir, "k1", "go test ./...")
	kept("killed", b.end(failingGoTest, "killed", `Background command "tests" was stopped`, ""))
	// Passed.
	b = startBackground(t, dir, "ok1", "go test ./...")
	kept("passed", b.end("ok  \texample.com/x\t0.01s\n", "completed", "completed with exit code 0", ""))
	// A notification naming an output file that is not the task's: its
	// content is not read (so not judged by it, nor copied anywhere).
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte(failingGoTest), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, file := range []string{secret, filepath.Join(filepath.Dir(secret), "tasks", "..", "tasks", "x.output"), "relative/tasks/p1.output"} {
		id := []string{"p1", "p2", "p1"}[i]
		b = startBackground(t, dir, id, "go test ./...")
		kept("output file "+file, b.end(failingGoTest, "completed", "completed", file))
	}
	// A task id that would climb out of the notes' directory.
	startBackground(t, dir, "../../../x", "go test ./...")
	entries, _ := os.ReadDir(backgroundDir(dir))
	for _, e := range entries {
		if strings.Contains(e.Name(), "/") || e.Name() == ".." {
			t.Fatalf("note named %q", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "x")); err == nil {
		t.Fatal("a note was written outside its directory")
	}
}

// Where wiggum never ran, a background test run leaves no note: the hook
// makes no .ralph directory there.
func TestBackgroundNoteOnlyWhereWiggumRan(t *testing.T) {
	dir := repo(t)
	startBackground(t, dir, "b1", "go test ./...")
	if _, err := os.Lstat(filepath.Join(dir, ".ralph")); !os.IsNotExist(err) {
		t.Fatalf("the hook made .ralph in a tree wiggum never ran in: %v", err)
	}
}

func TestGeminiBackgroundTestsDenied(t *testing.T) {
	dir := repo(t)
	send := func(command string, background bool) []byte {
		t.Helper()
		data, _ := json.Marshal(map[string]any{"hook_event_name": "BeforeTool", "session_id": "s", "cwd": dir, "tool_name": "run_shell_command",
			"tool_input": map[string]any{"command": command, "is_background": background}})
		var out bytes.Buffer
		Run(context.Background(), "gemini", bytes.NewReader(data), &out, Options{})
		checkValidOutput(t, "gemini background", out.Bytes())
		return out.Bytes()
	}
	if out := send("npm test", true); bytes.Contains(out, []byte("deny")) {
		t.Fatalf("denied outside a session: %s", out)
	}
	inSession(t, dir)
	if out := send("cd web && npm --prefix . test", true); !bytes.Contains(out, []byte(`"decision":"deny"`)) || !bytes.Contains(out, []byte("in the foreground")) {
		t.Fatalf("a background test run in a session: %s", out)
	}
	for _, c := range []struct {
		cmd string
		bg  bool
	}{{"npm test", false}, {"npm run dev", true}, {"python -m http.server", true}} {
		if out := send(c.cmd, c.bg); bytes.Contains(out, []byte("deny")) {
			t.Fatalf("%q (background %v) denied: %s", c.cmd, c.bg, out)
		}
	}
}

// Codex reads a patch's markers with blanks around them, and applies
// `apply_patch <<'EOF' ... EOF` given to its shell as a patch of its own:
// both wrote into .ralph/wiggum past the guard. A file tool's path that
// leads through a symbolic link into the state is judged where it leads.
func TestStateWritesByOtherRoads(t *testing.T) {
	dir := repo(t)
	inSession(t, dir)
	send := func(agent string, m map[string]any) []byte {
		t.Helper()
		m["hook_event_name"], m["session_id"], m["cwd"] = "PreToolUse", "s", dir
		data, _ := json.Marshal(m)
		var out bytes.Buffer
		Run(context.Background(), agent, bytes.NewReader(data), &out, Options{})
		checkValidOutput(t, agent, out.Bytes())
		return out.Bytes()
	}
	indented := "*** Begin Patch\n *** Add File: .ralph/wiggum/evil.txt\n+x\n *** End Patch\n"
	if out := send("codex", map[string]any{"tool_name": "apply_patch", "tool_input": map[string]any{"command": indented}}); !bytes.Contains(out, []byte("deny")) {
		t.Errorf("an indented patch marker: %s", out)
	}
	heredoc := "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: .ralph/wiggum/checkpoint.json\n*** End Patch\nEOF"
	if out := send("codex", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": heredoc}}); !bytes.Contains(out, []byte("deny")) {
		t.Errorf("apply_patch through the shell: %s", out)
	}
	if err := os.Symlink(filepath.Join(dir, ".ralph", "wiggum"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"link/checkpoint.json", filepath.Join(dir, "link", "new.json")} {
		if out := send("claude", map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": p, "content": "{}"}}); !bytes.Contains(out, []byte("symbolic link")) {
			t.Errorf("a write through a link into the state (%s): %s", p, out)
		}
	}
	if out := send("claude", map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": "notes.md", "content": "x"}}); len(out) != 0 {
		t.Errorf("an ordinary write: %s", out)
	}
}

// Codex applies `cd DIR && apply_patch <<'EOF'` itself, and a patch given
// with its exec tool's workdir, with the paths taken in that directory:
// judged from the session's directory, "wiggum/evil.json" after
// `cd .ralph` was allowed and written into wiggum's state. A patch whose
// directory cannot be read is denied.
func TestPatchPathsInTheirDirectory(t *testing.T) {
	dir := repo(t)
	inSession(t, dir)
	send := func(m map[string]any) []byte {
		t.Helper()
		m["hook_event_name"], m["session_id"], m["cwd"] = "PreToolUse", "s", dir
		data, _ := json.Marshal(m)
		var out bytes.Buffer
		Run(context.Background(), "codex", bytes.NewReader(data), &out, Options{})
		checkValidOutput(t, "codex", out.Bytes())
		return out.Bytes()
	}
	patch := func(path string) string {
		return "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: " + path + "\n+{}\n*** End Patch\nEOF"
	}
	for _, tc := range []struct {
		name    string
		input   map[string]any
		allowed bool
	}{
		{"cd", map[string]any{"command": "cd .ralph && " + patch("wiggum/evil.json")}, false},
		{"cd quoted", map[string]any{"command": `cd ".ralph/wiggum" && ` + patch("checkpoint.json")}, false},
		{"cd absolute", map[string]any{"command": "cd " + filepath.Join(dir, ".ralph") + " && " + patch("wiggum/evil.json")}, false},
		{"workdir", map[string]any{"command": patch("wiggum/checkpoint.json"), "workdir": ".ralph"}, false},
		{"workdir and cd", map[string]any{"command": "cd wiggum && " + patch("checkpoint.json"), "workdir": ".ralph"}, false},
		{"unplaced", map[string]any{"command": "cd $(echo .ralph) && " + patch("wiggum/evil.json")}, false},
		{"cd elsewhere", map[string]any{"command": "cd src && " + patch("wiggum/evil.json")}, true},
		{"cd out of the state", map[string]any{"command": "cd .ralph && " + patch("../notes.md")}, true},
	} {
		out := send(map[string]any{"tool_name": "Bash", "tool_input": tc.input})
		if denied := bytes.Contains(out, []byte("deny")); denied == tc.allowed {
			t.Errorf("%s: %v: %s", tc.name, tc.input, out)
		}
	}
}
