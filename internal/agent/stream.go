package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/lazyre"
)

// Event is one thing the agent did, as shown live.
type Event struct {
	Kind string // "init", "text", "tool", "result", "limit"
	Text string
	// Usage is the agent's token count so far, from the assistant messages
	// seen up to this event (cost is known only at the result); on a
	// "result" it is what the agent reported its run cost in all.
	Usage Usage
}

// Usage is what an agent run cost, when the agent reports it.
type Usage struct {
	CostUSD      float64 `json:"cost_usd,omitempty"`
	InputTokens  int     `json:"input_tokens,omitempty"`
	OutputTokens int     `json:"output_tokens,omitempty"`
	Turns        int     `json:"turns,omitempty"`
}

// Limit is a usage limit the agent hit. Reset is zero when unknown.
//
// Outage marks the other reason to wait rather than fail: the model
// service itself failed (an HTTP 5xx, "overloaded") and the client gave up
// after its own retries. The agent did nothing wrong, so the attempt is
// handled as a limit's is - rolled back, saved, not counted - but there is
// no reset time: the run backs off (see the loop).
type Limit struct {
	Message string
	Reset   time.Time
	Outage  bool
}

// MaxCostUSD bounds the cost wiggum takes from one agent run's report. A
// higher one (1e308 is valid JSON) is no real cost: taken as it is, two of
// them made the run's spending +Inf, which no event can record.
const MaxCostUSD = 1e6

// boundCost is a reported cost as wiggum counts it: at most MaxCostUSD
// (a run with --max-cost stops on it), never negative.
func boundCost(usd float64) float64 {
	switch {
	case usd > MaxCostUSD:
		return MaxCostUSD
	case usd >= 0:
		return usd
	}
	return 0 // negative or NaN
}

// streamLine is the part of a JSON-lines event wiggum reads: claude's
// stream-json, codex exec --json and gemini's stream-json share one decoder
// (their type names do not collide).
type streamLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Model   string `json:"model"`
	// An object for claude (the API message), a string for codex's error.
	Message      json.RawMessage `json:"message"`
	Result       json.RawMessage `json:"result"`
	IsError      bool            `json:"is_error"`
	TotalCostUSD *float64        `json:"total_cost_usd"`
	CostUSD      *float64        `json:"cost_usd"`
	NumTurns     int             `json:"num_turns"`
	Usage        *tokenUsage     `json:"usage"`
	// claude's result: the session's tokens so far, per model - its
	// subagents' and side requests' included, where usage is the last
	// turn's alone.
	ModelUsage map[string]modelTokens `json:"modelUsage"`
	// claude's system api_retry: the client retries a failed model request
	Attempt      int  `json:"attempt"`
	MaxRetries   int  `json:"max_retries"`
	RetryDelayMS int  `json:"retry_delay_ms"`
	ErrorStatus  *int `json:"error_status"`
	RateLimit    *struct {
		Status   string `json:"status"`
		ResetsAt int64  `json:"resetsAt"`
		Type     string `json:"rateLimitType"`
	} `json:"rate_limit_info"`

	// codex exec --json
	Item *struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Text    string `json:"text"`
	} `json:"item"`
	Error json.RawMessage `json:"error"`

	// gemini --output-format stream-json
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Stats      *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"stats"`
}

// claudeMessage is the API message in a claude assistant event.
type claudeMessage struct {
	ID string `json:"id"`
	// Model is "<synthetic>" for a message the client made itself (its
	// usage-limit or API-error notice), not the model's.
	Model   string      `json:"model"`
	Usage   *tokenUsage `json:"usage"`
	Content []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ID        string          `json:"id"`          // a tool_use's
		ToolUseID string          `json:"tool_use_id"` // a tool_result's call
	} `json:"content"`
}

type tokenUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

func (t *tokenUsage) input() int {
	return t.InputTokens + t.CacheCreationInputTokens + t.CacheReadInputTokens
}

// modelTokens is one model's entry in claude's modelUsage.
type modelTokens struct {
	InputTokens              int `json:"inputTokens"`
	OutputTokens             int `json:"outputTokens"`
	CacheReadInputTokens     int `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int `json:"cacheCreationInputTokens"`
}

