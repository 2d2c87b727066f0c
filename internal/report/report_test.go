package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/events"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const fixture = "testdata/parallel.jsonl"

var generated = time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)

func build(t *testing.T, path string, o Options) *Report {
	t.Helper()
	r, err := Build(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The fixture is a 3-worker run, after an older run the report must
// ignore: retries, a story failed for good, a merge conflict, a
// usage-limit wait, a guard denial, an interrupted last attempt, a hostile
// title, and a torn last line.
func TestBuildParallelRun(t *testing.T) {
	r := build(t, fixture, Options{})
	if r.Plan != ".ralph/PRD-1/plan.md" || r.Workers != 3 || r.Outcome != RunInterrupted || r.PlanStories != 9 || r.Skipped != 0 || r.TestFail != 1 {
		t.Errorf("run: plan %q workers %d outcome %q plan stories %d skipped %d test failures %d", r.Plan, r.Workers, r.Outcome, r.PlanStories, r.Skipped, r.TestFail)
	}
	want := map[string]struct {
		outcome  string
		attempts int
		backups  int
		cost     float64
	}{
		"US-1": {StoryDone, 1, 0, 1.42},
		"US-2": {StoryDone, 2, 1, 1.98},
		"US-3": {StoryFailed, 3, 3, 1.48},
		"US-4": {StoryUnmerged, 1, 0, 2.05},
		"US-5": {StoryDone, 2, 1, 1.53},
		"US-6": {StoryDone, 1, 0, 0.95},
		"US-7": {StoryDone, 1, 0, 1.60},
		"US-8": {StoryOpen, 1, 1, 0.40},
	}
	var ids []string
	for _, s := range r.Stories {
		ids = append(ids, s.ID)
		w, ok := want[s.ID]
		if !ok {
			t.Errorf("unexpected story %s (the older run's?)", s.ID)
			continue
		}
		if s.Outcome != w.outcome || len(s.Attempts) != w.attempts || len(s.Backups) != w.backups || !near(s.CostUSD, w.cost) {
			t.Errorf("%s: outcome %q, %d attempts, %d backups, $%.2f; want %+v", s.ID, s.Outcome, len(s.Attempts), len(s.Backups), s.CostUSD, w)
		}
	}
	if len(ids) != len(want) {
		t.Errorf("stories %v", ids)
	}
	us4 := r.Stories[slices.IndexFunc(r.Stories, func(s *Story) bool { return s.ID == "US-4" })]
	if us4.Branch != "wiggum/US-4" || !slices.Equal(us4.Conflicts, []string{"api/limit.go", "api/router.go"}) {
		t.Errorf("US-4 kept branch %q, conflicts %v", us4.Branch, us4.Conflicts)
	}
	us2 := r.Stories[slices.IndexFunc(r.Stories, func(s *Story) bool { return s.ID == "US-2" })]
	a := us2.Attempts[0]
	if a.Worker != 2 || a.Number != 1 || a.Outcome != "failed (gate)" || a.End.Sub(a.Start) != 417*time.Second || a.Backup == "" {
		t.Errorf("US-2 attempt 1: %+v", a)
	}
	tot := r.Totals
	if tot.Stories != 8 || tot.Done != 5 || tot.Failed != 1 || tot.Unmerged != 1 || tot.Open != 1 || tot.Attempts != 12 || tot.Failures != 4 ||
		!near(tot.CostUSD, 11.41) || tot.InputTokens != 1_442_000 || tot.Seconds != 2765 {
		t.Errorf("totals %+v", tot)
	}
	if len(r.Waits) != 1 || r.Waits[0].End.Sub(r.Waits[0].Start) != 720*time.Second {
		t.Errorf("waits %+v", r.Waits)
	}
	if len(r.Denials) != 1 || r.Denials[0].Command != "git push --force origin main" || r.Denials[0].Story != "US-2" {
		t.Errorf("denials %+v", r.Denials)
	}
}

func near(a, b float64) bool { return a-b < 0.005 && b-a < 0.005 }

// A run still going: its open attempt is running, drawn up to now; a run
// with no end whose process is gone is unfinished; a resumed run keeps
// the killed run's attempts.
func TestRunningUnfinishedAndResumed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	lines := `{"time":"2026-11-23T10:00:00Z","event":"run_start","plan":"p.md","pid":77}
{"time":"2026-11-23T10:00:01Z","event":"iteration_start","iteration":1,"story":"A","title":"a","attempt":1}
{"time":"2026-11-23T10:01:01Z","event":"iteration_end","iteration":1,"story":"A","attempt":1,"outcome":"failed (agent)","started":"2026-11-23T10:00:01Z","cost_usd":0.5,"backup":"refs/wiggum/backup/x"}
{"time":"2026-11-23T10:01:02Z","event":"iteration_start","iteration":2,"story":"A","title":"a","attempt":2}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 10, 5, 2, 0, time.UTC)
	r := build(t, path, Options{Now: now, Alive: func(pid int) bool { return pid == 77 }})
	s := r.Stories[0]
	if r.Outcome != RunRunning || s.Outcome != StoryRunning || s.Attempts[1].Outcome != StoryRunning || s.Seconds != 300 {
		t.Errorf("running: run %q story %q attempt %q seconds %v", r.Outcome, s.Outcome, s.Attempts[1].Outcome, s.Seconds)
	}
	if _, end := r.Span(); !end.Equal(now) {
		t.Errorf("a running run is drawn up to now, not %v", end)
	}
	if !strings.Contains(Timeline(r), ">now</text>") {
		t.Error("no now line on a running run's timeline")
	}
	r = build(t, path, Options{Now: now, Alive: func(int) bool { return false }})
	if r.Outcome != RunUnfinished || r.Stories[0].Attempts[1].Outcome != "unfinished" || r.Stories[0].Outcome != StoryOpen {
		t.Errorf("unfinished: run %q attempt %q story %q", r.Outcome, r.Stories[0].Attempts[1].Outcome, r.Stories[0].Outcome)
	}

	resumed := `{"time":"2026-11-23T11:00:00Z","event":"run_start","plan":"p.md","pid":78,"resumed":true}
{"time":"2026-11-23T11:00:01Z","event":"iteration_start","iteration":3,"story":"A","title":"a","attempt":2}
{"time":"2026-11-23T11:02:01Z","event":"iteration_end","iteration":3,"story":"A","attempt":2,"outcome":"done","started":"2026-11-23T11:00:01Z","cost_usd":0.25}
{"time":"2026-11-23T11:02:02Z","event":"run_end","iterations":3,"completed":["A"]}
`
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	f.WriteString(resumed)
	f.Close()
	r = build(t, path, Options{})
	s = r.Stories[0]
	if !r.Resumed || r.Outcome != RunDone || len(s.Attempts) != 3 || s.Attempts[1].Outcome != "unfinished" || s.Outcome != StoryDone || !near(s.CostUSD, 0.75) {
		t.Errorf("resumed: %+v, story %+v", r, s)
	}
}

func TestNoRunAndUnreadableLines(t *testing.T) {
	dir := t.TempDir()
	if _, err := Build(filepath.Join(dir, "missing.jsonl"), Options{}); !errors.Is(err, ErrNoRun) {
		t.Errorf("missing log: %v", err)
	}
	path := filepath.Join(dir, "events.jsonl")
	// The lines the latest run wrote are the ones it counts (the log
	// before it is not read: TestOnlyTheLatestRunIsRead).
	os.WriteFile(path, []byte("{\"event\":\"run_start\",\"plan\":\"p\"}\ngarbage\n{\"event\":\"iteration_end\",\"outcome\":7}\n"), 0o644)
	r := build(t, path, Options{})
	if r.Skipped != 2 {
		t.Errorf("skipped %d lines, want 2", r.Skipped)
	}
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil || !strings.Contains(b.String(), "2 line(s) of the event log could not be read") {
		t.Errorf("text: %v\n%s", err, b.String())
	}
	// A run with nothing in it yet still renders.
	b.Reset()
	if err := WriteHTML(&b, r, generated); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&b)
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("empty run's page: %v", err)
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update to accept):\n%s", name, got)
	}
}

// The text report, whole: no control character from the log reaches the
// terminal.
func TestText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, build(t, fixture, Options{})); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(b.Bytes(), "\x1b\x07\r") {
		t.Error("a control character reached the text report")
	}
	golden(t, "parallel.txt", b.Bytes())
}

// The JSON keys are the documented ones, and stable: each is there, empty
// or not, but for the times of what has not happened yet.
func TestJSONKeys(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, build(t, fixture, Options{})); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		var ks []string
		for k := range v.(map[string]any) {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	check := func(what string, v any, want string) {
		t.Helper()
		if got := strings.Join(keys(v), " "); got != want {
			t.Errorf("%s keys:\n got %s\nwant %s", what, got, want)
		}
	}
	check("report", m, "agent ended error git_notes guard_denials limit_waits log_lines_skipped outcome plan plan_stories resumed started stories test_failures_seen totals workers")
	check("totals", m["totals"], "attempts cost_usd done failed failed_attempts input_tokens not_merged open output_tokens seconds stories")
	stories := m["stories"].([]any)
	byID := map[string]any{}
	for _, s := range stories {
		byID[s.(map[string]any)["id"].(string)] = s
	}
	all := "attempts backups commit conflict_paths cost_usd id input_tokens kept_branch merge_error outcome output_tokens seconds skip_reason title"
	check("story US-4", byID["US-4"], all)
	check("story US-3", byID["US-3"], all)
	check("story US-1", byID["US-1"], "attempts backups commit conflict_paths cost_usd id input_tokens kept_branch merge_error merged outcome output_tokens seconds skip_reason title")
	check("attempt", byID["US-2"].(map[string]any)["attempts"].([]any)[0], "backup commit cost_usd end input_tokens iteration number outcome output_tokens start worker")
	check("limit wait", m["limit_waits"].([]any)[0], "end message start")
	check("denial", m["guard_denials"].([]any)[0], "command decision reason story time")
	check("git note", m["git_notes"].([]any)[0], "story text time")
}

// The page is well-formed XML (so the SVG inside is too), holds no script
// element, loads nothing from anywhere, and shows the hostile title only
// as text.
func TestHTMLWellFormedAndSelfContained(t *testing.T) {
	r := build(t, fixture, Options{})
	var b bytes.Buffer
	if err := WriteHTML(&b, r, generated); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b.Bytes(), []byte("<h2>What the agents left in git, and what wiggum did about it</h2>")) || !bytes.Contains(b.Bytes(), []byte("US-1 .env is an environment file")) {
		t.Error("the page does not say what wiggum did about what the agents left in git")
	}
	dec := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	dec.Strict = true
	counts := map[string]int{}
	var texts strings.Builder
	var stack []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e.Name.Local)
			counts[e.Name.Local]++
			for _, a := range e.Attr {
				switch {
				case a.Name.Local == "src", a.Name.Local == "href", strings.HasPrefix(a.Name.Local, "on"):
					t.Errorf("<%s %s=%q>: the page must load and run nothing", e.Name.Local, a.Name.Local, a.Value)
				case strings.Contains(a.Value, "url(") && a.Value != "url(#hatch)":
					t.Errorf("<%s %s=%q> refers outside the page", e.Name.Local, a.Name.Local, a.Value)
				}
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && stack[len(stack)-1] == "style" && (strings.Contains(string(e), "@import") || strings.Contains(string(e), "url(")) {
				t.Error("the stylesheet loads something")
			}
			texts.Write(e)
		}
	}
	if counts["script"] != 0 || counts["iframe"] != 0 || counts["img"] != 0 || counts["link"] != 0 {
		t.Errorf("elements: %v", counts)
	}
	if counts["svg"] != 1 || counts["table"] != 1 || counts["tr"] != 10 {
		t.Errorf("want one svg, one table of 8 stories + head + total: %v", counts)
	}
	// One bar per attempt plus lane stripes, legend boxes and the wait.
	if counts["rect"] < 12 {
		t.Errorf("%d rects for 12 attempts", counts["rect"])
	}
	if !strings.Contains(texts.String(), `<script>alert("x")</script> &`) {
		t.Error("the hostile title is not shown as text")
	}
	if strings.Contains(b.String(), "<script>") {
		t.Error("the hostile title reached the page unescaped")
	}
}

// Bidi controls and line separators in a title are replaced in the page
// as the terminal views replace them: "t1 \u202e evil" would read in
// another order than it is.
func TestHTMLReplacesBidiControls(t *testing.T) {
	title := "t1 \u202e lave \u2066x\u2069 \u2028y"
	var lines []string
	for _, ev := range []map[string]any{
		{"event": "run_start", "time": "2026-11-27T19:00:00Z", "plan": "prd.json", "pid": 1, "stories": 1},
		{"event": "iteration_start", "time": "2026-11-27T19:00:01Z", "iteration": 1, "story": "US-1", "title": title, "attempt": 1, "attempts": 3},
		{"event": "iteration_end", "time": "2026-11-27T19:00:02Z", "iteration": 1, "story": "US-1", "title": title, "attempt": 1, "outcome": "done"},
		{"event": "run_end", "time": "2026-11-27T19:00:03Z", "iterations": 1, "completed": []string{"US-1"}},
	} {
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(data))
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, build(t, path, Options{}), generated); err != nil {
		t.Fatal(err)
	}
	if page := b.String(); strings.ContainsAny(page, "\u202e\u2066\u2069\u2028") || !strings.Contains(page, "t1 \ufffd lave \ufffdx\ufffd \ufffdy") {
		t.Errorf("the page holds bidi controls or line separators, or not the title with them replaced:\n%s", page)
	}
}

func TestTickStep(t *testing.T) {
	for span, want := range map[float64]time.Duration{5: time.Second, 60: 10 * time.Second, 2765: 5 * time.Minute, 8 * 3600: time.Hour, 40 * 86400: 4 * 86400 * time.Second} {
		if got := tickStep(span); got != want {
			t.Errorf("tickStep(%v) = %v, want %v", span, got, want)
		}
	}
}

// A shared run's landings (remote): a story landed, one another machine
// landed meanwhile, one whose landing failed and one whose claim was lost.
// The two kept branches are "not merged", even though their attempts were
// done and run_end lists them as completed.
func TestSharedRunLandings(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 19, 0, 0, 0, time.UTC)
	var lines []string
	add := func(sec int, name string, fields map[string]any) {
		fields["event"], fields["time"] = name, t0.Add(time.Duration(sec)*time.Second)
		data, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(data))
	}
	add(0, "run_start", map[string]any{"plan": "plan.md", "pid": 1, "workers": 2, "stories": 4})
	stories := []string{"US-1", "US-2", "US-3", "US-4"}
	for i, id := range stories {
		add(1+i, "iteration_start", map[string]any{"iteration": i + 1, "story": id, "attempt": 1, "attempts": 3, "worker": 1})
		add(2+i, "iteration_end", map[string]any{"iteration": i + 1, "story": id, "attempt": 1, "worker": 1, "outcome": "done", "commit": "abc"})
	}
	add(10, "landed", map[string]any{"story": "US-1", "branch": "refs/heads/wiggum/US-1", "commit": "1111111111111111", "attempts": 1})
	add(11, "landed_elsewhere", map[string]any{"story": "US-2", "branch": "refs/heads/wiggum/US-2", "error": "landed by another machine"})
	add(12, "land_failed", map[string]any{"story": "US-3", "branch": "refs/heads/wiggum/US-3", "error": "US-3 is already done on the target branch; nothing landed"})
	add(13, "claim_lost", map[string]any{"story": "US-4", "branch": "refs/heads/wiggum/US-4"})
	add(14, "run_end", map[string]any{"iterations": 4, "completed": stories, "error": "2 branch(es) could not be merged and are kept"})
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := build(t, path, Options{})
	want := map[string][2]string{
		"US-1": {StoryDone, ""}, "US-2": {StoryDone, ""},
		"US-3": {StoryUnmerged, "wiggum/US-3"}, "US-4": {StoryUnmerged, "wiggum/US-4"},
	}
	for _, s := range r.Stories {
		if w := want[s.ID]; s.Outcome != w[0] || s.Branch != w[1] {
			t.Errorf("%s: outcome %q branch %q, want %v", s.ID, s.Outcome, s.Branch, w)
		}
	}
	if us1 := r.Stories[0]; us1.Commit != "1111111111111111" || !us1.Merged.Equal(t0.Add(10*time.Second)) {
		t.Errorf("US-1: commit %q merged %v", us1.Commit, us1.Merged)
	}
	if r.Totals.Done != 2 || r.Totals.Unmerged != 2 {
		t.Errorf("totals %+v", r.Totals)
	}
	if us4 := r.Stories[3]; !strings.Contains(us4.MergeError, "took the story over") {
		t.Errorf("US-4's reason: %q", us4.MergeError)
	}
}

// Crafted numbers in a log (one copied from another machine): a worker
// number or worker count past the most a run has, and costs that sum to
// +Inf. The lines are skipped, the run still reports as JSON and HTML,
// and the timeline has no lane per claimed worker.
func TestCraftedNumbersAreBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	os.WriteFile(path, []byte(`{"time":"2026-11-29T14:00:00Z","event":"run_start","plan":"p.md","workers":2,"pid":1}
{"time":"2026-11-29T14:00:00Z","event":"run_start","plan":"p.md","workers":100000000,"pid":1}
{"time":"2026-11-29T14:00:01Z","event":"iteration_start","story":"US-1","worker":300000000,"iteration":1,"attempt":1,"attempts":3}
{"time":"2026-11-29T14:00:02Z","event":"iteration_end","story":"US-1","worker":300000000,"iteration":1,"attempt":1,"outcome":"done","duration_ms":1000}
{"time":"2026-11-29T14:00:01Z","event":"iteration_start","story":"US-2","worker":1,"iteration":2,"attempt":1,"attempts":3}
{"time":"2026-11-29T14:00:02Z","event":"iteration_end","story":"US-2","worker":1,"iteration":2,"attempt":1,"outcome":"done","duration_ms":1000,"cost_usd":1e308}
{"time":"2026-11-29T14:00:03Z","event":"iteration_start","story":"US-3","worker":2,"iteration":3,"attempt":1,"attempts":3}
{"time":"2026-11-29T14:00:04Z","event":"iteration_end","story":"US-3","worker":2,"iteration":3,"attempt":1,"outcome":"done","duration_ms":1000,"cost_usd":1e308}
{"time":"2026-11-29T14:00:05Z","event":"run_end","iterations":3,"completed":["US-2","US-3"],"cost_usd":1.5}
`), 0o644)
	r := build(t, path, Options{})
	if r.Workers != 2 || r.Skipped != 5 {
		t.Errorf("workers %d, skipped %d lines; want 2 and 5", r.Workers, r.Skipped)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatalf("report --json: %v", err)
	}
	b.Reset()
	if err := WriteHTML(&b, r, generated); err != nil {
		t.Fatal(err)
	}
	// A report built some other way: its timeline is still bounded.
	if lanes := laneList(&Report{Workers: 1_000_000}); len(lanes) > events.MaxWorkers {
		t.Errorf("%d timeline lanes for a claimed 1000000 workers", len(lanes))
	}
}

// The report reads the log from its latest run's start, found backwards
// as watch finds it: the runs before it (here with lines that cannot be
// read) are not decoded, however long the log - but a resumed run's chain
// is read from the run it resumed.
func TestOnlyTheLatestRunIsRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	older := `garbage
{"time":"2026-11-22T10:00:00Z","event":"run_start","plan":"p.md","pid":70}
{"time":"2026-11-22T10:00:01Z","event":"iteration_start","iteration":1,"story":"OLD","title":"old","attempt":1}
{"time":"2026-11-22T10:00:02Z","event":"iteration_end","iteration":1,"story":"OLD","attempt":1,"outcome":7}
{"time":"2026-11-22T10:00:03Z","event":"run_end","iterations":1}
`
	killed := `{"time":"2026-11-23T10:00:00Z","event":"run_start","plan":"p.md","pid":77}
{"time":"2026-11-23T10:00:01Z","event":"iteration_start","iteration":1,"story":"A","title":"a","attempt":1}
{"time":"2026-11-23T10:00:00Z","event":"run_start","plan":"p.md","workers":100000000,"pid":1}
`
	resumed := `{"time":"2026-11-23T11:00:00Z","event":"run_start","plan":"p.md","pid":78,"resumed":true}
{"time":"2026-11-23T11:00:01Z","event":"iteration_start","iteration":2,"story":"A","title":"a","attempt":2}
{"time":"2026-11-23T11:02:01Z","event":"iteration_end","iteration":2,"story":"A","attempt":2,"outcome":"done","started":"2026-11-23T11:00:01Z"}
{"time":"2026-11-23T11:02:02Z","event":"run_end","iterations":2,"completed":["A"]}
`
	if err := os.WriteFile(path, []byte(older+killed+resumed), 0o644); err != nil {
		t.Fatal(err)
	}
	r := build(t, path, Options{})
	if len(r.Stories) != 1 || r.Stories[0].ID != "A" || len(r.Stories[0].Attempts) != 2 || !r.Resumed || r.Outcome != RunDone {
		t.Errorf("the resumed run and the run it resumed: %+v", r)
	}
	// The crafted run_start line in the killed run is that run's; the
	// older run's two are never read.
	if r.Skipped != 1 {
		t.Errorf("skipped %d lines, want 1: the runs before the latest were read", r.Skipped)
	}
}

// A story's kept branch is reported while it is kept: a story whose
// branch could not merge and that landed later (a conflict given another
// attempt, work a resumed run landed) is done, with nothing "to look at"
// but the backups of its attempts; the timeline still marks when it could
// not merge.
func TestLandedLaterIsNotKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	lines := `{"time":"2026-11-23T10:00:00Z","event":"run_start","plan":"p.md","pid":77,"workers":2}
{"time":"2026-11-23T10:00:01Z","event":"iteration_start","iteration":1,"story":"A","title":"a","attempt":1,"worker":1}
{"time":"2026-11-23T10:00:01Z","event":"iteration_start","iteration":2,"story":"B","title":"b","attempt":1,"worker":2}
{"time":"2026-11-23T10:01:00Z","event":"iteration_end","iteration":1,"story":"A","attempt":1,"worker":1,"outcome":"done","commit":"aaa"}
{"time":"2026-11-23T10:01:01Z","event":"iteration_end","iteration":2,"story":"B","attempt":1,"worker":2,"outcome":"done","commit":"bbb"}
{"time":"2026-11-23T10:01:02Z","event":"merged","story":"A","branch":"refs/heads/wiggum/A","commit":"a1"}
{"time":"2026-11-23T10:01:03Z","event":"merge_failed","story":"B","branch":"refs/heads/wiggum/B","error":"wiggum/B conflicts with main in f","paths":["f"],"retry":true}
{"time":"2026-11-23T10:01:04Z","event":"iteration_start","iteration":3,"story":"B","title":"b","attempt":2,"worker":2}
{"time":"2026-11-23T10:02:00Z","event":"iteration_end","iteration":3,"story":"B","attempt":2,"worker":2,"outcome":"done","commit":"b2"}
{"time":"2026-11-23T10:02:01Z","event":"merged","story":"B","branch":"refs/heads/wiggum/B-2","commit":"b3"}
{"time":"2026-11-23T10:02:02Z","event":"run_end","iterations":3,"completed":["A","B"]}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	r := build(t, path, Options{})
	var b *Story
	for _, s := range r.Stories {
		if s.ID == "B" {
			b = s
		}
	}
	if b == nil || b.Outcome != StoryDone || b.Branch != "" || b.MergeError != "" || len(b.Conflicts) != 0 {
		t.Fatalf("B: %+v; want done, no kept branch", b)
	}
	if look := lookAt(r); len(look) != 0 {
		t.Errorf("to look at: %+v; want nothing", look)
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "kept") || strings.Contains(text.String(), "to look at") {
		t.Errorf("the text still has B's branch kept:\n%s", text.String())
	}
	if !strings.Contains(Timeline(r), "B could not merge; branch wiggum/B kept") {
		t.Error("the timeline lost the mark of B's conflict")
	}
}
