package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	extraCmds["jsonvalid"] = jsonValid
	extraCmds["bigpayload"] = bigPayload
}

// bigpayload FILE EVENT KIB writes a Claude Code hook payload for EVENT
// whose Bash command is KIB kibibytes long, shaped as Claude Code sends it
// (event name and cwd before tool_input).
func bigPayload(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: bigpayload FILE EVENT KIB")
	}
	kib, err := strconv.Atoi(args[2])
	if err != nil {
		ts.Fatalf("bigpayload: %v", err)
	}
	head, err := json.Marshal(map[string]string{"session_id": "s1", "cwd": ts.Getenv("WORK"), "hook_event_name": args[1], "tool_name": "Bash"})
	if err != nil {
		ts.Fatalf("bigpayload: %v", err)
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1])
	b.WriteString(`,"tool_input":{"command":"echo `)
	b.Write(bytes.Repeat([]byte("x"), kib<<10))
	b.WriteString(`"}}`)
	if err := os.WriteFile(ts.MkAbs(args[0]), b.Bytes(), 0o644); err != nil {
		ts.Fatalf("bigpayload: %v", err)
	}
}

// jsonvalid FILE... requires each file to be empty or one JSON object: what
// an agent accepts from a hook.
func jsonValid(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: jsonvalid FILE...")
	}
	for _, f := range args {
		data := bytes.TrimSpace([]byte(ts.ReadFile(f)))
		var v map[string]any
		err := json.Unmarshal(data, &v)
		valid := len(data) == 0 || err == nil
		if valid == neg {
			ts.Fatalf("%s: valid=%v (%v): %q", f, valid, err, data)
		}
	}
}
