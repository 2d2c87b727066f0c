// Package fakemodel is a scripted model server on 127.0.0.1 that speaks the
// wire protocols of the real agent clients (Anthropic Messages, OpenAI
// Responses, Gemini generateContent, all streamed) and records every request,
// so a test can drive a real client through a fixed sequence of tool calls
// and assert what the client sent back.
package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Turn is one scripted model answer: one of Shell, Patch, WriteFile, Text
// or Status.
type Turn struct {
	// Shell asks the client to run this command with its shell tool.
	Shell string
	// Patch asks the client to apply this patch with its file-edit tool
	// (Codex's apply_patch; the other clients write the file with their
	// shell tool instead).
	Patch string
	// WriteFile asks the client to write WriteContent to this path
	// (relative to its working directory) with its file-write tool
	// (gemini's write_file).
	WriteFile, WriteContent string
	// Text is a final answer: the client's turn ends.
	Text string
	// Status answers with this HTTP error, in the body and headers the
	// client's own service sends: for 429 a usage limit; for 500 and up
	// the service failing or overloaded (Anthropic's 529 overloaded_error,
	// OpenAI's server_error, Gemini's UNAVAILABLE).
	Status int
	// Reset is when a usage limit resets (for Status 429); zero means one
	// hour from now.
	Reset time.Time
	// Agent hands a task to a subagent (Claude Code's Agent tool).
	Agent *Subagent
	// TTY runs Shell in a terminal that stays open across turns (Codex's
	// exec_command with tty), answered with a session id.
	TTY bool
	// Stdin types these characters into the terminal session the last
	// TTY turn opened (Codex's write_stdin).
	Stdin string
	// Tool calls this tool of the client's by name with Input (Claude
	// Code's tools, deferred ones included: ToolSearch, Monitor, ...).
	Tool  string
	Input map[string]any
}

// Subagent is a task handed to a subagent. The subagent's own requests -
// those whose first message holds Prompt - are answered from Turns, apart
// from the main script.
type Subagent struct {
	Prompt string
	// Background leaves the subagent running while the main agent goes
	// on (the client's default); false makes the main agent wait.
	Background bool
	// Isolation is the client's isolation mode: "" or "worktree" (a git
	// worktree of its own).
	Isolation string
	// Type is the subagent's type (a definition in .claude/agents/);
	// "" for the client's general-purpose one.
	Type  string
	Turns []Turn
}

// Request is one recorded request.
type Request struct {
	Protocol string // "anthropic", "openai", "gemini", or "" for an unknown path
	Method   string
	Path     string
	Header   http.Header // without credentials
	Body     []byte
	// Turn is the index of the scripted turn this request was answered
	// with, or -1 for a side request (token counting, titles, model list)
	// and a subagent's.
	Turn int
	// Subagent is the prompt of the subagent that sent it, if one did;
	// SubTurn is then the index of its turn.
	Subagent string
	SubTurn  int
	// Time is when the request arrived.
	Time time.Time
}

// Usage is what every scripted answer reports: fixed, so tests can assert
// that a client passed it on.
const (
	InputTokens  = 1200
	OutputTokens = 34
)

// Server plays a script of turns to whichever client calls it.
type Server struct {
	URL string // http://127.0.0.1:PORT, no trailing slash

	srv *http.Server
	ln  net.Listener

	mu    sync.Mutex
	turns []Turn
	next  int
	reqs  []Request
	seq   int
	subs  map[string]*subScript // by prompt
	// conversation: see Converse.
	conversation []Turn
}

type subScript struct {
	turns []Turn
	next  int
}

// Start listens on a random loopback port and serves until Close.
func Start(turns ...Turn) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), ln: ln, turns: turns}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server and drops open connections.
func (s *Server) Close() error { return s.srv.Close() }

// Script replaces the turns still to be played and forgets the recorded
// requests, so one server can serve several runs of a test.
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns, s.next, s.reqs, s.subs = turns, 0, nil, nil
}

// Converse makes every main request be answered by where its own
// conversation is, not by the order requests arrive: a request that
// carries n tool results gets turns[n] (past the end, a final answer).
// So several clients at once (a parallel run's agents) each play the
// whole script, and a request a client sends again after a failure gets
// the same answer, instead of taking another client's turn.
func (s *Server) Converse(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conversation = turns
}

// toolResults counts the tool results a request's conversation carries,
// in any of the three protocols: Anthropic's tool_result blocks, OpenAI
// Responses' *_call_output items, Gemini's functionResponse parts.
func toolResults(body []byte) int {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return 0
	}
	n := 0
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if t, _ := v["type"].(string); t == "tool_result" || strings.HasSuffix(t, "_call_output") {
				n++
			}
			if _, ok := v["functionResponse"]; ok {
				n++
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return n
}

