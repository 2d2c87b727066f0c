package hooks

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// A test run that fails in a subagent (Claude Code's Agent tool) rolls
// the tree back to the checkpoint: the main conversation's work since
// then goes with the subagent's. wiggum's answer to that tool call
// reaches only the subagent, whose hand-back need not mention it; the
// main agent went on believing its files were there, and the story was
// committed without them. So the rollback leaves a notice for the
// conversation, and the main agent's next shell tool call's answer
// (PostToolUse) carries it - or, when it stops first, its Stop hook
// keeps it going with the notice as its next prompt.

// noticePath is where a conversation's notice waits.
func noticePath(root, conversation string) string {
	return filepath.Join(root, filepath.FromSlash(layout.RuntimeDir), "notices", fileName(conversation))
}

// leaveNotice tells the main conversation of ev (a subagent's tool call)
// that its work was rolled back with the subagent's.
func leaveNotice(ev Event, root, runner, checkpoint, saved string) {
	if ev.SessionID == "" {
		return
	}
	msg := fmt.Sprintf("wiggum: while a subagent of yours ran, its tests failed (%s) and the working tree was rolled back to checkpoint %s: every change since then is undone, yours made before the subagent ran included; they are saved in %s (see `wiggum recover`). Check which of your changes are gone and make them again.", runner, checkpoint, saved)
	path := noticePath(root, ev.SessionID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		_ = renameio.WriteFile(path, []byte(msg), 0o644)
	}
}

// takeNotice is the notice waiting for ev's conversation, taken (it is
// told once), when ev is the main conversation's; "" when none waits.
func takeNotice(ev Event, root string) string {
	if ev.AgentID != "" || ev.SessionID == "" || root == "" {
		return ""
	}
	path := noticePath(root, ev.SessionID)
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if os.Remove(path) != nil {
		return "" // another hook took it
	}
	return string(data)
}
