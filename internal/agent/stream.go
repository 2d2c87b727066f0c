package agent

import (
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
	// seen up to this event (cost is known only at the result).
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
type Limit struct {
	Message string
	Reset   time.Time
}

// streamLine is the part of a claude stream-json event wiggum reads.
type streamLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Model   string `json:"model"`
	Message *struct {
		ID      string      `json:"id"`
		Usage   *tokenUsage `json:"usage"`
		Content []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	} `json:"message"`
	Result       json.RawMessage `json:"result"`
	IsError      bool            `json:"is_error"`
	TotalCostUSD *float64        `json:"total_cost_usd"`
	CostUSD      *float64        `json:"cost_usd"`
	NumTurns     int             `json:"num_turns"`
	Usage        *tokenUsage     `json:"usage"`
	RateLimit    *struct {
		Status   string `json:"status"`
		ResetsAt int64  `json:"resetsAt"`
		Type     string `json:"rateLimitType"`
	} `json:"rate_limit_info"`
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
}

// running is the token count so far.
func (p *parser) running() Usage {
	return Usage{InputTokens: p.done.InputTokens + p.current.InputTokens, OutputTokens: p.done.OutputTokens + p.current.OutputTokens}
}

// line parses one output line; ok is false when it is not a stream-json event.
func (p *parser) line(b []byte) (events []Event, ok bool) {
	if len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	var l streamLine
	if json.Unmarshal(b, &l) != nil || l.Type == "" {
		return nil, false
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			text := "session started"
			if l.Model != "" {
				text += " (" + l.Model + ")"
			}
			events = append(events, Event{Kind: "init", Text: text})
		}
	case "assistant":
		if l.Message == nil {
			break
		}
		if u := l.Message.Usage; u != nil {
			if l.Message.ID != p.msgID {
				p.done.InputTokens += p.current.InputTokens
				p.done.OutputTokens += p.current.OutputTokens
				p.msgID = l.Message.ID
			}
			p.current = Usage{InputTokens: u.input(), OutputTokens: u.OutputTokens}
		}
		for _, c := range l.Message.Content {
			switch c.Type {
			case "text":
				if t := strings.TrimSpace(c.Text); t != "" {
					events = append(events, Event{Kind: "text", Text: t})
				}
				p.checkLimitText(c.Text)
			case "tool_use":
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
	case "result":
		var text string
		_ = json.Unmarshal(l.Result, &text)
		switch {
		case l.TotalCostUSD != nil:
			p.usage.CostUSD = *l.TotalCostUSD
		case l.CostUSD != nil:
			p.usage.CostUSD = *l.CostUSD
		}
		if l.Usage != nil {
			p.usage.InputTokens = l.Usage.input()
			p.usage.OutputTokens = l.Usage.OutputTokens
		}
		p.usage.Turns = l.NumTurns
		p.checkLimitText(text)
		summary := l.Subtype
		if l.IsError {
			summary = "error: " + firstLine(text)
		}
		events = append(events, Event{Kind: "result", Text: summary})
	default:
		return nil, true
	}
	return events, true
}

var (
	// Older claude: "Claude AI usage limit reached|1762952400".
	limitEpoch = lazyre.New(`usage limit reached\|([0-9]{9,11})`)
	// Newer: "You've hit your limit · resets 1:30am (Asia/Dhaka)",
	// "5-hour limit reached ∙ resets 2am", "resets Apr 23 at 4pm (America/Recife)".
	limitText  = lazyre.New(`(?i)(hit your limit|limit reached|usage limit)`)
	limitReset = lazyre.New(`(?i)resets\s+(?:([A-Z][a-z]{2})\s+([0-9]{1,2})\s+at\s+)?([0-9]{1,2})(?::([0-9]{2}))?\s*(am|pm)(?:\s*\(([^)]+)\))?`)
)

func (p *parser) checkLimitText(text string) {
	if m := limitEpoch().FindStringSubmatch(text); m != nil {
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		p.limit = &Limit{Message: "Claude usage limit reached", Reset: time.Unix(sec, 0)}
		return
	}
	if !limitText().MatchString(text) || !strings.Contains(strings.ToLower(text), "reset") {
		return
	}
	p.limit = &Limit{Message: firstLine(text), Reset: parseReset(text, p.now())}
}

// parseReset reads "resets [Mon D at ]H[:MM]am|pm[ (Zone)]" as the next such
// time after now; zero when the text has no usable time.
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
