package hooks

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"syscall"
)

// transcriptWindow is how much of a transcript's end transcriptExit
// reads: the command just ended, so its record is among the last lines,
// after its output.
const transcriptWindow = 8 << 20

// transcriptExit finds the exit status of the shell call id in Codex's
// session transcript (its rollout, JSON lines), -1 when it is not there.
// Codex writes the call's item_completed record, with exit_code, before it
// runs PostToolUse; the function_call_output that follows says "Process
// exited with code N".
func transcriptExit(path, id string) int {
	if id == "" {
		return -1
	}
	// Never wait on what is not a regular file (a FIFO would hang the
	// hook until the agent's timeout).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return -1
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	off := max(fi.Size()-transcriptWindow, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return -1
	}
	item := []byte(`"id":"` + id + `"`)
	call := []byte(`"call_id":"` + id + `"`)
	for len(data) > 0 {
		line := data
		if i := bytes.LastIndexByte(data[:len(data)-1], '\n'); i >= 0 {
			line, data = data[i+1:], data[:i+1]
		} else {
			data = nil
		}
		if !bytes.Contains(line, item) && !bytes.Contains(line, call) {
			continue
		}
		var rec struct {
			Payload struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
				Output string `json:"output"`
				Item   struct {
					ID       string `json:"id"`
					ExitCode *int   `json:"exit_code"`
				} `json:"item"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		p := rec.Payload
		switch {
		case p.Type == "item_completed" && p.Item.ID == id && p.Item.ExitCode != nil:
			return *p.Item.ExitCode
		case p.Type == "function_call_output" && p.CallID == id:
			head, _, _ := strings.Cut(p.Output, "\nOutput:")
			if _, code, ok := strings.Cut(head, "Process exited with code "); ok {
				if n := exitFromText("Exit code " + strings.TrimSpace(strings.SplitN(code, "\n", 2)[0])); n >= 0 {
					return n
				}
			}
		}
	}
	return -1
}