// parser turns stream-json lines into events, usage and limits. Lines that
// are not stream-json events are not its business.
type parser struct {
	usage Usage
	limit *Limit
	now   func() time.Time
	// Running token count: finished messages plus the current one (claude
	// repeats a message's usage on each of its content blocks).
	done    Usage
	msgID   string
	current Usage
	// tools counts the tool calls the agent made; lastError is the last
	// error the agent reported in its event stream.
	tools  int
	shells int // of them, shell commands (what the guard hook sees)
	// shellsDone counts the shell commands whose result the stream
	// reported: their PreToolUse hooks have run by then. shellIDs are the
	// ids of the shell calls still open (claude's and gemini's results
	// name the call; codex's completed item is the command itself).
	shellsDone int
	shellIDs   map[string]bool
	lastError  string
	// offline: the agent's last word is that it waits for the model
	// service (codex: for the network; claude: retrying a failed request);
	// if it is stopped there, that was an outage.
	offline bool
	// quota: the request the client retries was refused for a quota
	// (gemini's per-minute 429), so being stopped there was a usage
	// limit, resetting at retryAt (zero when the client said no time).
	quota   bool
	retryAt time.Time
}

// shellCall notes a shell command the agent called.
func (p *parser) shellCall(id string) {
	p.shells++
	if id == "" {
		return
	}
	if p.shellIDs == nil {
		p.shellIDs = map[string]bool{}
	}
	p.shellIDs[id] = true
}

// shellResult notes the result of the call id, when it is an open shell call.
func (p *parser) shellResult(id string) {
	if p.shellIDs[id] {
		delete(p.shellIDs, id)
		p.shellsDone++
	}
}

// running is the token count so far.
func (p *parser) running() Usage {
	return Usage{InputTokens: p.done.InputTokens + p.current.InputTokens, OutputTokens: p.done.OutputTokens + p.current.OutputTokens}
}

