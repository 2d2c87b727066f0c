package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// anthropicReq is the part of a Messages request the server reads.
type anthropicReq struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// anthropic answers POST /v1/messages. Only a request that offers the Bash
// tool is the agent's own turn; Claude Code's side requests (titles, quota
// probes, summaries) get a short text answer and leave the script alone.
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request, body []byte) {
	var req anthropicReq
	_ = json.Unmarshal(body, &req)
	main := false
	for _, t := range req.Tools {
		if t.Name == "Bash" {
			main = true
		}
	}
	turn, idx, seq := s.take(r, "anthropic", body, main)
	if turn.Status >= 500 {
		kind, msg := "api_error", "Internal server error"
		if turn.Status == 529 {
			kind, msg = "overloaded_error", "Overloaded"
		}
		writeJSON(w, turn.Status, map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
		return
	}
	if turn.Status != 0 {
		reset := resetOf(turn)
		w.Header().Set("anthropic-ratelimit-unified-status", "rejected")
		w.Header().Set("anthropic-ratelimit-unified-reset", strconv.FormatInt(reset.Unix(), 10))
		w.Header().Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
		w.Header().Set("retry-after", "3600")
		w.Header().Set("x-should-retry", "false")
		writeJSON(w, turn.Status, map[string]any{"type": "error", "error": map[string]any{
			"type": "rate_limit_error", "message": "This request would exceed your account's rate limit. Please try again later."}})
		return
	}
	id := fmt.Sprintf("msg_%d", seq)
	model := req.Model
	if model == "" {
		model = "claude-sonnet-4-5"
	}
	var content []any
	stop := "end_turn"
	if turn.Tool != "" {
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", seq), "name": turn.Tool, "input": turn.Input})
		stop = "tool_use"
	} else if a := turn.Agent; a != nil {
		kind := a.Type
		if kind == "" {
			kind = "general-purpose"
		}
		input := map[string]any{"description": "scripted subagent", "prompt": a.Prompt,
			"subagent_type": kind, "run_in_background": a.Background}
		if a.Isolation != "" {
			input["isolation"] = a.Isolation
		}
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", seq), "name": "Agent", "input": input})
		stop = "tool_use"
	} else if turn.Shell != "" {
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", seq), "name": "Bash",
			"input": map[string]any{"command": turn.Shell, "description": "scripted turn " + strconv.Itoa(idx)}})
		stop = "tool_use"
	} else {
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	usage := map[string]any{"input_tokens": InputTokens, "output_tokens": OutputTokens,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if !req.Stream {
		writeJSON(w, 200, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	e := startSSE(w)
	e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": InputTokens, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
	for i, c := range content {
		block := c.(map[string]any)
		if block["type"] == "tool_use" {
			input, _ := json.Marshal(block["input"])
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
				"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{
				"type": "input_json_delta", "partial_json": string(input)}})
		} else {
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{
				"type": "text_delta", "text": block["text"]}})
		}
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": OutputTokens}})
	e.send("message_stop", map[string]any{"type": "message_stop"})
}
