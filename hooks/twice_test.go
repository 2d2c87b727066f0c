package hooks

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/session"
)

// TestOneToolCallTwoWiggumHooks: wiggum's hooks installed at user level
// and project level with different flags (wiggum hook claude, and wiggum
// hook claude --guard always) both run for one tool call - Claude Code
// de-duplicates identical commands only. A failing test run was then
// rolled back by the first and "already at the checkpoint" by the
// second: two failure records, and two contradicting messages to the
// model (hunt 23). The second hook of the same call (its tool_use_id)
// now records nothing and says nothing; another call's failure is its
// own.
func TestOneToolCallTwoWiggumHooks(t *testing.T) {
	dir := repo(t)
	st := inSession(t, dir)
	if _, err := st.Save(context.Background(), os.Getenv(layout.SessionEnv), checkpoint.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.go")
	if err := os.WriteFile(broken, []byte("package broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fail := func(id string) string {
		return claudeEvent(t, "PostToolUseFailure", dir, "echo one > one.txt && npm test",
			map[string]any{"error": "Exit code 1\n--- FAIL: TestX\nFAIL\n", "tool_use_id": id})
	}
	first := runClaude(t, fail("toolu_01AbC"), Options{Guard: GuardSession})
	second := runClaude(t, fail("toolu_01AbC"), Options{Guard: GuardAlways})
	if _, err := os.Stat(broken); !os.IsNotExist(err) || !bytes.Contains(first, []byte("rolled back to checkpoint")) {
		t.Fatalf("the first hook did not roll back (%v): %s", err, first)
	}
	if len(second) != 0 {
		t.Errorf("the second wiggum hook of the same call answered: %s", second)
	}
	if fs, err := session.Failures(st, ""); err != nil || len(fs) != 1 {
		t.Fatalf("failure log after one call seen by two hooks: %+v %v", fs, err)
	}
	// Another call is another failure.
	if err := os.WriteFile(broken, []byte("package broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := runClaude(t, fail("toolu_02XyZ"), Options{}); !bytes.Contains(out, []byte("rolled back to checkpoint")) {
		t.Fatalf("a second call's failure: %s", out)
	}
	if fs, err := session.Failures(st, ""); err != nil || len(fs) != 2 {
		t.Fatalf("failure log after two calls: %+v %v", fs, err)
	}
}