// line parses one output line; ok is false when it is not a stream-json event.
func (p *parser) line(b []byte) (events []Event, ok bool) {
	if len(b) == 0 || b[0] != '{' {
		p.retryLine(b)
		return nil, false
	}
	var l streamLine
	if json.Unmarshal(b, &l) != nil || l.Type == "" {
		return nil, false
	}
	if l.Type != "system" && l.Type != "error" {
		// Anything but a retry notice: the client is not (or no longer)
		// waiting for the model service.
		p.offline, p.quota = false, false
	}
	switch l.Type {
	case "system", "init", "thread.started":
		if l.Type == "system" && l.Subtype == "api_retry" {
			events = append(events, p.apiRetry(l))
			break
		}
		if l.Type != "system" || l.Subtype == "init" {
			text := "session started"
			if l.Model != "" {
				text += " (" + l.Model + ")"
			}
			events = append(events, Event{Kind: "init", Text: text})
		}
	case "assistant":
		var m claudeMessage
		if json.Unmarshal(l.Message, &m) != nil {
			break
		}
		if u := m.Usage; u != nil {
			if m.ID != p.msgID {
				p.done.InputTokens += p.current.InputTokens
				p.done.OutputTokens += p.current.OutputTokens
				p.msgID = m.ID
			}
			p.current = Usage{InputTokens: u.input(), OutputTokens: u.OutputTokens}
		}
		for _, c := range m.Content {
			switch c.Type {
			case "text":
				if t := strings.TrimSpace(c.Text); t != "" {
					events = append(events, Event{Kind: "text", Text: t})
				}
				// Only the client's own notice: the model's prose may
				// speak of limits (a story about rate limiting).
				if m.Model == "<synthetic>" || len(l.Error) > 0 {
					p.checkLimitText(c.Text)
				}
			case "tool_use":
				p.tools++
				if c.Name == "Bash" || c.Name == "PowerShell" {
					p.shellCall(c.ID)
				}
				events = append(events, Event{Kind: "tool", Text: c.Name + toolDetail(c.Input), Usage: p.running()})
			}
		}
	case "rate_limit_event":
		if l.RateLimit != nil && l.RateLimit.Status == "rejected" {
			lim := &Limit{Message: "usage limit reached (" + l.RateLimit.Type + ")"}
			if l.RateLimit.ResetsAt > 0 {
				lim.Reset = time.Unix(l.RateLimit.ResetsAt, 0)
			}
			p.limit = lim
			events = append(events, Event{Kind: "limit", Text: lim.Message})
		}
	case "item.started", "item.completed":
		events = p.codexItem(l)
	case "turn.completed":
		if l.Usage != nil {
			p.usage.InputTokens += l.Usage.input()
			p.usage.OutputTokens += l.Usage.OutputTokens
			p.usage.Turns++
		}
		// codex's closing report of what the run used (exec runs one
		// turn), as claude's and gemini's result is theirs.
		events = append(events, Event{Kind: "result", Text: "turn completed", Usage: p.usage})
	case "turn.failed", "error":
		text := errorText(l.Error)
		if text == "" {
			_ = json.Unmarshal(l.Message, &text)
		}
		if text != "" && text != p.lastError {
			p.lastError = text
			p.checkLimitText(text)
			events = append(events, Event{Kind: "result", Text: errorSummary(text, ""), Usage: p.usage})
		}
		if l.Type == "turn.failed" {
			// codex's "error" events also report retries it goes on from
			// ("Reconnecting... 2/5"); only the failed turn is its last word.
			p.checkOutage(text)
		}
		// codex retrying the model service ("Reconnecting... 2/5
		// (unexpected status 503 ...)"), or, without a network, waiting
		// for one for as long as it takes ("Reconnecting... waiting for
		// network (Connection failed: ...)").
		p.offline = strings.HasPrefix(text, "Reconnecting...")
	case "tool_use":
		p.tools++
		if l.ToolName == "run_shell_command" {
			p.shellCall(l.ToolID)
		}
		events = append(events, Event{Kind: "tool", Text: l.ToolName + toolDetail(l.Parameters), Usage: p.usage})
	case "user":
		// claude's tool results come back as a user message.
		var m claudeMessage
		if json.Unmarshal(l.Message, &m) == nil {
			for _, c := range m.Content {
				if c.Type == "tool_result" {
					p.shellResult(c.ToolUseID)
				}
			}
		}
	case "tool_result":
		p.shellResult(l.ToolID)
	case "message":
		var text string
		if l.Role == "assistant" && json.Unmarshal(l.Content, &text) == nil && strings.TrimSpace(text) != "" {
			events = append(events, Event{Kind: "text", Text: strings.TrimSpace(text)})
		}
	case "result":
		if l.Stats != nil || l.Status != "" {
			events = p.geminiResult(l)
			break
		}
		var text string
		_ = json.Unmarshal(l.Result, &text)
		switch {
		case l.TotalCostUSD != nil:
			p.usage.CostUSD = boundCost(*l.TotalCostUSD)
		case l.CostUSD != nil:
			p.usage.CostUSD = boundCost(*l.CostUSD)
		}
		switch {
		case len(l.ModelUsage) > 0:
			// A session whose background subagent ended after the main
			// turn reports a second result, whose usage is that last
			// turn's alone: modelUsage counts the whole session.
			p.usage.InputTokens, p.usage.OutputTokens = 0, 0
			for _, m := range l.ModelUsage {
				p.usage.InputTokens += m.InputTokens + m.CacheReadInputTokens + m.CacheCreationInputTokens
				p.usage.OutputTokens += m.OutputTokens
			}
		case l.Usage != nil:
			p.usage.InputTokens = l.Usage.input()
			p.usage.OutputTokens = l.Usage.OutputTokens
		}
		p.usage.Turns = l.NumTurns
		summary := l.Subtype
		if l.IsError {
			// A result that is no error is the model's last answer.
			p.checkLimitText(text)
			p.lastError = text
			summary = errorSummary(text, l.Subtype)
			p.checkOutage(text)
		}
		events = append(events, Event{Kind: "result", Text: summary, Usage: p.usage})
	default:
		return nil, true
	}
	return events, true
}

