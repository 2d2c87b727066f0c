package loop

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/killpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
)

// What `wiggum watch` reads besides the events: each attempt's agent output,
// in the main tree's runtime directory (a worktree's goes with it).
const (
	// AgentLogDir holds one output log per attempt, named by iteration.
	AgentLogDir = layout.RuntimeDir + "/agent"
	// maxAgentLog bounds one attempt's log; past it the log says so and
	// stops growing.
	maxAgentLog = 4 << 20
	// keepAgentLogs bounds how many attempts' logs are kept.
	keepAgentLogs = 64
	// pruneEvery: logs are pruned at the first attempt and every so many
	// after (a directory read and a stat per log), so at most
	// keepAgentLogs+pruneEvery are there.
	pruneEvery = 16
	// toolEvery throttles the "tool" event: each one is an append to the log.
	toolEvery = 2 * time.Second
)

// AgentLog is the path, relative to the main tree's root, of iteration
// iter's agent output.
func AgentLog(iter int) string {
	return AgentLogDir + "/" + strconv.Itoa(iter) + ".log"
}

// observer records an attempt for the live view: the agent's output in a
// bounded log, and its latest tool call as an event at most every toolEvery
// (the latest one always lands, at the end of the attempt if not before).
// Its methods are called from the agent's reader goroutine only.
type observer struct {
	e       *executor
	iter    int
	story   string
	f       *os.File
	opened  bool // f was opened (or failed to be): the log is made once
	written int64
	sent    time.Time
	pending *agent.Event
}

func (e *executor) observe(iter int, story string) *observer {
	o := &observer{e: e, iter: iter, story: story}
	if iter%pruneEvery == 1 {
		pruneAgentLogs(e.run.st.Path(AgentLogDir))
	}
	return o
}

// open makes the attempt's log at its first output, not before: an attempt
// that prints nothing leaves no log (watch says "no output yet"), and
// creates no file.
func (o *observer) open() {
	o.opened = true
	if err := os.MkdirAll(o.e.run.st.Path(AgentLogDir), 0o755); err != nil {
		return // the log is a courtesy: the attempt runs without it
	}
	o.f, _ = os.OpenFile(o.e.run.st.Path(AgentLog(o.iter)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
}

func (o *observer) write(s string) {
	if !o.opened {
		o.open()
	}
	if o.f == nil || o.written > maxAgentLog {
		return
	}
	if o.written+int64(len(s)) > maxAgentLog {
		s = "… (output past " + strconv.Itoa(maxAgentLog>>20) + " MiB is not kept here)\n"
		o.written = maxAgentLog
	}
	n, _ := o.f.WriteString(s)
	o.written += int64(n)
}

// line is one line of the agent's (or the gate's) output.
func (o *observer) line(s string) {
	o.write(s + "\n")
	o.e.disp.line(s)
}

// event is what stream-json says the agent did.
func (o *observer) event(e agent.Event) {
	o.write("▸ " + e.Kind + ": " + e.Text + "\n")
	o.e.disp.event(e)
	if e.Kind == "result" {
		// What the agent says its run cost is spent, whatever comes of
		// the attempt - also when wiggum is killed before the agent ends.
		o.e.reportedUsage(o.iter, o.story, e.Usage)
		killpoint.At("agent-reported")
	}
	if e.Kind != "tool" {
		return
	}
	if time.Since(o.sent) < toolEvery {
		o.pending = &e
		return
	}
	o.send(e)
}

func (o *observer) send(e agent.Event) {
	o.pending, o.sent = nil, time.Now()
	o.e.event("tool", map[string]any{"story": o.story, "iteration": o.iter, "worker": o.e.worker,
		"tool": e.Text, "input_tokens": e.Usage.InputTokens, "output_tokens": e.Usage.OutputTokens})
}

// close flushes the last tool call and closes the log.
func (o *observer) close() {
	if o.pending != nil {
		o.send(*o.pending)
	}
	if o.f != nil {
		o.f.Close()
	}
	if !o.opened {
		// An earlier run's log of the same iteration must not pass for
		// this attempt's.
		_ = os.Remove(o.e.run.st.Path(AgentLog(o.iter)))
	}
}

// pruneAgentLogs keeps the newest keepAgentLogs-1 logs, making room for one
// more. Another worker pruning at the same time is harmless: a log already
// gone is fine.
func pruneAgentLogs(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) < keepAgentLogs {
		return
	}
	type aged struct {
		name string
		mod  time.Time
	}
	var logs []aged
	for _, e := range ents {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			logs = append(logs, aged{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i].mod.After(logs[j].mod) })
	for _, l := range logs[min(len(logs), keepAgentLogs-1):] {
		_ = os.Remove(filepath.Join(dir, l.name))
	}
}

// planCounts adds the plan's size to the run_start event's fields, so a
// watcher can show progress without reading the plan, and returns its
// stories at the start, each with whether it is done.
func planCounts(p plan.Plan, fields map[string]any) (map[string]any, map[string]bool) {
	stories, err := p.Stories()
	if err != nil {
		return fields, map[string]bool{}
	}
	fields["stories"], fields["done"] = len(stories), len(stories)-plan.Open(stories)
	return fields, doneByID(stories)
}

// doneByID maps each story's id to whether it is done.
func doneByID(stories []plan.Story) map[string]bool {
	m := make(map[string]bool, len(stories))
	for _, s := range stories {
		m[s.ID] = s.Done
	}
	return m
}
