package agent

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Lines recorded from codex 0.169 (exec --json) and gemini-cli 0.61
// (--output-format stream-json) against conformance/fakemodel.
const (
	codexRun = `{"type":"thread.started","thread_id":"01a20856-d930-72d2-9755-de411dbab562"}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo hi > f.txt'","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo hi > f.txt'","aggregated_output":"","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"all done"}}
{"type":"turn.completed","usage":{"input_tokens":2400,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":68,"reasoning_output_tokens":0}}`
	codexLimit = `{"type":"thread.started","thread_id":"01a20856-e193-7002-a808-5019d0547514"}
{"type":"turn.started"}
{"type":"error","message":"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 1:17 PM."}
{"type":"turn.failed","error":{"message":"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 1:17 PM."}}`
	geminiRun = `{"type":"init","timestamp":"2026-11-23T12:17:26.754Z","session_id":"9c85aab9","model":"auto"}
{"type":"message","timestamp":"2026-11-23T12:17:26.756Z","role":"user","content":"make f\n"}
{"type":"tool_use","timestamp":"2026-11-23T12:17:26.873Z","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"echo hi > f.txt","description":"x"}}
{"type":"tool_result","timestamp":"2026-11-23T12:17:26.961Z","tool_id":"t1","status":"success","output":""}
{"type":"message","timestamp":"2026-11-23T12:17:26.976Z","role":"assistant","content":"all done","delta":true}
{"type":"result","timestamp":"2026-11-23T12:17:26.979Z","status":"success","stats":{"total_tokens":3702,"input_tokens":3600,"output_tokens":102,"cached":0,"input":3600,"duration_ms":225,"tool_calls":1}}`
	geminiLimit = `{"type":"init","timestamp":"2026-11-23T12:22:59.089Z","session_id":"f6295fc7","model":"auto"}
{"type":"result","timestamp":"2026-11-23T12:22:59.487Z","status":"error","error":{"type":"unknown","message":"[API Error: You have exhausted your daily quota on this model.]\nPlease wait and try again later."}}`
	claudeAPI429 = `{"type":"result","subtype":"success","is_error":true,"result":"API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later.","total_cost_usd":0}`
)

func parseAll(t *testing.T, lines string) (*parser, []Event) {
	t.Helper()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.Local)
	p := &parser{now: func() time.Time { return now }}
	var all []Event
	for _, l := range strings.Split(lines, "\n") {
		evs, ok := p.line([]byte(l))
		if !ok {
			t.Fatalf("not recognised as an event: %s", l)
		}
		all = append(all, evs...)
	}
	return p, all
}

func kinds(evs []Event) string {
	var k []string
	for _, e := range evs {
		k = append(k, e.Kind)
	}
	return strings.Join(k, ",")
}

func TestCodexAndGeminiStreams(t *testing.T) {
	for _, tc := range []struct {
		name, lines, kinds string
		in, out, tools     int
	}{
		{"codex", codexRun, "init,tool,text,result", 2400, 68, 1},
		{"gemini", geminiRun, "init,tool,text,result", 3600, 102, 1},
	} {
		p, evs := parseAll(t, tc.lines)
		if got := kinds(evs); got != tc.kinds {
			t.Errorf("%s: events %s, want %s", tc.name, got, tc.kinds)
		}
		if p.usage.InputTokens != tc.in || p.usage.OutputTokens != tc.out || p.tools != tc.tools {
			t.Errorf("%s: usage %+v, %d tools; want %d in / %d out, %d tools", tc.name, p.usage, p.tools, tc.in, tc.out, tc.tools)
		}
		if p.limit != nil {
			t.Errorf("%s: a limit in a normal run: %+v", tc.name, p.limit)
		}
		if p.shells != 1 || p.shellsDone != 1 {
			t.Errorf("%s: %d shell commands counted, %d results; want 1 and 1", tc.name, p.shells, p.shellsDone)
		}
		// The closing result carries what the run used: the loop records
		// it at once, so a kill before the agent ends keeps it.
		if last := evs[len(evs)-1]; last.Kind != "result" || last.Usage != p.usage {
			t.Errorf("%s: the last event %+v does not carry the run's usage %+v", tc.name, last, p.usage)
		}
	}
}

