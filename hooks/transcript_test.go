package hooks

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestTranscriptExit reads a shell call's exit status from a real Codex
// 0.171 transcript, as it stood when Codex ran PostToolUse, and from the
// output record Codex writes after it.
func TestTranscriptExit(t *testing.T) {
	real := filepath.Join("testdata", "payloads", "codex_posttooluse_nosummary.rollout.jsonl")
	if got := transcriptExit(real, "call_1"); got != 1 {
		t.Errorf("call_1: %d, want 1", got)
	}
	if got := transcriptExit(real, "call_2"); got != -1 {
		t.Errorf("a call not in the transcript: %d, want -1", got)
	}
	if got := transcriptExit(real, ""); got != -1 {
		t.Errorf("no call id: %d, want -1", got)
	}
	dir := t.TempDir()
	later := filepath.Join(dir, "later.jsonl")
	lines := `{"type":"response_item","payload":{"type":"function_call_output","call_id":"call_7","output":"Chunk ID: 1\nWall time: 0.4 seconds\nProcess exited with code 101\nOutput:\nProcess exited with code 0\n"}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"call_8","status":"completed","exit_code":0}}}` + "\n"
	if err := os.WriteFile(later, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := transcriptExit(later, "call_7"); got != 101 {
		t.Errorf("from the output record: %d, want 101", got)
	}
	if got := transcriptExit(later, "call_8"); got != 0 {
		t.Errorf("a passing call: %d, want 0", got)
	}
	// A FIFO in the transcript's place is not read (it would block).
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := transcriptExit(fifo, "call_1"); got != -1 {
		t.Errorf("fifo: %d, want -1", got)
	}
	if got := transcriptExit(filepath.Join(dir, "missing"), "call_1"); got != -1 {
		t.Errorf("missing: %d, want -1", got)
	}
}
