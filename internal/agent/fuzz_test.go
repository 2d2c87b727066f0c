package agent

import (
	"testing"
	"time"
)

// FuzzStreamLine feeds hostile output lines to the stream-json parser: it
// must never panic, and what it reports must be well formed.
func FuzzStreamLine(f *testing.F) {
	for _, l := range []string{
		`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"result","is_error":true,"result":"You've hit your limit · resets Dec 31 at 11:59pm (Mars/Olympus)"}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":-1}}`,
		`{"type":"result","result":"Claude AI usage limit reached|99999999999"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"{\"type\":\"rate_limit_event\""}]}}`,
	} {
		f.Add([]byte(l))
	}
	now := time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, line []byte) {
		p := parser{now: func() time.Time { return now }}
		events, ok := p.line(line)
		if !ok && len(events) > 0 {
			t.Fatalf("events from a line that is not stream-json: %v", events)
		}
		for _, e := range events {
			if e.Kind == "" {
				t.Fatalf("event without a kind: %+v", e)
			}
		}
		if p.limit != nil && p.limit.Message == "" {
			t.Fatalf("limit without a message: %+v", p.limit)
		}
	})
}