func TestClientLimits(t *testing.T) {
	for _, tc := range []struct {
		name, lines, msg string
		reset            string // HH:MM local, or "" for unknown
	}{
		{"codex", codexLimit, "You’ve hit your usage limit", "13:17"},
		{"gemini", geminiLimit, "API Error: You have exhausted your daily quota on this model.", ""},
		{"claude-api-key", claudeAPI429, "API Error: Request rejected (429)", ""},
	} {
		p, _ := parseAll(t, tc.lines)
		if p.limit == nil {
			t.Errorf("%s: limit not recognised", tc.name)
			continue
		}
		if !strings.Contains(p.limit.Message, tc.msg) {
			t.Errorf("%s: message %q, want it to contain %q", tc.name, p.limit.Message, tc.msg)
		}
		got := ""
		if !p.limit.Reset.IsZero() {
			got = p.limit.Reset.Format("15:04")
		}
		if got != tc.reset {
			t.Errorf("%s: reset %q, want %q", tc.name, got, tc.reset)
		}
	}
}

// Closing errors recorded from claude 2.1.332, codex 0.171 and gemini-cli
// 0.61 when conformance/fakemodel answered 500, 503 or 529 (the clients'
// own retries turned off): each is an outage, not a limit or a failure.
func TestClientOutages(t *testing.T) {
	for _, tc := range []struct{ name, lines, msg string }{
		{"claude-529", `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:43113).","terminal_reason":"api_error","total_cost_usd":0}`, "API Error: 529 Overloaded"},
		{"claude-500", `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment.","terminal_reason":"api_error"}`, "API Error: 500"},
		{"codex-503", `{"type":"error","message":"unexpected status 503 Service Unavailable: The server had an error while processing your request. Sorry about that!, url: http://127.0.0.1:41547/v1/responses"}
{"type":"turn.failed","error":{"message":"unexpected status 503 Service Unavailable: The server had an error while processing your request. Sorry about that!, url: http://127.0.0.1:41547/v1/responses"}}`, "unexpected status 503"},
		{"codex-500", `{"type":"error","message":"We’re currently experiencing high demand, which may cause temporary errors."}
{"type":"turn.failed","error":{"message":"We’re currently experiencing high demand, which may cause temporary errors."}}`, "high demand"},
		{"gemini-503", `{"type":"result","timestamp":"2026-11-28T02:38:56.392Z","status":"error","error":{"type":"unknown","message":"[API Error: The model is overloaded. Please try again later.]"},"stats":{"total_tokens":1234,"input_tokens":1200,"output_tokens":34}}`, "The model is overloaded"},
		{"claude-offline", `{"type":"result","subtype":"success","is_error":true,"result":"API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)","terminal_reason":"api_error"}`, "Connection refused"},
		{"gemini-500", `{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":500,\"message\":\"An internal error has occurred.\",\"status\":\"INTERNAL\"}}]"}}`, `"code":500`},
	} {
		p, _ := parseAll(t, tc.lines)
		if p.limit == nil || !p.limit.Outage {
			t.Errorf("%s: outage not recognised: %+v", tc.name, p.limit)
			continue
		}
		if !strings.Contains(p.limit.Message, "the model service is unavailable") || !strings.Contains(p.limit.Message, tc.msg) {
			t.Errorf("%s: message %q, want the client's %q in it", tc.name, p.limit.Message, tc.msg)
		}
		if !p.limit.Reset.IsZero() {
			t.Errorf("%s: an outage has no reset time, got %v", tc.name, p.limit.Reset)
		}
	}
	// codex without a network waits for one as long as it takes: stopped
	// there (--timeout), that is an outage; once it is back, it is not.
	waiting := `{"type":"turn.started"}
{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}
{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}`
	p, _ := parseAll(t, waiting)
	if lim := p.stoppedOffline(); lim == nil || !lim.Outage || !strings.Contains(lim.Message, "waiting for network") {
		t.Errorf("codex stopped while waiting for the network: %+v", lim)
	}
	p, _ = parseAll(t, waiting+"\n"+`{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"back"}}`)
	if lim := p.stoppedOffline(); lim != nil {
		t.Errorf("codex back online, still taken for offline: %+v", lim)
	}
	p, _ = parseAll(t, `{"type":"error","message":"Reconnecting... 2/5 (unexpected status 503 Service Unavailable)"}`)
	if lim := p.stoppedOffline(); lim == nil || !strings.Contains(lim.Message, "Reconnecting... 2/5") {
		t.Errorf("codex stopped while it retries the model service: %+v", lim)
	}

	// claude retrying a failed request (its system api_retry lines,
	// recorded from claude 2.1.332 against a 529) is shown, and an outage
	// if it is stopped there; an answer after the retries is not.
	retrying := `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"retry_delay_ms":505,"error_status":529,"error":"overloaded","session_id":"50dba7dc"}
{"type":"system","subtype":"api_retry","attempt":2,"max_retries":2,"retry_delay_ms":1022,"error_status":529,"error":"overloaded","session_id":"50dba7dc"}`
	p, evs := parseAll(t, retrying)
	if kinds(evs) != "retry,retry" || evs[1].Text != "the model service failed: HTTP 529 overloaded; retry 2 of 2 in 1s" {
		t.Errorf("claude's retries: %s %q", kinds(evs), evs[len(evs)-1].Text)
	}
	if lim := p.stoppedOffline(); lim == nil || !strings.Contains(lim.Message, "HTTP 529 overloaded; retry 2 of 2") {
		t.Errorf("claude stopped while retrying: %+v", lim)
	}
	p, _ = parseAll(t, retrying+"\n"+`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"done"}]}}`)
	if lim := p.stoppedOffline(); lim != nil {
		t.Errorf("claude answered after its retries, still taken for offline: %+v", lim)
	}

	// Not outages: a usage limit stays a limit; codex's retry notices are
	// not its last word; a 503 in a tool's output or the agent's own text
	// is the project's business; an agent's own failure is a failure.
	for _, tc := range []struct{ name, lines string }{
		{"claude-429", claudeAPI429},
		{"codex-limit", codexLimit},
		{"codex-retrying", `{"type":"error","message":"Reconnecting... 2/5 (unexpected status 503 Service Unavailable)"}
{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}`},
		{"tool-output", `{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"curl localhost","aggregated_output":"HTTP/1.1 503 Service Unavailable overloaded","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"the server answers 503: overloaded"}}`},
		{"claude-failure", `{"type":"result","subtype":"error_max_turns","is_error":true,"result":"Reached max turns (30)"}`},
	} {
		p, _ := parseAll(t, tc.lines)
		if p.limit != nil && p.limit.Outage {
			t.Errorf("%s: taken for an outage: %+v", tc.name, p.limit)
		}
	}
}

