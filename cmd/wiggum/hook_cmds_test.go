package main

import (
	"bytes"
	"encoding/json"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	extraCmds["jsonvalid"] = jsonValid
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
