package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"
)

// geminiReq is the part of a generateContent request the server reads.
type geminiReq struct {
	GenerationConfig struct {
		ResponseMimeType   string `json:"responseMimeType"`
		ResponseJSONSchema any    `json:"responseJsonSchema"`
		ResponseSchema     any    `json:"responseSchema"`
	} `json:"generationConfig"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

// gemini answers generateContent and streamGenerateContent. A request
// offering run_shell_command is the agent's turn; gemini-cli's side
// requests (routing, next-speaker checks, summaries) get a short text.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request, body []byte) {
	var req geminiReq
	_ = json.Unmarshal(body, &req)
	main := false
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			if f.Name == "run_shell_command" {
				main = true
			}
		}
	}
	turn, _, _ := s.take(r, "gemini", body, main)
	if turn.Status >= 500 {
		status, msg := "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
		if turn.Status == 503 {
			status, msg = "UNAVAILABLE", "The model is overloaded. Please try again later."
		}
		writeJSON(w, turn.Status, map[string]any{"error": map[string]any{"code": turn.Status, "message": msg, "status": status}})
		return
	}
	if turn.Status != 0 {
		reset := resetOf(turn)
		writeJSON(w, turn.Status, map[string]any{"error": map[string]any{
			"code": turn.Status, "status": "RESOURCE_EXHAUSTED",
			"message": "Quota exceeded for quota metric 'Generate Content API requests per day' and limit 'GenerateContent request limit per day'. Please retry after " + reset.UTC().Format("2006-01-02T15:04:05Z"),
			"details": []any{
				map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
					"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests", "quotaId": "GenerateRequestsPerDayPerProjectPerModel"}}},
				map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3600s"},
			}}})
		return
	}
	var part map[string]any
	finish := "STOP"
	if a := turn.Agent; a != nil {
		part = map[string]any{"functionCall": map[string]any{"name": "invoke_agent",
			"args": map[string]any{"agent_name": "generalist", "prompt": a.Prompt}}}
	} else if turn.Tool != "" {
		part = map[string]any{"functionCall": map[string]any{"name": turn.Tool, "args": turn.Input}}
	} else if turn.Shell != "" {
		part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command",
			"args": map[string]any{"command": turn.Shell, "description": "scripted turn"}}}
	} else if turn.WriteFile != "" {
		part = map[string]any{"functionCall": map[string]any{"name": "write_file",
			"args": map[string]any{"file_path": turn.WriteFile, "content": turn.WriteContent}}}
	} else if gc := req.GenerationConfig; !main && gc.ResponseMimeType == "application/json" {
		// A side request wants JSON of a schema (the model router's
		// complexity score, the next-speaker check): give it the smallest
		// valid instance.
		schema := gc.ResponseJSONSchema
		if schema == nil {
			schema = gc.ResponseSchema
		}
		b, _ := json.Marshal(instance(schema))
		part = map[string]any{"text": string(b)}
	} else {
		part = map[string]any{"text": turn.Text}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": finish, "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": InputTokens, "candidatesTokenCount": OutputTokens,
			"totalTokenCount": InputTokens + OutputTokens},
		"modelVersion": "gemini-2.5-pro",
	}
	if !strings.Contains(r.URL.Path, ":streamGenerateContent") {
		writeJSON(w, 200, resp)
		return
	}
	if r.URL.Query().Get("alt") != "sse" {
		writeJSON(w, 200, []any{resp})
		return
	}
	startSSE(w).send("", resp)
}

// instance returns a minimal value that satisfies a JSON schema (OpenAPI or
// JSON Schema spelling): first enum value, 1 for numbers, every required
// property filled.
func instance(schema any) any {
	m, _ := schema.(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	t, _ := m["type"].(string)
	switch strings.ToLower(t) {
	case "string":
		return "x"
	case "integer", "number":
		return 1
	case "boolean":
		return false
	case "array":
		return []any{}
	}
	out := map[string]any{}
	props, _ := m["properties"].(map[string]any)
	for k, v := range props {
		out[k] = instance(v)
	}
	return out
}
