package hooks

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/wiggum-dev/wiggum/guard"
)

// claudeIn is a Claude Code hook payload (also Codex's, and Gemini CLI's,
// whose fields carry the same names).
type claudeIn struct {
	SessionID      string // session_id
	Cwd            string // cwd
	Event          string // hook_event_name
	ToolName       string // tool_name
	ToolInput      any    // tool_input
	ToolResponse   any    // tool_response
	Error          any    // error
	StopHookActive bool   // stop_hook_active
	Prompt         string // prompt
	Transcript     string // transcript_path
	ToolUseID      string // tool_use_id
	AgentID        string // agent_id: only from within a subagent
}

func decodeClaude(data []byte) (claudeIn, error) {
	m, err := decode(data)
	if err != nil {
		return claudeIn{}, err
	}
	stop, _ := m["stop_hook_active"].(bool)
	return claudeIn{
		SessionID: str(m, "session_id"), Cwd: str(m, "cwd"), Event: str(m, "hook_event_name"),
		ToolName: str(m, "tool_name"), ToolInput: m["tool_input"], ToolResponse: m["tool_response"],
		Error: m["error"], StopHookActive: stop, Prompt: str(m, "prompt"),
		Transcript: str(m, "transcript_path"), ToolUseID: str(m, "tool_use_id"),
		AgentID: str(m, "agent_id"),
	}, nil
}

// event fills what every agent's events share.
func (in *claudeIn) event(agent string) Event {
	ev := Event{Agent: agent, Name: in.Event, SessionID: in.SessionID, Cwd: in.Cwd, ToolName: in.ToolName,
		Shell: shellTools[in.ToolName], ExitCode: -1, StopHookActive: in.StopHookActive, AgentID: in.AgentID, ToolUseID: in.ToolUseID}
	ti := parseToolInput(in.ToolInput)
	ev.Command, ev.FilePath, ev.Dir, ev.Skill = ti.Command, ti.FilePath, ti.Dir, ti.Skill
	switch {
	case skillTools[in.ToolName] && ev.Skill == "":
		ev.Skill, ev.Command = ev.Command, "" // SlashCommand's "/name args"
	case agentTools[in.ToolName]:
		m, _ := in.ToolInput.(map[string]any)
		ev.Skill = str(m, "subagent_type")
	}
	return ev
}

type claude struct{}

func (claude) Parse(data []byte) (Event, error) {
	in, err := decodeClaude(data)
	if err != nil {
		return Event{}, err
	}
	return in.claudeEvent("claude"), nil
}

// claudeEvent reads an event of Claude Code's wire format, which Codex
// shares.
func (in *claudeIn) claudeEvent(agent string) Event {
	ev := in.event(agent)
	switch in.Event {
	case "PreToolUse":
		ev.Kind = KindPreTool
	case "PostToolUse":
		ev.Kind = KindPostTool
		ev.Output, ev.ExitCode = toolOutput(in.ToolResponse)
		switch {
		case ev.ExitCode >= 0 || !ev.Shell:
		case agent == "codex":
			// Codex runs PostToolUse for failed commands too, and (0.171)
			// sends only their output: the exit status is in its
			// transcript, read when a test run's output does not settle
			// it (transcriptExit).
			ev.Transcript, ev.CallID = in.Transcript, in.ToolUseID
		default:
			// Claude Code's PostToolUse fires only when the tool succeeded.
			ev.ExitCode = 0
		}
		if r, ok := in.ToolResponse.(map[string]any); ok && ev.Shell {
			ev.Background = str(r, "backgroundTaskId")
		}
	case "PostToolUseFailure":
		ev.Kind = KindPostFailure
		ev.Output = text(in.Error)
		ev.ExitCode = exitFromText(ev.Output)
		if ev.ExitCode < 0 {
			ev.ExitCode = 1
		}
	case "Stop", "SubagentStop":
		ev.Kind = KindStop
	case "UserPromptSubmit":
		// Claude Code tells the model that a background command ended
		// in a prompt of its own, which runs this hook.
		if ev.Tasks = taskNotifications(in.Prompt); len(ev.Tasks) > 0 {
			ev.Kind = KindTaskDone
		} else {
			ev.Kind = KindReset
		}
	case "SessionStart":
		ev.Kind = KindReset
	}
	return ev
}