// codexItem reads codex's item events: a command or file change is a tool
// call when it starts, a message when it completes.
func (p *parser) codexItem(l streamLine) []Event {
	if l.Item == nil {
		return nil
	}
	switch {
	case l.Type == "item.started" && (l.Item.Type == "command_execution" || l.Item.Type == "file_change" || l.Item.Type == "mcp_tool_call"):
		p.tools++
		if l.Item.Type == "command_execution" {
			p.shellCall("")
		}
		text := l.Item.Type
		if l.Item.Command != "" {
			text = "shell: " + clip(firstLine(l.Item.Command), 100)
		}
		return []Event{{Kind: "tool", Text: text, Usage: p.usage}}
	case l.Type == "item.completed" && l.Item.Type == "command_execution":
		p.shellsDone++
	case l.Type == "item.completed" && l.Item.Type == "agent_message":
		if t := strings.TrimSpace(l.Item.Text); t != "" {
			// The model's words, never codex's limit (an error event).
			return []Event{{Kind: "text", Text: t}}
		}
	}
	return nil
}

// geminiResult reads gemini's closing event: token counts, or the error
// that ended the run.
func (p *parser) geminiResult(l streamLine) []Event {
	if l.Stats != nil {
		p.usage.InputTokens = l.Stats.InputTokens
		p.usage.OutputTokens = l.Stats.OutputTokens
	}
	if l.Status == "error" {
		text := errorText(l.Error)
		p.lastError = text
		p.checkLimitText(text)
		p.checkOutage(text)
		return []Event{{Kind: "result", Text: errorSummary(text, ""), Usage: p.usage}}
	}
	return []Event{{Kind: "result", Text: l.Status, Usage: p.usage}}
}

// errorText reads an error that is a string or an object with a message.
func errorText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.Message
}

var (
	// Older claude: "Claude AI usage limit reached|1762952400".
	limitEpoch = lazyre.New(`usage limit reached\|([0-9]{9,11})`)
	// Newer: "You've hit your limit · resets 1:30am (Asia/Dhaka)",
	// "5-hour limit reached ∙ resets 2am", "resets Apr 23 at 4pm (America/Recife)".
	limitText     = lazyre.New(`(?i)(hit your limit|limit reached|usage limit)`)
	limitTryAgain = lazyre.New(`(?i)try again at\s+(?:([a-z]{3})[a-z]*\.?\s+([0-9]{1,2})(?:st|nd|rd|th)?,?\s+(?:[0-9]{4},?\s+)?)?([0-9]{1,2}(?::[0-9]{2})?\s*[ap]m)`)
	apiRejected   = lazyre.New(`API Error: (?:Request rejected )?\(?429\b`)
	quotaText     = lazyre.New(`(?i)exhausted your (?:daily )?(?:quota|capacity)|RESOURCE_EXHAUSTED`)
	limitReset    = lazyre.New(`(?i)resets\s+(?:([A-Z][a-z]{2})\s+([0-9]{1,2})\s+at\s+)?([0-9]{1,2})(?::([0-9]{2}))?\s*(am|pm)(?:\s*\(([^)]+)\))?`)
)

func (p *parser) checkLimitText(text string) {
	if m := limitEpoch().FindStringSubmatch(text); m != nil {
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		p.limit = &Limit{Message: "Claude usage limit reached", Reset: time.Unix(sec, 0)}
		return
	}
	lower := strings.ToLower(text)
	switch {
	case limitText().MatchString(text) && strings.Contains(lower, "reset"):
		p.limit = &Limit{Message: firstLine(text), Reset: parseReset(text, p.now())}
	case limitText().MatchString(text) && strings.Contains(lower, "try again at"):
		// codex: "You've hit your usage limit. ... or try again at 1:17 PM."
		p.limit = &Limit{Message: firstLine(text), Reset: parseReset(tryAgainAsResets(text), p.now())}
	case apiRejected().MatchString(text):
		// claude with an API key: the API's 429, after its own retries.
		p.limit = &Limit{Message: firstLine(text)}
	case quotaText().MatchString(text):
		// gemini: "You have exhausted your daily quota on this model."
		p.limit = &Limit{Message: strings.Trim(firstLine(text), "[]")}
	}
}