func TestUnstarted(t *testing.T) {
	p, _ := parseAll(t, `{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login"}`)
	r := &Result{ExitCode: 1, events: true, ToolCalls: p.tools, Usage: p.usage, Error: p.lastError}
	if !r.Unstarted() {
		t.Fatal("a run that failed before any tool call or token is not unstarted")
	}
	if u := r.Unusable("claude"); !strings.Contains(u.Error(), "Invalid API key") {
		t.Fatalf("the agent's own words are missing: %v", u)
	}
	for _, r := range []*Result{
		{ExitCode: 1, events: true, ToolCalls: 1},
		{ExitCode: 1, events: true, Usage: Usage{InputTokens: 10}},
		{ExitCode: 1, events: false},
		{ExitCode: 0, events: true},
		{ExitCode: 1, events: true, Limit: &Limit{}},
	} {
		if r.Unstarted() {
			t.Errorf("unstarted: %+v", r)
		}
	}
}

// TestClaudeResultCarriesCost: claude's result line says what the run
// cost; its event carries that, for the loop to record before the agent
// exits.
func TestClaudeResultCarriesCost(t *testing.T) {
	p, evs := parseAll(t, `{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.25,"num_turns":3,"usage":{"input_tokens":10,"output_tokens":5}}`)
	want := Usage{CostUSD: 0.25, InputTokens: 10, OutputTokens: 5, Turns: 3}
	if len(evs) != 1 || evs[0].Kind != "result" || evs[0].Usage != want || p.usage != want {
		t.Fatalf("events %+v, usage %+v; want one result carrying %+v", evs, p.usage, want)
	}
}

