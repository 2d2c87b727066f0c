package loop

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/session"
)

func readEvents(t *testing.T, st *checkpoint.State) []events.Event {
	t.Helper()
	var evs []events.Event
	bad, err := events.Scan(st.Path(layout.RuntimeDir+"/"+layout.EventFile), func(e events.Event) error {
		evs = append(evs, e)
		return nil
	})
	if err != nil || bad.Lines > 0 || bad.TornBytes > 0 {
		t.Fatalf("scan: %v, %+v", err, bad)
	}
	return evs
}

// The events the report, the notifications and watch rely on decode into
// events.Event with the fields they need: each attempt's start, end,
// outcome and worker, and the hooks' log path in the agent's environment.
func TestEventsDecode(t *testing.T) {
	st, p := newRepo(t, 2)
	var out bytes.Buffer
	// US-1 fails once, then succeeds; the agent records what it was told.
	o := opts(p, `cat >/dev/null; echo "$WIGGUM_EVENT_LOG" > ../evlog-$WIGGUM_STORY; if [ "$WIGGUM_STORY" = US-1 ] && [ ! -e ../tried ]; then touch ../tried; exit 3; fi; echo x > "f-$WIGGUM_STORY"`)
	o.Out = &out
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	evs := readEvents(t, st)
	var names []string
	starts := map[int]events.Event{}
	for _, e := range evs {
		names = append(names, e.Name)
		if e.Name == events.IterationStart {
			starts[e.Iteration] = e
		}
	}
	want := []string{events.RunStart, events.IterationStart, events.IterationEnd, events.IterationStart, events.IterationEnd, events.IterationStart, events.IterationEnd, events.RunEnd}
	if len(names) != len(want) {
		t.Fatalf("events %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("events %v, want %v", names, want)
		}
	}
	first := evs[2]
	if first.Story != "US-1" || !first.Failed() || first.FailSource() != "agent" || first.Attempt != 1 || first.Commit != "" {
		t.Errorf("first attempt: %+v", first)
	}
	for _, e := range evs {
		if e.Name != events.IterationEnd {
			continue
		}
		s := starts[e.Iteration]
		if s.Story != e.Story || s.Attempt != e.Attempt || s.Title == "" {
			t.Errorf("iteration %d: start %+v, end %+v", e.Iteration, s, e)
		}
		if e.Started.IsZero() || e.Started.After(e.Time) || !e.Begin().Equal(e.Started) || e.Worker != 0 {
			t.Errorf("iteration %d: started %v, ended %v, worker %d", e.Iteration, e.Started, e.Time, e.Worker)
		}
	}
	if end := evs[len(evs)-1]; len(end.Completed) != 2 || end.Iterations != 3 {
		t.Errorf("run_end %+v", end)
	}
	got := readFile(t, st.Repo.Root+"/../evlog-US-2")
	if got != st.Path(layout.RuntimeDir+"/"+layout.EventFile)+"\n" {
		t.Errorf("agent's %s = %q", session.EventLogEnv, got)
	}
}

// Parallel workers number their events 1..N, and the hooks' log path is
// the main tree's, not the worktree's.
func TestParallelEventsNameTheirWorker(t *testing.T) {
	st, o, out := parallelOpts(t, 3, `cat >/dev/null; echo "$WIGGUM_EVENT_LOG" > ../../../../../evlog-$WIGGUM_STORY; echo x > "f-$WIGGUM_STORY"`)
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	seen := map[string]int{}
	merged := 0
	for _, e := range readEvents(t, st) {
		switch e.Name {
		case events.IterationEnd:
			if e.Worker < 1 || e.Worker > 3 || e.Outcome != events.OutcomeDone {
				t.Errorf("iteration_end %+v", e)
			}
			seen[e.Story] = e.Worker
		case events.Merged:
			merged++
		}
	}
	if len(seen) != 3 || merged != 3 {
		t.Errorf("workers by story %v, %d merged", seen, merged)
	}
	if got := readFile(t, st.Repo.Root+"/../evlog-US-2"); got != st.Path(layout.RuntimeDir+"/"+layout.EventFile)+"\n" {
		t.Errorf("worker agent's %s = %q", session.EventLogEnv, got)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