// outageText is how each client words the model service failing after its
// own retries: claude "API Error: 529 Overloaded" or "API Error: 500
// Internal server error"; codex "unexpected status 503 Service
// Unavailable: ...", and for a 500 "We're currently experiencing high
// demand"; gemini "[API Error: The model is overloaded...]" or the
// service's JSON with "code":500. It is read only from a client's own
// closing error, never from a tool's output.
//
// The service out of reach is the same to the run: claude "API Error:
// Connection refused ... (ECONNREFUSED)", codex "error sending request",
// gemini "fetch failed".
var outageText = lazyre.New(`(?i)(API Error: 5[0-9][0-9]\b|unexpected status 5[0-9][0-9]\b|"code":\s*5[0-9][0-9]\b|\boverloaded\b|experiencing high demand|stream disconnected before completion|"status":\s*"(UNAVAILABLE|INTERNAL)"|API Error: (Connection|Request timed out)|\bE(CONNREFUSED|CONNRESET|TIMEDOUT|NOTFOUND|AI_AGAIN|NETUNREACH|HOSTUNREACH)\b|error sending request|fetch failed)`)

// checkOutage reads a client's closing error: the model service failing
// is an outage to wait out, unless the same error is a usage limit.
func (p *parser) checkOutage(text string) {
	if p.limit != nil || !outageText().MatchString(text) {
		return
	}
	p.limit = outage(strings.Trim(firstLine(text), "[]"), "")
}

// outage is the Limit of the model service failing, in the client's words
// (clipped) and what followed them.
func outage(words, then string) *Limit {
	return &Limit{Message: "the model service is unavailable (" + clip(words, 200) + then + ")", Outage: true}
}

// apiRetry reads claude's notice that a model request failed and is
// retried ({"type":"system","subtype":"api_retry","attempt":2,
// "max_retries":10,"retry_delay_ms":1022,"error_status":529,"error":
// "overloaded"}): shown as it comes, and an outage if wiggum has to stop
// the agent while it still retries.
func (p *parser) apiRetry(l streamLine) Event {
	what := errorText(l.Error)
	if l.ErrorStatus != nil {
		what = strings.TrimSpace(fmt.Sprintf("HTTP %d %s", *l.ErrorStatus, what))
	}
	if what == "" {
		what = "no answer"
	}
	text := fmt.Sprintf("%s; retry %d of %d in %s", what, l.Attempt, l.MaxRetries,
		(time.Duration(l.RetryDelayMS) * time.Millisecond).Round(100*time.Millisecond))
	p.offline, p.lastError = true, text
	return Event{Kind: "retry", Text: "the model service failed: " + text}
}

// geminiRetry is Gemini CLI's word, on its stderr, that a model request
// failed and is retried: "Attempt 2 failed with status 503. Retrying with
// backoff...", or for a per-minute quota "Attempt 1 failed: Quota exceeded
// ..." then "... Retrying after 40673ms...".
var geminiRetry = lazyre.New(`^\s*(?:Attempt \d+ failed\b|.*\bRetrying (?:with backoff|after \d+\s*ms)\b)`)

// geminiQuota is a retried request's refusal for a quota ("You exceeded
// your current quota", "Quota exceeded for quota metric", status 429,
// RESOURCE_EXHAUSTED), and geminiRetryIn when gemini says it retries:
// "Please retry in 20.5s", "Retrying after 34922ms".
var (
	geminiQuota   = lazyre.New(`(?i)\bquota\b|RESOURCE_EXHAUSTED|status 429\b|"code":\s*429\b`)
	geminiRetryIn = lazyre.New(`(?i)(?:retry in ([0-9]+(?:\.[0-9]+)?)\s*s\b|Retrying after ([0-9]+)\s*ms\b)`)
)

// retryLine reads a line that is no event (a client's stderr): a retry
// notice marks the client as waiting for the model service, as claude's
// api_retry does - stopped there by --timeout or --idle-timeout, it had an
// outage, not a failure (its attempt was counted failed and the story
// skipped); a usage limit when the request was refused for a quota.
func (p *parser) retryLine(b []byte) {
	if len(b) > 4096 || !bytes.Contains(b, []byte("ttempt")) && !bytes.Contains(b, []byte("Retrying")) {
		return
	}
	line := strings.TrimSpace(string(b))
	if !geminiRetry().MatchString(line) {
		return
	}
	if strings.HasPrefix(line, "Attempt ") || !p.offline {
		p.lastError = line
		p.quota, p.retryAt = geminiQuota().MatchString(line), time.Time{}
	}
	// The last word on when the client retries is when the quota allows.
	if m := geminiRetryIn().FindStringSubmatch(line); m != nil {
		if m[1] != "" {
			sec, _ := strconv.ParseFloat(m[1], 64)
			p.retryAt = p.now().Add(time.Duration(sec * float64(time.Second)))
		} else {
			ms, _ := strconv.ParseInt(m[2], 10, 64)
			p.retryAt = p.now().Add(time.Duration(ms) * time.Millisecond)
		}
	}
	p.offline = true
}