// A cost no agent run could have (1e308 is valid JSON) is bounded where it
// is read: two of them summed made the run's spending +Inf, and its
// run_end unwritable. A negative one counts nothing.
func TestAbsurdCostBounded(t *testing.T) {
	for _, c := range []struct {
		line string
		want float64
	}{
		{`{"type":"result","subtype":"success","total_cost_usd":1e308}`, MaxCostUSD},
		{`{"type":"result","subtype":"success","cost_usd":1.7976931348623157e308}`, MaxCostUSD},
		{`{"type":"result","subtype":"success","total_cost_usd":-5}`, 0},
		{`{"type":"result","subtype":"success","total_cost_usd":12.5}`, 12.5},
	} {
		p, _ := parseAll(t, c.line)
		if p.usage.CostUSD != c.want {
			t.Errorf("%s: cost %v, want %v", c.line, p.usage.CostUSD, c.want)
		}
		if sum := p.usage.CostUSD + p.usage.CostUSD; math.IsInf(sum, 0) {
			t.Errorf("%s: two such costs sum to %v", c.line, sum)
		}
	}
}

// claude's results come back in user messages naming the call: only a
// shell call's result counts, once.
func TestClaudeShellResults(t *testing.T) {
	p, _ := parseAll(t, `{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"toolu_r","name":"Read","input":{"file_path":"a"}},{"type":"tool_use","id":"toolu_b","name":"Bash","input":{"command":"ls"}}]}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_r","content":"x"}]}}`)
	if p.shells != 1 || p.shellsDone != 0 {
		t.Fatalf("after the Read's result: %d shell calls, %d results; want 1 and 0", p.shells, p.shellsDone)
	}
	for i := 0; i < 2; i++ {
		if _, ok := p.line([]byte(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_b","content":"","is_error":true}]}}`)); !ok {
			t.Fatal("the user line is not recognised")
		}
	}
	if p.shellsDone != 1 {
		t.Fatalf("%d shell results after the Bash result twice, want 1", p.shellsDone)
	}
}

// Claude Code 2.1.332 stopped by SIGINT mid tool call ends with an error
// result whose text is empty: it shows as the kind of error, not as
// "error:" and nothing, and it is neither a limit nor an outage.
func TestClaudeInterruptedResult(t *testing.T) {
	p, evs := parseAll(t, `{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,"result":"","total_cost_usd":0.01}`)
	if len(evs) != 1 || evs[0].Text != "error (error_during_execution)" {
		t.Fatalf("events %+v, want one result: error (error_during_execution)", evs)
	}
	if p.limit != nil {
		t.Fatalf("an interrupted attempt taken for a limit: %+v", p.limit)
	}
}

// Claude Code 2.1.332 waits for a background subagent that outlives the
// main turn and then resumes: two results, the second's usage that last
// turn's alone. modelUsage is the whole session's, per model (the first
// line as recorded: five requests of 1,200 tokens in and 34 out, two of
// them the subagent's; the second with cache reads and a second model
// added); the tokens recorded are those, summed, not the last turn's.
func TestClaudeUsageCountsTheWholeSession(t *testing.T) {
	p, evs := parseAll(t, `{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"main done","total_cost_usd":0.0274,"usage":{"input_tokens":2400,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":68},"modelUsage":{"claude-opus-5-5":{"inputTokens":6000,"outputTokens":170,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.0274}}}
{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"main done 2","total_cost_usd":0.0274,"usage":{"input_tokens":1200,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":34},"modelUsage":{"claude-opus-5-5":{"inputTokens":5000,"outputTokens":136,"cacheReadInputTokens":1000,"cacheCreationInputTokens":0,"costUSD":0.0274},"claude-haiku-4-5":{"inputTokens":300,"outputTokens":10,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.0003}}}`)
	want := Usage{CostUSD: 0.0274, InputTokens: 6300, OutputTokens: 146, Turns: 3}
	if p.usage != want || evs[len(evs)-1].Usage != want {
		t.Fatalf("usage %+v, want %+v", p.usage, want)
	}
}

// codex names a reset on another day with its date ("try again at Dec
// 2nd, 2026 4:48 PM"); read as a time alone it was "an unknown time",
// and --wait-on-limit retried every 15 minutes for days.
func TestCodexLimitOnAnotherDay(t *testing.T) {
	now := time.Date(2026, 11, 29, 15, 0, 0, 0, time.Local)
	for text, want := range map[string]time.Time{
		"You've hit your usage limit. ... or try again at Dec 2nd, 2026 4:48 PM.": time.Date(2026, 12, 2, 16, 48, 0, 0, time.Local),
		"You've hit your usage limit. ... or try again at December 1, 9 AM.":      time.Date(2026, 12, 1, 9, 0, 0, 0, time.Local),
		"You've hit your usage limit. ... or try again at 4:48 PM.":               time.Date(2026, 11, 29, 16, 48, 0, 0, time.Local),
	} {
		if got := parseReset(tryAgainAsResets(text), now); !got.Equal(want) {
			t.Errorf("%q: reset %v, want %v", text, got, want)
		}
	}
}

// codex names the reset to the minute, rounded down ("try again at 8:10
// PM" for 20:10:14): read a few seconds before, the time had passed and
// was taken for the next day - --wait-on-limit slept 24 hours for a limit
// gone within the minute. A time a minute ago or this minute is now; one
// further back is still tomorrow's.
func TestCodexLimitThisMinute(t *testing.T) {
	now := time.Date(2026, 11, 29, 20, 10, 5, 0, time.Local)
	for text, want := range map[string]time.Time{
		"You've hit your usage limit. ... or try again at 8:10 PM.":                time.Date(2026, 11, 29, 20, 11, 0, 0, time.Local),
		"You've hit your usage limit. ... or try again at 8:09 PM.":                now,
		"You've hit your usage limit. ... or try again at Nov 29th, 2026 8:10 PM.": time.Date(2026, 11, 29, 20, 11, 0, 0, time.Local),
		"You've hit your usage limit. ... or try again at 8:07 PM.":                time.Date(2026, 11, 30, 20, 7, 0, 0, time.Local),
		"You've hit your usage limit. ... or try again at 8:11 PM.":                time.Date(2026, 11, 29, 20, 11, 0, 0, time.Local),
	} {
		if got := parseReset(tryAgainAsResets(text), now); !got.Equal(want) {
			t.Errorf("%q: reset %v, want %v", text, got, want)
		}
	}
}

// Gemini CLI retries a request the API refused for a per-minute quota
// (429 RESOURCE_EXHAUSTED, "Please retry in 20.5s"; recorded from
// gemini-cli 0.61 against a server answering Google's quota body): stopped
// there by --timeout, it was "the model service is unavailable" - an
// outage, waited out with the outage back-off (1m, 2m, 4m...) and blamed on
// the service. It is a usage limit, resetting when the client said it
// would retry.
func TestGeminiQuotaRetriesAreALimit(t *testing.T) {
	now := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		lines []string
		reset time.Duration
	}{
		"retry in": {[]string{`Attempt 1 failed: You exceeded your current quota, please check your plan and billing details. * Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10 Please retry in 20.5s.`}, 20500 * time.Millisecond},
		"retrying after": {[]string{`Attempt 3 failed: You exceeded your current quota, please check your plan and billing details. Please retry in 20.5s.`,
			`Suggested retry after 20s.. Retrying after 34922ms...`}, 34922 * time.Millisecond},
		"per-minute quota": {[]string{`{"type":"init","timestamp":"2026-11-29T15:00:00.000Z","session_id":"s","model":"auto"}`,
			`Attempt 1 failed: Quota exceeded for quota metric 'Generate Content API requests per minute'. Please retry in 40s.`,
			`Suggested retry after 40s.. Retrying after 40673ms...`}, 40673 * time.Millisecond},
		"status 429": {[]string{`Attempt 2 failed with status 429. Retrying with backoff... _ApiError: {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`}, 0},
	} {
		p := &parser{now: func() time.Time { return now }}
		for _, l := range tc.lines {
			p.line([]byte(l))
		}
		lim := p.stoppedOffline()
		switch {
		case lim == nil || lim.Outage:
			t.Errorf("%s: stopped while retrying a quota: %+v, want a usage limit", name, lim)
		case strings.Contains(lim.Message, "unavailable") || !strings.Contains(lim.Message, "Attempt"):
			t.Errorf("%s: message %q", name, lim.Message)
		case tc.reset == 0 && !lim.Reset.IsZero(), tc.reset != 0 && !lim.Reset.Equal(now.Add(tc.reset)):
			t.Errorf("%s: reset %v, want %v after %v", name, lim.Reset, tc.reset, now)
		}
	}
}

