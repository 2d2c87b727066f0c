package hooks

import (
	"bytes"
	"context"
	"testing"
)

// FuzzPayload: whatever an agent sends, every adapter answers with valid
// output and never panics. Seeds live in testdata/fuzz/FuzzPayload.
func FuzzPayload(f *testing.F) {
	f.Add([]byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push"}}`))
	// A payload without cwd acts in the working directory: keep it away
	// from this repository.
	f.Chdir(f.TempDir())
	f.Fuzz(func(t *testing.T, data []byte) {
		for agent := range Adapters {
			var out bytes.Buffer
			Run(context.Background(), agent, bytes.NewReader(data), &out, Options{Guard: GuardAlways, RequireRead: true})
			checkValidOutput(t, agent, out.Bytes())
		}
	})
}

// FuzzTestRunner: recognising a test run never panics, whatever the
// command. Seeds live in testdata/fuzz/FuzzTestRunner.
func FuzzTestRunner(f *testing.F) {
	f.Add("cd src && go test ./...")
	f.Fuzz(func(t *testing.T, cmd string) {
		TestRunner(cmd)
	})
}