// stoppedOffline is the outage of an agent wiggum stopped (--timeout,
// --idle-timeout) while it waited for the network, or its usage limit
// while it waited out a quota: not its failure.
func (p *parser) stoppedOffline() *Limit {
	if !p.offline || p.limit != nil {
		return nil
	}
	if p.quota {
		return &Limit{Message: clip(firstLine(p.lastError), 300), Reset: p.retryAt}
	}
	return outage(firstLine(p.lastError), ", until the agent was stopped")
}

// tryAgainAsResets words codex's "try again at 1:17 PM", or on another
// day "try again at Dec 2nd, 2026 4:48 PM" (which read as a reset at an
// unknown time: a wait of 15 minutes at a time, for days), as claude's
// "resets ..." that parseReset reads.
func tryAgainAsResets(text string) string {
	m := limitTryAgain().FindStringSubmatch(text)
	switch {
	case m == nil:
		return text
	case m[1] != "":
		return fmt.Sprintf("resets %s %s at %s", strings.ToUpper(m[1][:1])+strings.ToLower(m[1][1:]), m[2], m[3])
	}
	return "resets " + m[3]
}

// parseReset reads "resets [Mon D at ]H[:MM]am|pm[ (Zone)]" as the next such
// time after now, or now when the minute named has just passed; zero when
// the text has no usable time.
func parseReset(text string, now time.Time) time.Time {
	m := limitReset().FindStringSubmatch(text)
	if m == nil {
		return time.Time{}
	}
	loc := now.Location()
	if m[6] != "" {
		if l, err := time.LoadLocation(strings.TrimSpace(m[6])); err == nil {
			loc = l
		}
	}
	hour, _ := strconv.Atoi(m[3])
	minute, _ := strconv.Atoi(m[4])
	if hour < 1 || hour > 12 || minute > 59 {
		return time.Time{}
	}
	hour %= 12
	if strings.EqualFold(m[5], "pm") {
		hour += 12
	}
	n := now.In(loc)
	y, mon, d := n.Date()
	if m[1] != "" {
		mt, err := time.Parse("Jan", m[1])
		if err != nil {
			return time.Time{}
		}
		mon = mt.Month()
		d, _ = strconv.Atoi(m[2])
	}
	t := time.Date(y, mon, d, hour, minute, 0, 0, loc)
	if ago := now.Sub(t); ago >= 0 && ago < 2*time.Minute {
		// The time is to the minute, rounded down: a reset within this
		// minute or the last one is now (at the latest the minute's
		// end), not the same time tomorrow.
		if end := t.Add(time.Minute); end.After(now) {
			return end
		}
		return now
	}
	for !t.After(now) {
		if m[1] != "" {
			t = t.AddDate(1, 0, 0)
		} else {
			t = t.AddDate(0, 0, 1)
		}
	}
	return t
}

func toolDetail(input json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	for _, k := range []string{"command", "file_path", "path", "pattern", "url", "description"} {
		if v, ok := in[k].(string); ok && v != "" {
			return ": " + clip(firstLine(v), 100)
		}
	}
	return ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// String renders usage for logs.
func (u Usage) String() string {
	if u == (Usage{}) {
		return ""
	}
	return fmt.Sprintf("$%.4f, %d in / %d out tokens", u.CostUSD, u.InputTokens, u.OutputTokens)
}

// errorSummary is how a client's closing error shows: its first line, or,
// when the client gave no text (claude stopped by a signal ends with an
// empty result), the kind of error it reported, if any.
func errorSummary(text, kind string) string {
	switch {
	case text != "":
		return "error: " + firstLine(text)
	case kind != "":
		return "error (" + kind + ")"
	}
	return "error"
}