// taskNotifications reads the <task-notification> blocks of a prompt
// Claude Code sends when background commands end:
//
//	<task-notification>
//	<task-id>b1ok62pfn</task-id>
//	<output-file>/tmp/claude-0/.../tasks/b1ok62pfn.output</output-file>
//	<status>failed</status>
//	<summary>Background command "tests" failed with exit code 1</summary>
//	</task-notification>
func taskNotifications(prompt string) []Task {
	const open, end = "<task-notification>", "</task-notification>"
	var out []Task
	for {
		i := strings.Index(prompt, open)
		if i < 0 {
			return out
		}
		prompt = prompt[i+len(open):]
		block := prompt
		if j := strings.Index(block, end); j >= 0 {
			block, prompt = block[:j], block[j+len(end):]
		}
		t := Task{ID: element(block, "task-id"), OutputFile: element(block, "output-file"), Status: element(block, "status"), ExitCode: -1}
		// "Background command "tests" failed with exit code 1"
		if _, code, ok := strings.Cut(element(block, "summary"), "with exit code "); ok {
			if n, err := strconv.Atoi(strings.TrimRight(code, ". ")); err == nil {
				t.ExitCode = n
			}
		}
		if t.ID != "" {
			out = append(out, t)
		}
	}
}

// element is the trimmed text of the first <name>...</name> in s.
func element(s, name string) string {
	i := strings.Index(s, "<"+name+">")
	if i < 0 {
		return ""
	}
	s = s[i+len(name)+2:]
	j := strings.Index(s, "</"+name+">")
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(s[:j])
}

func (claude) Render(ev Event, r Response) []byte {
	return renderClaude(ev, r, true)
}

// renderClaude writes Claude Code's hookSpecificOutput. Codex reads the
// same shape but cannot ask, so there an ask becomes a deny that says so.
func renderClaude(ev Event, r Response, canAsk bool) []byte {
	switch ev.Kind {
	case KindPreTool:
		if r.Decision == guard.Allow {
			return nil
		}
		decision, reason := r.Decision.String(), r.Reason
		if r.Decision == guard.Ask && !canAsk {
			decision = "deny"
			reason += " (this agent cannot ask the user: run the command yourself outside the agent if it is what you want)"
		}
		return mustJSON(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": ev.Name, "permissionDecision": decision, "permissionDecisionReason": reason,
		}})
	case KindPostTool, KindPostFailure, KindTaskDone:
		if r.Context == "" {
			return nil
		}
		return mustJSON(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": ev.Name, "additionalContext": r.Context,
		}})
	case KindStop:
		// The conversation goes on with the reason as its next prompt.
		if r.Decision == guard.Deny && r.Reason != "" {
			return mustJSON(map[string]any{"decision": "block", "reason": r.Reason})
		}
	}
	return nil
}

type codex struct{}

func (codex) Parse(data []byte) (Event, error) {
	in, err := decodeClaude(data)
	if err != nil {
		return Event{}, err
	}
	ev := in.claudeEvent("codex")
	switch {
	case ev.ToolName == "apply_patch":
		// Codex's file-edit tool: tool_input.command is the patch.
		ev.Paths = patchPaths(ev.Command)
		ev.Command = ""
	case ev.Shell && strings.Contains(ev.Command, "*** Begin Patch"):
		// Codex applies `apply_patch <<'EOF' ... EOF` given to its
		// shell as a patch of its own, not as a program: its paths are
		// judged as the apply_patch tool's are (the shell command's
		// guard saw an unknown program and its here-document), in the
		// directory it applies them in: after `cd DIR &&`, DIR.
		ev.Paths = patchPaths(ev.Command)
		dir, known := patchDir(ev.Command)
		ev.PatchUnplaced = !known
		for i, p := range ev.Paths {
			if dir != "" && !strings.HasPrefix(p, "/") {
				ev.Paths[i] = dir + "/" + p
			}
		}
	}
	if ev.Kind == KindPostTool && ev.ExitCode > 0 {
		// Codex reports failed commands through PostToolUse with the exit
		// code in the tool response.
		ev.Kind = KindPostFailure
	}
	return ev, nil
}

