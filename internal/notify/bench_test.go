package notify

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/loop"
)

// benchStories is the plan size of one benchmark run.
const benchStories = 40

// BenchmarkNotifyOverhead measures what notifications add to a loop
// iteration: the same no-op-agent run of benchStories stories, with and
// without --notify to a server on 127.0.0.1, interleaved round by round so
// machine drift hits both alike. Every iteration's agent also appends a
// guard denial to the event log (in both arms), so with notifications on
// each iteration sends one message - more than a real run ever sends.
//
// Wall time per iteration is reported for each arm (medians) with the
// median of the round-by-round differences; on a busy machine that
// difference is noise around the true figure. The steadier one is the CPU
// time this process spends per iteration (getrusage: the loop's own work,
// the event log, and - in one arm - the notifier's goroutines; the agent
// and git are child processes and not in it): its difference between the
// arms is what notifications cost the machine per iteration. Last, the
// time a finished run spends flushing its last messages.
func BenchmarkNotifyOverhead(b *testing.B) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer srv.Close()
	var plain, notified, wallDiff, cpuPlain, cpuNotified, flush []float64
	b.ResetTimer()
	for range b.N {
		p, pc := benchRun(b, "", nil)
		var f float64
		n, nc := benchRun(b, srv.URL, &f)
		plain, notified, wallDiff = append(plain, p), append(notified, n), append(wallDiff, n-p)
		cpuPlain, cpuNotified = append(cpuPlain, pc), append(cpuNotified, nc)
		flush = append(flush, f)
	}
	b.StopTimer()
	if n := got.Load(); n < int64(b.N*benchStories) {
		b.Fatalf("the server got %d messages, want at least %d", n, b.N*benchStories)
	}
	b.ReportMetric(median(plain), "ms/iter-plain")
	b.ReportMetric(median(notified), "ms/iter-notify")
	b.ReportMetric(median(wallDiff), "ms/iter-added")
	b.ReportMetric(median(cpuPlain), "cpu-ms/iter-plain")
	b.ReportMetric(median(cpuNotified)-median(cpuPlain), "cpu-ms/iter-added")
	b.ReportMetric(median(flush), "ms/run-flush")
}

// cpu is this process's user and system CPU time so far, in ms.
func cpu(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// benchRun runs one plan and returns wall and CPU ms per iteration; with a
// url it notifies there and stores the end-of-run flush time in flush.
func benchRun(b *testing.B, url string, flush *float64) (wall, cpuMS float64) {
	b.StopTimer()
	dir := b.TempDir()
	var sb strings.Builder
	for i := 1; i <= benchStories; i++ {
		fmt.Fprintf(&sb, "- [ ] US-%d: story %d\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.name", "B"}, {"config", "user.email", "b@e"}, {"add", "-A"}, {"commit", "-qm", "init"}} {
		git(b, dir, args...)
	}
	ctx := context.Background()
	st, err := checkpoint.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	p, err := plan.Resolve(st.Repo.Root, dir, plan.Source{File: "plan.md"})
	if err != nil {
		b.Fatal(err)
	}
	prof, _ := agent.Custom(`cat >/dev/null; echo '{"event":"guard_denied","decision":"deny","command":"git push","reason":"bench"}' >> "$WIGGUM_EVENT_LOG"`)
	b.StartTimer()
	start, cpu0 := time.Now(), cpu(b)
	var stop func()
	var n *Notifier
	if url != "" {
		logPath := st.Path(layout.RuntimeDir + "/" + layout.EventFile)
		from, _ := events.Size(logPath)
		n = New([]*Sink{mustParseB(b, url)}, Options{})
		stop = Follow(n, logPath, FollowOptions{From: from, Stuck: 30 * time.Minute})
	}
	sum, err := loop.Run(ctx, st, loop.Options{Plan: p, Agent: prof, Retries: 0, NoProgress: 5, Out: &bytes.Buffer{}})
	ran, used := time.Since(start), cpu(b)-cpu0
	if err != nil || len(sum.Completed) != benchStories {
		b.Fatalf("run: %v, %d done", err, len(sum.Completed))
	}
	if stop != nil {
		t := time.Now()
		stop()
		stats := n.Close(within(b, 5*time.Second))
		*flush = float64(time.Since(t).Microseconds()) / 1000
		if stats[0].Failed+stats[0].Dropped > 0 {
			b.Fatalf("messages lost: %+v", stats[0])
		}
	}
	b.StopTimer()
	return float64(ran.Microseconds()) / 1000 / benchStories, used / benchStories
}

func mustParseB(b *testing.B, raw string) *Sink {
	s, err := Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkPerIterationCost times, one after the other in one goroutine,
// what the event log and notifications cost per loop iteration without the
// agent and git around them: the loop's two fsynced appends
// (iteration_start, iteration_end, with the fields the loop writes), and
// the follower reading those plus a guard denial (appended as a hook
// would, not counted) and delivering that denial as a JSON message to a
// server on 127.0.0.1 (waited for at the end, so delivery is included).
func BenchmarkPerIterationCost(b *testing.B) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer srv.Close()
	path := filepath.Join(b.TempDir(), "events.jsonl")
	n := New([]*Sink{mustParseB(b, srv.URL)}, Options{Queue: 1 << 16})
	f := &follower{n: n, o: FollowOptions{Log: func(string) {}}, r: events.NewReader(path), t: newTracker(), progress: time.Now()}
	defer f.r.Close()
	var logTime, hookTime time.Duration
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		t := time.Now()
		_ = session.AppendEventAt(path, events.IterationStart, map[string]any{"iteration": i, "story": "US-1", "title": "a story", "attempt": 1, "attempts": 3, "worker": 2, "output": ".ralph/wiggum/agent/1.log", "session": "0123456789abcdef"})
		_ = session.AppendEventAt(path, events.IterationEnd, map[string]any{"iteration": i, "story": "US-1", "title": "a story", "attempt": 1, "outcome": "done", "duration_ms": 1200, "started": time.Now().UTC().Format(time.RFC3339Nano), "worker": 2, "commit": "abc1234", "session": "0123456789abcdef"})
		logTime += time.Since(t)
		t = time.Now()
		_ = session.AppendEventAt(path, events.GuardDenied, map[string]any{"decision": "deny", "command": "git push", "reason": "bench", "story": "US-1"})
		hookTime += time.Since(t)
		f.read()
	}
	for got.Load() < int64(b.N) {
		time.Sleep(100 * time.Microsecond)
	}
	total := time.Since(start)
	b.StopTimer()
	n.Close(within(b, time.Second))
	b.ReportMetric(float64(logTime.Microseconds())/float64(b.N)/1000, "ms/iter-eventlog")
	b.ReportMetric(float64((total-logTime-hookTime).Microseconds())/float64(b.N)/1000, "ms/iter-notify")
}
