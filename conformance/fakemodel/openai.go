package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// openaiReq is the part of a Responses request the server reads.
type openaiReq struct {
	Model string `json:"model"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// shellCall is how one Codex shell tool takes a command.
func shellCall(tool, cmd string) (string, bool) {
	var args any
	switch tool {
	case "exec_command": // unified exec, codex 0.1xx
		args = map[string]any{"cmd": cmd}
	case "shell_command":
		args = map[string]any{"command": cmd}
	case "shell":
		args = map[string]any{"command": []string{"bash", "-lc", cmd}}
	default:
		return "", false
	}
	b, _ := json.Marshal(args)
	return string(b), true
}

// openai answers POST /v1/responses, the way Codex streams a turn. A
// request offering a shell tool is the agent's turn; the shell call uses
// whichever shell tool the client offered.
func (s *Server) openai(w http.ResponseWriter, r *http.Request, body []byte) {
	var req openaiReq
	_ = json.Unmarshal(body, &req)
	tool := ""
	for _, t := range req.Tools {
		if _, ok := shellCall(t.Name, ""); ok && tool == "" {
			tool = t.Name
		}
	}
	turn, _, seq := s.take(r, "openai", body, tool != "")
	if turn.Status >= 500 {
		writeJSON(w, turn.Status, map[string]any{"error": map[string]any{"type": "server_error", "code": "server_error",
			"message": "The server had an error while processing your request. Sorry about that!"}})
		return
	}
	if turn.Status != 0 {
		reset := resetOf(turn)
		w.Header().Set("x-codex-primary-used-percent", "100")
		w.Header().Set("x-codex-primary-reset-at", strconv.FormatInt(reset.Unix(), 10))
		writeJSON(w, turn.Status, map[string]any{"error": map[string]any{
			"type": "usage_limit_reached", "message": "The usage limit has been reached", "plan_type": "plus",
			"resets_at": reset.Unix(), "resets_in_seconds": int(max(0, time.Until(reset).Seconds()))}})
		return
	}
	id := fmt.Sprintf("resp_%d", seq)
	var item map[string]any
	if turn.Patch != "" {
		item = map[string]any{"type": "custom_tool_call", "id": fmt.Sprintf("ctc_%d", seq), "call_id": fmt.Sprintf("call_%d", seq),
			"name": "apply_patch", "input": turn.Patch, "status": "completed"}
	} else if turn.Stdin != "" {
		args, _ := json.Marshal(map[string]any{"session_id": lastSessionID(body), "chars": turn.Stdin, "yield_time_ms": 2000})
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", seq), "call_id": fmt.Sprintf("call_%d", seq),
			"name": "write_stdin", "arguments": string(args), "status": "completed"}
	} else if turn.TTY && tool == "exec_command" {
		args, _ := json.Marshal(map[string]any{"cmd": turn.Shell, "tty": true, "yield_time_ms": 1000})
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", seq), "call_id": fmt.Sprintf("call_%d", seq),
			"name": tool, "arguments": string(args), "status": "completed"}
	} else if args, ok := shellCall(tool, turn.Shell); ok && turn.Shell != "" {
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", seq), "call_id": fmt.Sprintf("call_%d", seq),
			"name": tool, "arguments": args, "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", seq), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": turn.Text, "annotations": []any{}}}}
	}
	e := startSSE(w)
	e.send("response.created", map[string]any{"type": "response.created", "sequence_number": 0,
		"response": map[string]any{"id": id, "object": "response", "status": "in_progress", "model": req.Model, "output": []any{}}})
	e.send("response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item})
	e.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item})
	e.send("response.completed", map[string]any{"type": "response.completed", "sequence_number": 3,
		"response": map[string]any{"id": id, "object": "response", "status": "completed", "model": req.Model, "output": []any{item},
			"usage": map[string]any{"input_tokens": InputTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
				"total_tokens": InputTokens + OutputTokens}}})
}

var sessionIDRe = regexp.MustCompile(`session ID (\d+)`)

// lastSessionID is the terminal session id codex last reported in the
// request's tool outputs ("Process running with session ID 3"), 0 if none.
func lastSessionID(body []byte) int {
	m := sessionIDRe.FindAllSubmatch(body, -1)
	if len(m) == 0 {
		return 0
	}
	id, _ := strconv.Atoi(string(m[len(m)-1][1]))
	return id
}