func (codex) Render(ev Event, r Response) []byte {
	if ev.Kind == KindPostFailure {
		ev.Name = "PostToolUse"
	}
	return renderClaude(ev, r, false)
}

// patchPaths lists the files a codex patch adds, updates, deletes or moves
// to.
func patchPaths(patch string) []string {
	var out []string
	for line := range strings.Lines(patch) {
		// Codex reads a marker with blanks around it too (" *** Add
		// File: x"): with the indent, the path went unjudged.
		line = strings.TrimSpace(line)
		for _, p := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if rest, ok := strings.CutPrefix(line, p); ok && strings.TrimSpace(rest) != "" {
				out = append(out, strings.TrimSpace(rest))
			}
		}
	}
	return out
}

// patchDir is the directory, relative to where the shell command runs,
// in which codex applies the apply_patch here-document in command: ""
// for `apply_patch <<'EOF'` alone, DIR for `cd DIR && apply_patch
// <<'EOF'` (the only two forms codex applies itself). known is false
// when anything else comes before apply_patch: a cd to a computed
// directory, a second cd, a wrapper - the patch's paths would be judged
// in the wrong place. A command with no apply_patch is not a patch codex
// applies: its paths are judged where the command runs, as they were.
func patchDir(command string) (dir string, known bool) {
	at := -1
	for _, name := range []string{"apply_patch", "applypatch"} {
		if i := strings.Index(command, name+" "); i >= 0 && (at < 0 || i < at) {
			at = i
		}
		if i := strings.Index(command, name+"<<"); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 {
		return "", true
	}
	before := strings.TrimSpace(command[:at])
	if before == "" {
		return "", true
	}
	rest, ok := strings.CutSuffix(before, "&&")
	if !ok {
		return "", false
	}
	rest, ok = strings.CutPrefix(strings.TrimSpace(rest), "cd")
	if !ok || strings.TrimLeft(rest, " \t") == rest {
		return "", false
	}
	arg := strings.TrimSpace(rest)
	switch {
	case len(arg) >= 2 && arg[0] == '\'' && arg[len(arg)-1] == '\'' && !strings.Contains(arg[1:len(arg)-1], "'"):
		arg = arg[1 : len(arg)-1]
	case len(arg) >= 2 && arg[0] == '"' && arg[len(arg)-1] == '"' && !strings.ContainsAny(arg[1:len(arg)-1], "\"$`\\"):
		arg = arg[1 : len(arg)-1]
	case strings.ContainsAny(arg, " \t\n'\"$`\\;&|<>(){}*?[]~"):
		return "", false
	}
	if arg == "" || arg == "-" || strings.HasPrefix(arg, "~") {
		return "", false
	}
	return arg, true
}

type gemini struct{}

func (gemini) Parse(data []byte) (Event, error) {
	in, err := decodeClaude(data)
	if err != nil {
		return Event{}, err
	}
	ev := in.event("gemini")
	switch in.Event {
	case "BeforeTool":
		ev.Kind = KindPreTool
		if m, ok := in.ToolInput.(map[string]any); ok && ev.Shell {
			ev.InBackground, _ = m["is_background"].(bool)
		}
	case "AfterTool":
		ev.Output, ev.ExitCode = toolOutput(in.ToolResponse)
		ev.Kind = KindPostTool
		if ev.ExitCode > 0 {
			ev.Kind = KindPostFailure
		}
	case "AfterAgent":
		ev.Kind = KindStop
	case "SessionStart", "BeforeAgent":
		ev.Kind = KindReset
	}
	return ev, nil
}

// Gemini CLI parses stdout as JSON, so "no opinion" is {}. It has no
// "ask": an ask is a deny that says so.
func (gemini) Render(ev Event, r Response) []byte {
	switch ev.Kind {
	case KindPreTool:
		if r.Decision != guard.Allow {
			reason := r.Reason
			if r.Decision == guard.Ask {
				reason += " (Gemini CLI hooks cannot ask the user: run the command yourself if it is what you want)"
			}
			return mustJSON(map[string]any{"decision": "deny", "reason": reason})
		}
	case KindPostTool, KindPostFailure:
		if r.Context != "" {
			return mustJSON(map[string]any{"hookSpecificOutput": map[string]any{
				"hookEventName": ev.Name, "additionalContext": r.Context,
			}})
		}
	}
	return []byte("{}\n")
}

// cursorIn is a Cursor hook payload.
type cursorIn struct {
	ConversationID string   // conversation_id
	Event          string   // hook_event_name
	Command        string   // command
	Cwd            string   // cwd
	Output         string   // output
	FilePath       string   // file_path
	WorkspaceRoots []string // workspace_roots
	ToolName       string   // tool_name
	ExitCode       *int     // exit_code
	LoopCount      int      // loop_count
}

func decodeCursor(data []byte) (cursorIn, error) {
	m, err := decode(data)
	if err != nil {
		return cursorIn{}, err
	}
	in := cursorIn{
		ConversationID: str(m, "conversation_id"), Event: str(m, "hook_event_name"), Command: str(m, "command"),
		Cwd: str(m, "cwd"), Output: str(m, "output"), FilePath: str(m, "file_path"), ToolName: str(m, "tool_name"),
	}
	if roots, ok := m["workspace_roots"].([]any); ok {
		for _, r := range roots {
			if s, ok := r.(string); ok {
				in.WorkspaceRoots = append(in.WorkspaceRoots, s)
			}
		}
	}
	if n, ok := jsonInt(m["exit_code"]); ok {
		in.ExitCode = &n
	}
	in.LoopCount, _ = jsonInt(m["loop_count"])
	return in, nil
}

// jsonInt is a JSON number that is a whole number within int32's range (an
// exit code or a count); anything else reads as absent.
func jsonInt(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

type cursor struct{}

func (cursor) Parse(data []byte) (Event, error) {
	in, err := decodeCursor(data)
	if err != nil {
		return Event{}, err
	}
	ev := Event{Agent: "cursor", Name: in.Event, SessionID: in.ConversationID, Cwd: in.Cwd, Command: in.Command,
		FilePath: in.FilePath, ExitCode: -1, ToolName: in.ToolName}
	if ev.Cwd == "" && len(in.WorkspaceRoots) > 0 {
		ev.Cwd = in.WorkspaceRoots[0]
	}
	switch in.Event {
	case "beforeShellExecution":
		ev.Kind, ev.Shell = KindPreTool, true
	case "afterShellExecution":
		ev.Kind, ev.Shell, ev.Output = KindPostTool, true, in.Output
		if in.ExitCode != nil {
			ev.ExitCode = *in.ExitCode
		}
		if ev.ExitCode > 0 {
			ev.Kind = KindPostFailure
		}
	case "beforeReadFile":
		ev.ToolName = "Read"
	case "stop":
		ev.Kind = KindStop
		ev.StopHookActive = in.LoopCount > 0
	case "beforeSubmitPrompt", "sessionStart":
		ev.Kind = KindReset
	}
	return ev, nil
}

// Cursor answers shell checks with "permission"; older releases read the
// camelCase message fields, newer ones the snake_case, so both are sent.
func (cursor) Render(ev Event, r Response) []byte {
	if ev.Kind == KindPreTool && r.Decision != guard.Allow {
		// The person's message names wiggum once; the guard's reasons
		// mostly do already.
		msg := r.Reason
		if !strings.HasPrefix(msg, "wiggum: ") {
			msg = "wiggum: " + msg
		}
		return mustJSON(map[string]any{
			"permission": r.Decision.String(), "user_message": msg, "agent_message": r.Reason,
			"userMessage": msg, "agentMessage": r.Reason,
		})
	}
	return []byte("{}\n")
}

func mustJSON(v any) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("{}\n")
	}
	return []byte(b.String())
}