// Requests returns every recorded request, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Scripted returns the requests that were answered from the script, in
// order: Scripted()[i] is the request answered with turn i.
func (s *Server) Scripted() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Turn >= 0 {
			out = append(out, r)
		}
	}
	return out
}

// Played is how many turns have been answered.
func (s *Server) Played() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// secretHeaders are left out of recordings.
var secretHeaders = map[string]bool{
	"Authorization": true, "X-Api-Key": true, "X-Goog-Api-Key": true, "Cookie": true,
}

// take records a request and, when it is a main agent request, takes the
// next turn. Past the end of the script every main request gets a final
// answer, so a client never loops on an exhausted script.
func (s *Server) take(r *http.Request, protocol string, body []byte, main bool) (Turn, int, int) {
	h := http.Header{}
	for k, v := range r.Header {
		if !secretHeaders[http.CanonicalHeaderKey(k)] {
			h[k] = v
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	rec := Request{Protocol: protocol, Method: r.Method, Path: r.URL.RequestURI(), Header: h, Body: body, Turn: -1, Time: time.Now()}
	t := Turn{Text: "done"}
	if sub, script := s.subagentOf(body); main && script != nil {
		rec.Subagent, rec.SubTurn = sub, script.next
		if script.next < len(script.turns) {
			t = script.turns[script.next]
		}
		script.next++
	} else if main && s.conversation != nil {
		rec.Turn = toolResults(body)
		if rec.Turn < len(s.conversation) {
			t = s.conversation[rec.Turn]
		}
	} else if main {
		rec.Turn = s.next
		if s.next < len(s.turns) {
			t = s.turns[s.next]
		}
		s.next++
	}
	if t.Agent != nil {
		if s.subs == nil {
			s.subs = map[string]*subScript{}
		}
		s.subs[t.Agent.Prompt] = &subScript{turns: t.Agent.Turns}
	}
	s.reqs = append(s.reqs, rec)
	return t, rec.Turn, s.seq
}

// subagentOf finds the subagent whose prompt the request's first message
// holds (Anthropic Messages: messages[0]; Gemini: contents[0]).
func (s *Server) subagentOf(body []byte) (string, *subScript) {
	if len(s.subs) == 0 {
		return "", nil
	}
	var req struct {
		Messages []json.RawMessage `json:"messages"` // Anthropic
		Contents []json.RawMessage `json:"contents"` // Gemini
	}
	if json.Unmarshal(body, &req) != nil {
		return "", nil
	}
	var first string
	switch {
	case len(req.Messages) > 0:
		first = string(req.Messages[0])
	case len(req.Contents) > 0:
		first = string(req.Contents[0])
	default:
		return "", nil
	}
	for prompt, script := range s.subs {
		if strings.Contains(first, prompt) {
			return prompt, script
		}
	}
	return "", nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/messages/count_tokens"):
		s.take(r, "anthropic", body, false)
		writeJSON(w, 200, map[string]any{"input_tokens": InputTokens})
	case strings.HasSuffix(p, "/messages"):
		s.anthropic(w, r, body)
	case strings.HasSuffix(p, "/responses"):
		s.openai(w, r, body)
	case strings.Contains(p, ":streamGenerateContent"), strings.Contains(p, ":generateContent"):
		s.gemini(w, r, body)
	case strings.Contains(p, ":countTokens"):
		s.take(r, "gemini", body, false)
		writeJSON(w, 200, map[string]any{"totalTokens": InputTokens})
	case strings.HasSuffix(p, "/models") && r.Method == http.MethodGet:
		s.take(r, "", body, false)
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{}, "models": []any{}, "has_more": false})
	default:
		s.take(r, "", body, false)
		writeJSON(w, 404, map[string]any{"error": map[string]any{"message": "fakemodel: no such endpoint " + p}})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events; a named event gets an "event:" line.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) send(name string, v any) {
	var b bytes.Buffer
	if name != "" {
		fmt.Fprintf(&b, "event: %s\n", name)
	}
	data, _ := json.Marshal(v)
	fmt.Fprintf(&b, "data: %s\n\n", data)
	_, _ = e.w.Write(b.Bytes())
	if e.f != nil {
		e.f.Flush()
	}
}

// resetOf is when a scripted usage limit resets.
func resetOf(t Turn) time.Time {
	if t.Reset.IsZero() {
		return time.Now().Add(time.Hour).Truncate(time.Second)
	}
	return t.Reset
}
