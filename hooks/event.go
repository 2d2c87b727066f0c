package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/wiggum-dev/wiggum/guard"
)

// Kind is what an agent event means, whatever the agent calls it.
type Kind int

// Event kinds.
const (
	KindUnknown     Kind = iota
	KindPreTool          // before a tool runs: the guard
	KindPostTool         // after a tool succeeded
	KindPostFailure      // after a tool failed
	KindStop             // the agent wants to stop
	KindReset            // a new conversation or prompt: forget what was read
	KindTaskDone         // commands the agent ran in the background ended (Tasks)
)

// Event is one agent hook call, normalised across agents.
type Event struct {
	Agent     string
	Name      string // the agent's own event name
	Kind      Kind
	SessionID string // the agent's conversation id
	Cwd       string
	ToolName  string // as the agent named it
	Shell     bool   // the tool runs a shell command
	Command   string
	// Dir is the directory a shell tool says it runs Command in (gemini's
	// dir_path), "" for Cwd. It only places the command for the guard:
	// which repository and session apply is Cwd's.
	Dir      string
	FilePath string   // for file tools
	Paths    []string // for a tool that edits several files (codex's apply_patch)
	// PatchUnplaced: a patch given to the shell after a command that
	// moves it where wiggum cannot tell (codex applies `cd DIR &&
	// apply_patch` in DIR): its paths cannot be judged.
	PatchUnplaced bool
	// Skill is the skill or command a skill tool loads (Claude Code's
	// Skill: "tidy", "plugin:name"; its older SlashCommand: "/tidy args").
	Skill    string
	Output   string // what the tool printed (stdout and stderr)
	ExitCode int    // -1 when the agent does not say
	// Transcript and CallID, for a shell tool whose exit status the
	// event does not carry, are where the agent recorded it: Codex's
	// session transcript and its id for the call (transcriptExit).
	Transcript, CallID string
	// AgentID names the subagent whose tool call this is (Claude Code's
	// agent_id, sent only from within a subagent); "" in the main
	// conversation.
	AgentID string
	// ToolUseID is the agent's id for the tool call (Claude Code's and
	// Codex's tool_use_id), "" when it gives none.
	ToolUseID string
	// StopHookActive is set when the agent is already continuing because
	// of a Stop hook: blocking again would trap it in a loop.
	StopHookActive bool
	// Background is the id the agent gave a shell command it started in
	// the background (Claude Code's run_in_background): its output and
	// exit status come later, in a KindTaskDone event's Tasks.
	Background string
	Tasks      []Task
	// InBackground: the shell tool is asked to run Command in the
	// background, where no later event tells how it ended (Gemini CLI's
	// is_background).
	InBackground bool
}

// Task is a background command's end as the agent tells the model of it.
type Task struct {
	ID         string
	OutputFile string // where the agent wrote the command's output
	Status     string // "completed", "failed", "killed", ...
	ExitCode   int    // -1 when not said
}

// Response is the core's answer, rendered by each agent's adapter.
type Response struct {
	Decision guard.Action // for KindPreTool
	Reason   string
	Context  string // additional context for the agent
}

// Adapter translates one agent's hook wire format.
type Adapter interface {
	Parse(data []byte) (Event, error)
	// Render returns the bytes to print; empty means "no opinion".
	Render(ev Event, r Response) []byte
}

// Adapters by the name used in `wiggum hook NAME`.
var Adapters = map[string]Adapter{
	"claude": claude{},
	"codex":  codex{},
	"gemini": gemini{},
	"cursor": cursor{},
}

// errNotObject is a payload that is not a JSON object.
var errNotObject = errors.New("payload is not a JSON object")

// decode unmarshals an agent payload into a generic JSON object - the one
// decoding pass a hook makes, and no reflection over Go structs (whose field
// tables json builds on first use in every hook process). Keys match
// exactly; a field of an unexpected type reads as empty instead of failing
// the whole event: agents add and change fields.
func decode(data []byte) (map[string]any, error) {
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, errNotObject
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// toolInput holds the tool_input fields wiggum reads.
type toolInput struct {
	Command  string
	FilePath string
	Dir      string // where a shell tool runs its command, when it says
	Skill    string // the skill a skill tool loads
}

// Payload parts are decoded as generic JSON values, once: agent payloads
// carry up to megabytes of tool output and a second decoding pass would
// double the hook's cost.

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func parseToolInput(v any) toolInput {
	if s, ok := v.(string); ok {
		// Some agents pass tool input as a JSON string holding JSON.
		inner, err := decode([]byte(s))
		if err != nil {
			return toolInput{}
		}
		v = inner
	}
	m, _ := v.(map[string]any)
	in := toolInput{Command: str(m, "command"), Skill: str(m, "skill")}
	// gemini's run_shell_command takes dir_path (directory before 0.50),
	// codex's exec_command workdir.
	for _, k := range []string{"dir_path", "directory", "workdir"} {
		if in.Dir = str(m, k); in.Dir != "" {
			break
		}
	}
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		if in.FilePath = str(m, k); in.FilePath != "" {
			break
		}
	}
	return in
}

// toolOutput reads a tool_response: an object with stdout/stderr (Claude
// Code's Bash), output/exit_code (Codex), llmContent (Gemini), or a string.
func toolOutput(v any) (out string, exit int) {
	switch v := v.(type) {
	case string:
		return v, exitFromText(v)
	case map[string]any:
		var parts []string
		for _, k := range []string{"stdout", "stderr", "output", "llmContent", "error"} {
			if s := text(v[k]); s != "" {
				parts = append(parts, s)
			}
		}
		out = strings.Join(parts, "\n")
		for _, k := range []string{"exit_code", "exitCode"} {
			if n, ok := v[k].(float64); ok {
				return out, int(n)
			}
		}
		return out, exitFromText(out)
	}
	return "", -1
}

// text reads a JSON value that should be text: a string, or anything else
// as its JSON.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

// exitLine finds "Exit code N" (Claude Code), "Exit code: N" (Codex) or
// "Exit Code: N" (Gemini CLI) at the start of a line.
var exitLine = lazy(`(?m)^Exit [Cc]ode:? (-?\d+)`)

func exitFromText(s string) int {
	head := s
	if len(head) > 4096 {
		// The marker leads the text (Claude, Codex) or follows a bounded
		// header (Gemini); the tail is scanned for Gemini's footer too.
		head = s[:2048] + "\n" + s[len(s)-2048:]
	}
	if !strings.Contains(head, "xit ") {
		return -1
	}
	m := exitLine.get().FindStringSubmatch(head)
	if m == nil {
		return -1
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return n
}

// shellTools are the tool names that run shell commands, across agents.
var shellTools = map[string]bool{
	"Bash": true, "PowerShell": true, "bash": true, "shell": true, "Shell": true,
	"run_shell_command": true, "local_shell": true, "exec_command": true, "container.exec": true,
}

// editTools are the tool names that change a file's content.
var editTools = map[string]bool{
	"Edit": true, "MultiEdit": true, "Write": true, "NotebookEdit": true,
	"replace": true, "write_file": true, "edit_file": true,
}

// readTools are the tool names that read a file.
var readTools = map[string]bool{"Read": true, "read_file": true, "read_many_files": true, "NotebookRead": true}
