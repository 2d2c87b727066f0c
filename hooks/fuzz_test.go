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

// FuzzGuard: the guard never panics, and a verdict other than allow always
// carries a reason. Seeds live in testdata/fuzz/FuzzGuard.
func FuzzGuard(f *testing.F) {
	f.Add("cd src && git push")
	f.Fuzz(func(t *testing.T, cmd string) {
		d := Guard(GuardInput{Command: cmd, Cwd: "/work/repo", Root: "/work/repo", Home: "/home/agent", Branch: "main", Protected: []string{"main"}})
		if d.Action != Allow && d.Reason == "" {
			t.Fatalf("%q: %s without a reason", cmd, d.Action)
		}
		TestRunner(cmd)
	})
}