// Gemini CLI says on its stderr that it retries a failing model request
// (recorded from gemini-cli 0.61 against conformance/fakemodel answering
// 503): stopped there by --timeout, the attempt was counted failed and the
// story skipped; it had an outage.
func TestGeminiRetriesAreAnOutage(t *testing.T) {
	for name, lines := range map[string][]string{
		"503": {`{"type":"init","timestamp":"2026-11-29T15:00:00.000Z","session_id":"s","model":"auto"}`,
			`Attempt 1 failed with status 503. Retrying with backoff... _ApiError: {"error":{"code":503,"message":"The model is overloaded."}}`,
			`    at Models.generateContentStream (file:///x/bundle/chunk.js:1:2)`,
			`Attempt 2 failed with status 503. Retrying with backoff... _ApiError: {"error":{"code":503,"message":"The model is overloaded."}}`},
		"quota, then 503": {`Attempt 1 failed: You exceeded your current quota. Please retry in 20.5s.`,
			`Attempt 2 failed with status 503. Retrying with backoff... _ApiError: {"error":{"code":503,"message":"The model is overloaded."}}`},
	} {
		p := &parser{now: time.Now}
		for _, l := range lines {
			p.line([]byte(l))
		}
		lim := p.stoppedOffline()
		if lim == nil || !lim.Outage || !strings.Contains(lim.Message, "Attempt") {
			t.Errorf("%s: stopped while retrying: %+v", name, lim)
		}
		// The client answering again ends the wait.
		p.line([]byte(`{"type":"message","timestamp":"2026-11-29T15:00:05.000Z","role":"assistant","content":"ok","delta":true}`))
		if lim := p.stoppedOffline(); lim != nil {
			t.Errorf("%s: an answer after the retries still an outage: %+v", name, lim)
		}
	}
	// A line that merely mentions an attempt is nothing.
	p := &parser{now: time.Now}
	p.line([]byte("the second attempt failed to compile"))
	if p.stoppedOffline() != nil {
		t.Error("an ordinary line taken for a retry")
	}
}
