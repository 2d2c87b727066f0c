package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

func benchPayload(b *testing.B, cwd string) []byte {
	var out strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&out, "=== RUN   TestCase%d\n    case_test.go:%d: checking case %d\n--- PASS: TestCase%d (0.00s)\n", i, i%90+10, i, i)
	}
	out.WriteString("PASS\nok  \texample.com/pkg\t0.412s\n")
	data, err := json.Marshal(map[string]any{"session_id": "b", "cwd": cwd, "hook_event_name": "PostToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "go test -v ./..."}, "tool_response": map[string]any{"stdout": out.String()}})
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkRunPostToolUse is the in-process cost of the hook on a
// PostToolUse payload with 1,000 lines of passing test output.
func BenchmarkRunPostToolUse(b *testing.B) {
	data := benchPayload(b, b.TempDir())
	for b.Loop() {
		Run(context.Background(), "claude", bytes.NewReader(data), io.Discard, Options{Guard: GuardSession})
	}
}

// BenchmarkRunPreToolUse is the in-process cost of the guard on the
// benchmark command.
func BenchmarkRunPreToolUse(b *testing.B) {
	data := []byte(`{"session_id":"b","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"cd src && go build ./... && git status"}}`)
	for b.Loop() {
		Run(context.Background(), "claude", bytes.NewReader(data), io.Discard, Options{Guard: GuardAlways})
	}
}

// BenchmarkDecodeOnly is the in-process baseline: what the minimal reader
// does with the same PostToolUse payload.
func BenchmarkDecodeOnly(b *testing.B) {
	data := benchPayload(b, b.TempDir())
	for b.Loop() {
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}
