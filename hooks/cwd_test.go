package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/session"
)

// claudeEvent is a Claude Code hook payload for a Bash call.
func claudeEvent(t *testing.T, event, cwd, command string, extra map[string]any) string {
	t.Helper()
	ev := map[string]any{"session_id": "s1", "hook_event_name": event, "tool_name": "Bash",
		"tool_input": map[string]any{"command": command}, "cwd": cwd}
	for k, v := range extra {
		ev[k] = v
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func runClaude(t *testing.T, in string, opts Options) []byte {
	t.Helper()
	var out bytes.Buffer
	Run(context.Background(), "claude", bytes.NewReader([]byte(in)), &out, opts)
	checkValidOutput(t, in, out.Bytes())
	return out.Bytes()
}

// TestGuardFollowsTheSessionOutOfItsTree: a hook of the session's whose
// payload cwd is outside the session's tree - in no repository (/), in an
// unrelated repository, in the tree's parent - still guards the session's
// tree: Claude Code keeps a cd out of the project from call to call, and
// every later command, cd'ing or -C'ing back, must not be let through.
// A failing test run there in the tree is rolled back.
func TestGuardFollowsTheSessionOutOfItsTree(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "proj")
	if err := os.Rename(repo(t), dir); err != nil {
		t.Fatal(err)
	}
	git(t, parent, "init", "-q")
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "second")
	other := repo(t)
	st := inSession(t, dir)
	t.Setenv(layout.RootEnv, dir)
	for _, cwd := range []string{"/", other, parent} {
		for _, cmd := range []string{
			"cd " + dir + " && git reset --hard HEAD~1",
			"git -C " + dir + " reset --hard HEAD~1",
			"rm -rf " + dir + "/.ralph",
		} {
			out := runClaude(t, claudeEvent(t, "PreToolUse", cwd, cmd, nil), Options{Guard: GuardSession})
			if !bytes.Contains(out, []byte(`"permissionDecision":"deny"`)) {
				t.Errorf("cwd %s: %q let through: %s", cwd, cmd, out)
			}
		}
	}

	ctx := context.Background()
	cp, err := st.Save(ctx, os.Getenv(layout.SessionEnv), checkpoint.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.go"), []byte("package broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runClaude(t, claudeEvent(t, "PostToolUseFailure", "/", "cd "+dir+" && go test ./...",
		map[string]any{"error": "Exit code 1\n--- FAIL: TestX\nFAIL\n"}), Options{})
	if _, err := os.Stat(filepath.Join(dir, "broken.go")); !os.IsNotExist(err) || !bytes.Contains(out, []byte("rolled back to checkpoint "+cp.Head[:12])) {
		t.Fatalf("a failing test run in the tree, from cwd /, was not rolled back (%v): %s", err, out)
	}
	if fs, err := session.Failures(st, ""); err != nil || len(fs) != 1 {
		t.Fatalf("failure log: %+v %v", fs, err)
	}
}

// TestTestRunInAnotherProject: a failing test run in a directory outside
// the session's tree - cd'd to, or named by the runner's own option - is
// recorded for the next attempt but rolls nothing back; one whose cd's
// end in the tree (or ended in a subshell), or in a directory holding it,
// is rolled back.
func TestTestRunInAnotherProject(t *testing.T) {
	dir := repo(t)
	lib := t.TempDir()
	st := inSession(t, dir)
	t.Setenv(layout.RootEnv, dir)
	ctx := context.Background()
	if _, err := st.Save(ctx, os.Getenv(layout.SessionEnv), checkpoint.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work.txt")
	failing := map[string]any{"error": "Exit code 1\n--- FAIL: TestX\nFAIL\n  1 failing\n"}
	for _, cmd := range []string{
		"cd " + lib + " && npm test",
		"npm --prefix " + lib + " test",
		"go -C " + lib + " test ./...",
		"cd sub && cd " + lib + " && make -C . test",
		"pnpm --dir=" + lib + " test",
		"sh -c 'cd " + lib + " && go test ./...'",
	} {
		if err := os.WriteFile(work, []byte("agent work\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := runClaude(t, claudeEvent(t, "PostToolUseFailure", dir, cmd, failing), Options{})
		if _, err := os.Stat(work); err != nil {
			t.Errorf("%q in %s rolled the session's tree back: %s", cmd, lib, out)
		}
		if !bytes.Contains(out, []byte("Nothing was rolled back: the tests ran in "+lib)) {
			t.Errorf("%q: the agent is not told why nothing was rolled back: %s", cmd, out)
		}
	}
	fs, err := session.Failures(st, "")
	if err != nil || len(fs) != 6 || !bytes.HasPrefix([]byte(fs[0].Rollback), []byte("not attempted: the tests ran in "+lib)) {
		t.Fatalf("failure log: %+v %v", fs, err)
	}
	for _, cmd := range []string{
		"(cd " + lib + " && ls); go test ./...",
		"cd " + lib + " && cd " + dir + " && go test ./...",
		"cd .. && go test ./" + filepath.Base(dir) + "/...",
		`cd "$DIR" && go test ./...`,
	} {
		if err := os.WriteFile(work, []byte("agent work\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := runClaude(t, claudeEvent(t, "PostToolUseFailure", dir, cmd, failing), Options{})
		if _, err := os.Stat(work); !os.IsNotExist(err) {
			t.Errorf("%q in the tree was not rolled back: %s", cmd, out)
		}
	}
}

// TestCompleteEventOnAnOpenStdin: an agent that writes its whole event and
// leaves stdin open gets the answer to it - a denial, a rollback - not the
// empty answer (allow) once the wait is over; a PreToolUse whose end never
// comes is asked about in a session, never allowed.
func TestCompleteEventOnAnOpenStdin(t *testing.T) {
	old := stdinWait
	stdinWait = 2 * time.Second
	defer func() { stdinWait = old }()
	dir := repo(t)
	st := inSession(t, dir)
	t.Setenv(layout.RootEnv, dir)
	if _, err := st.Save(context.Background(), os.Getenv(layout.SessionEnv), checkpoint.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	open := func(data string) []byte {
		t.Helper()
		r, w := blockingPipe(t)
		defer r.Close()
		defer w.Close() // only once the hook has answered
		if _, err := w.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		Run(context.Background(), "claude", r, &out, Options{})
		checkValidOutput(t, data, out.Bytes())
		return out.Bytes()
	}

	push := claudeEvent(t, "PreToolUse", dir, "git push origin main", nil)
	if out := open(push + "\n"); !bytes.Contains(out, []byte(`"permissionDecision":"deny"`)) {
		t.Errorf("a complete git push event on an open stdin: %s", out)
	}
	if out := open(push[:len(push)-1]); !bytes.Contains(out, []byte(`"permissionDecision":"ask"`)) || !bytes.Contains(out, []byte("did not end")) {
		t.Errorf("a git push event whose end never came: %s", out)
	}

	if err := os.WriteFile(filepath.Join(dir, "broken.go"), []byte("package broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := open(claudeEvent(t, "PostToolUseFailure", dir, "go test ./...", map[string]any{"error": "Exit code 1\n--- FAIL: TestX\nFAIL\n"}))
	if _, err := os.Stat(filepath.Join(dir, "broken.go")); !os.IsNotExist(err) || !bytes.Contains(out, []byte("rolled back")) {
		t.Fatalf("a complete failing test run on an open stdin was not rolled back (%v): %s", err, out)
	}
}

// TestRequireReadLeavesNoTrace: with --require-read, an ordinary Read in
// a repository wiggum never ran in leaves nothing git shows (no .ralph);
// where wiggum ran, its read log is excluded from git. A failed Read marks
// nothing read, and a path with a newline in it is one entry, not two.
func TestRequireReadLeavesNoTrace(t *testing.T) {
	opts := Options{RequireRead: true}
	read := func(dir, event, path string) {
		t.Helper()
		ev := map[string]any{"session_id": "conv-1", "cwd": dir, "hook_event_name": event, "tool_name": "Read",
			"tool_input": map[string]any{"file_path": path}}
		if event == "PostToolUse" {
			ev["tool_response"] = map[string]any{}
		} else {
			ev["error"] = "File does not exist."
		}
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		runClaude(t, string(data), opts)
	}
	edit := func(dir, path string) []byte {
		t.Helper()
		data, err := json.Marshal(map[string]any{"session_id": "conv-1", "cwd": dir, "hook_event_name": "PreToolUse", "tool_name": "Edit",
			"tool_input": map[string]any{"file_path": path, "old_string": "a", "new_string": "b"}})
		if err != nil {
			t.Fatal(err)
		}
		return runClaude(t, string(data), opts)
	}
	for _, used := range []bool{false, true} {
		dir := repo(t)
		if used {
			if err := os.Mkdir(filepath.Join(dir, ".ralph"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		target := filepath.Join(dir, "main.go")
		read(dir, "PostToolUseFailure", target)
		read(dir, "PostToolUse", filepath.Join(dir, "nope")+"\n"+target)
		if out := edit(dir, target); !bytes.Contains(out, []byte(`"permissionDecision":"deny"`)) {
			t.Errorf("used %v: a failed Read, or one of a path with a newline, marked %s read: %s", used, target, out)
		}
		read(dir, "PostToolUse", target)
		if out := edit(dir, target); len(out) != 0 {
			t.Errorf("used %v: the edit after a Read is denied: %s", used, out)
		}
		if st := git(t, dir, "status", "--porcelain", "--ignored=no"); st != "" {
			t.Errorf("used %v: the read log shows in git status:\n%s", used, st)
		}
		if _, err := os.Stat(filepath.Join(dir, ".ralph")); !used && !os.IsNotExist(err) {
			t.Errorf("a Read made .ralph in a repository wiggum never ran in (%v)", err)
		}
	}
}
