package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

const tenPlan = `# Plan

- [ ] US-1: first
- [ ] US-10: tenth
- [ ] US-11: eleventh
- [ ] **US-2**: second, bold
  - [ ] acceptance: not a story
- [x] US-3 - already done

### US-1: first
Do the first thing.
- [ ] criterion inside details

### US-10 tenth
Tenth details.

` + "```" + `
- [ ] US-99: inside a code fence, not a story
` + "```" + `
`

func TestMarkdownStories(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.md")
	write(t, path, tenPlan)
	m := &Markdown{File: path}
	got, err := m.Stories()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "US-1,US-10,US-11,US-2,US-3" {
		t.Fatalf("ids = %v", ids)
	}
	if got[0].Title != "first" || got[3].Title != "second, bold" || got[4].Title != "already done" {
		t.Errorf("titles = %q %q %q", got[0].Title, got[3].Title, got[4].Title)
	}
	if !got[4].Done || got[0].Done {
		t.Errorf("done flags wrong: %+v", got)
	}
	if !strings.Contains(got[0].Details, "Do the first thing.") || strings.Contains(got[0].Details, "Tenth") {
		t.Errorf("US-1 details = %q", got[0].Details)
	}
	if !strings.Contains(got[1].Details, "Tenth details.") {
		t.Errorf("US-10 details = %q", got[1].Details)
	}
	if n := Next(got, map[string]bool{"US-1": true}); n == nil || n.ID != "US-10" {
		t.Errorf("Next skipping US-1 = %+v", n)
	}
	if Open(got) != 4 {
		t.Errorf("Open = %d", Open(got))
	}
}

func TestMarkdownMarkDoneTouchesOnlyThatStory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.md")
	write(t, path, tenPlan)
	m := &Markdown{File: path}
	if err := m.MarkDone("US-1"); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(tenPlan, "- [ ] US-1: first", "- [x] US-1: first", 1)
	if got := read(t, path); got != want {
		t.Fatalf("after MarkDone(US-1):\n%s\nwant:\n%s", got, want)
	}
	if err := m.MarkDone("US-2"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(read(t, path), "- [x] **US-2**: second, bold") {
		t.Errorf("bold story not ticked:\n%s", read(t, path))
	}
	// Marking a done story again changes nothing; an unknown id is an error
	// and changes nothing either.
	before := read(t, path)
	if err := m.MarkDone("US-3"); err != nil {
		t.Fatal(err)
	}
	var nf *NotFoundError
	if err := m.MarkDone("US-99"); !errors.As(err, &nf) {
		t.Fatalf("MarkDone(US-99) = %v, want NotFoundError (it is only inside a code fence)", err)
	}
	if read(t, path) != before {
		t.Error("file changed by a no-op MarkDone")
	}
}

func TestMarkdownKeepsCRLFAndMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.md")
	write(t, path, "- [ ] US-7: crlf\r\n- [ ] US-70: other\r\n")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (&Markdown{File: path}).MarkDone("US-7"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "- [x] US-7: crlf\r\n- [ ] US-70: other\r\n" {
		t.Errorf("got %q", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v", fi.Mode())
	}
}

const prd = `{
  "project": "demo",
  "branchName": "ralph/demo",
  "userStories": [
    {"id": "US-002", "title": "second", "description": "two", "acceptanceCriteria": ["a", "b"], "priority": 2, "passes": false, "notes": "keep me"},
    {"id": "US-001", "title": "first", "description": "one", "acceptanceCriteria": [], "priority": 1, "passes": false},
    {"id": "US-010", "title": "tenth", "priority": 10, "passes": true}
  ]
}
`

func TestPRDJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	write(t, path, prd)
	p := &PRDJSON{File: path}
	got, err := p.Stories()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != "US-001" || got[1].ID != "US-002" || !got[2].Done {
		t.Fatalf("stories = %+v", got)
	}
	if !strings.Contains(got[1].Details, "two") || !strings.Contains(got[1].Details, "- b") {
		t.Errorf("details = %q", got[1].Details)
	}
	if err := p.MarkDone("US-002"); err != nil {
		t.Fatal(err)
	}
	out := read(t, path)
	if !strings.Contains(out, `"notes": "keep me"`) || strings.Index(out, `"project"`) > strings.Index(out, `"userStories"`) {
		t.Errorf("fields or key order lost:\n%s", out)
	}
	got, _ = p.Stories()
	if got[0].Done || !got[1].Done {
		t.Errorf("after MarkDone(US-002): %+v", got)
	}
	var nf *NotFoundError
	if err := p.MarkDone("US-0"); !errors.As(err, &nf) {
		t.Errorf("unknown id: %v", err)
	}
}

func TestPRDJSONBad(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"notjson": `{"userStories": [`,
		"noarray": `{"userStories": 3}`,
		"missing": `{"stories": []}`,
		"noid":    `{"userStories": [{"title": "x"}]}`,
		"dup":     `{"userStories": [{"id": "A-1"}, {"id": "A-1"}]}`,
		"ctrl":    `{"userStories": [{"id": "A-1\nrm -rf /"}]}`,
		"long":    `{"userStories": [{"id": "` + strings.Repeat("x", 101) + `"}]}`,
	} {
		path := filepath.Join(dir, name+".json")
		write(t, path, body)
		var bad *BadInputError
		if _, err := (&PRDJSON{File: path}).Stories(); !errors.As(err, &bad) {
			t.Errorf("%s: err = %v, want BadInputError", name, err)
		}
		if err := (&PRDJSON{File: path}).MarkDone("A-1"); err == nil {
			t.Errorf("%s: MarkDone succeeded", name)
		}
		if read(t, path) != body {
			t.Errorf("%s: file changed", name)
		}
	}
}

func TestIssuesDir(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bugs", "P2-BUG-7-crash-on-start.md"), "# Crash on start\n\nIt crashes.\n")
	write(t, filepath.Join(dir, "features", "P1-FEAT-12-dark-mode.md"), "no heading here\n")
	write(t, filepath.Join(dir, "features", "P1-FEAT-3-search.md"), "# Search\n")
	write(t, filepath.Join(dir, "completed", "P0-ENH-1-done-already.md"), "# Done\n")
	write(t, filepath.Join(dir, "features", "README.md"), "not an issue\n")
	p := &Issues{Dir: dir}
	got, err := p.Stories()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "ENH-1,FEAT-12,FEAT-3,BUG-7" {
		t.Fatalf("order = %v", ids)
	}
	if !got[0].Done || got[1].Done || got[1].Title != "dark mode" || got[3].Title != "Crash on start" {
		t.Errorf("stories = %+v", got)
	}
	if err := p.MarkDone("BUG-7"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "completed", "P2-BUG-7-crash-on-start.md")); err != nil {
		t.Error(err)
	}
	// A second completion of the same issue (another worker did it) is fine.
	if err := p.MarkDone("BUG-7"); err != nil {
		t.Errorf("second MarkDone: %v", err)
	}
	// Destination already there (both copies exist): the move still succeeds.
	write(t, filepath.Join(dir, "completed", "P1-FEAT-3-search.md"), "# Search\n")
	if err := p.MarkDone("FEAT-3"); err != nil {
		t.Errorf("MarkDone with existing destination: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "features", "P1-FEAT-3-search.md")); !errors.Is(err, os.ErrNotExist) && err != nil {
		t.Error(err)
	}
	got, _ = p.Stories()
	if n := Next(got, nil); n == nil || n.ID != "FEAT-12" {
		t.Errorf("next = %+v", n)
	}
}

func TestIssuesMoveToleratesMissingSource(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "bugs", "P1-BUG-1-x.md")
	write(t, src, "# x\n")
	p := &Issues{Dir: dir}
	files, err := p.scan()
	if err != nil {
		t.Fatal(err)
	}
	// Someone else completes it between our listing and our move.
	if err := os.MkdirAll(filepath.Join(dir, "completed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(src, filepath.Join(dir, "completed", "P1-BUG-1-x.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(files[0].path, filepath.Join(dir, "completed", "P1-BUG-1-x.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("setup: expected the raced rename to see a missing source, got %v", err)
	}
	if err := p.MarkDone("BUG-1"); err != nil {
		t.Errorf("MarkDone after a concurrent completion: %v", err)
	}
}

func TestResolve(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write(t, filepath.Join(root, ".ralph", "PRD-3", "plan.md"), "- [ ] US-1: x\n")
	write(t, filepath.Join(outside, "plan.md"), "- [ ] US-1: x\n")
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}

	p, err := Resolve(root, sub, Source{PRD: "3"})
	if err != nil || p.Kind() != "markdown" {
		t.Fatalf("--prd 3: %v %v", p, err)
	}
	p, err = Resolve(root, sub, Source{})
	if err != nil || !strings.HasSuffix(p.Path(), filepath.Join("PRD-3", "plan.md")) {
		t.Fatalf("detect: %v %v", p, err)
	}
	p, err = Resolve(root, sub, Source{File: "../.ralph/PRD-3/plan.md"})
	if err != nil || p.Kind() != "markdown" {
		t.Fatalf("--plan relative to cwd: %v %v", p, err)
	}

	for name, src := range map[string]Source{
		"prd dotdot":     {PRD: "../x"},
		"prd zero":       {PRD: "0"},
		"prd negative":   {PRD: "-1"},
		"prd word":       {PRD: "3x"},
		"prd missing":    {PRD: "4"},
		"plan outside":   {File: filepath.Join(outside, "plan.md")},
		"plan dotdot":    {File: "../../" + filepath.Base(outside) + "/plan.md"},
		"plan symlink":   {File: "../escape/plan.md"},
		"issues outside": {Issues: outside},
		"issues file":    {Issues: "../.ralph/PRD-3/plan.md"},
		"two sources":    {PRD: "3", File: "x.md"},
	} {
		_, err := Resolve(root, sub, src)
		var bad *BadInputError
		if !errors.As(err, &bad) {
			t.Errorf("%s: err = %v, want BadInputError", name, err)
		}
	}

	// snarktank's ralph.sh keeps its prd.json beside it, in scripts/ralph/
	write(t, filepath.Join(root, "scripts", "ralph", "prd.json"), prd)
	if p, err := Resolve(root, root, Source{}); err != nil || p.Path() != filepath.Join(root, "scripts", "ralph", "prd.json") {
		t.Errorf("scripts/ralph/prd.json detection: %v %v", p, err)
	}
	write(t, filepath.Join(root, "prd.json"), prd)
	if p, err := Resolve(root, root, Source{}); err != nil || p.Kind() != "prd.json" || p.Path() != filepath.Join(root, "prd.json") {
		t.Errorf("prd.json detection: %v %v", p, err)
	}
}

// A plan saved by a Windows editor begins with a byte order mark: its
// first story went unseen (the run did the second and said "0 open"), and
// a prd.json did not read as JSON. The mark is no part of the first line
// or the document, and it is kept when the plan is written.
func TestPlanWithAByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "plan.md")
	write(t, md, "\ufeff- [ ] US-1: first\r\n- [ ] US-2: second\r\n")
	m := &Markdown{File: md}
	got, err := m.Stories()
	if err != nil || len(got) != 2 || got[0].ID != "US-1" || got[0].Title != "first" {
		t.Fatalf("stories = %+v, %v", got, err)
	}
	if err := m.MarkDone("US-1"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, md); got != "\ufeff- [x] US-1: first\r\n- [ ] US-2: second\r\n" {
		t.Fatalf("ticked in place: %q", got)
	}
	// The rewrite path (the file changed under the parse).
	write(t, md, "\ufeff- [ ] US-1: first\n- [ ] US-3: third\n")
	m = &Markdown{File: md}
	if _, err := m.Stories(); err != nil {
		t.Fatal(err)
	}
	write(t, md, "\ufeff- [ ] US-1: first, longer\n- [ ] US-3: third\n")
	if err := m.MarkDone("US-1"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, md); got != "\ufeff- [x] US-1: first, longer\n- [ ] US-3: third\n" {
		t.Fatalf("ticked by rewrite: %q", got)
	}

	pj := filepath.Join(dir, "prd.json")
	write(t, pj, "\ufeff"+prd)
	p := &PRDJSON{File: pj}
	if got, err := p.Stories(); err != nil || len(got) != 3 {
		t.Fatalf("prd.json stories = %+v, %v", got, err)
	}
	if err := p.MarkDone("US-001"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, pj); !strings.HasPrefix(got, "\ufeff{") {
		t.Fatalf("the mark was not kept: %.20q", got)
	}
	if got, err := p.Stories(); err != nil || !got[0].Done {
		t.Fatalf("after MarkDone: %+v, %v", got, err)
	}
}

func TestPRDJSONBranchName(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]string{
		`{"branchName": "ralph/x", "userStories": []}`:    "ralph/x",
		`{"branchName": " ralph/x\n", "userStories": []}`: "ralph/x",
		`{"branchName": null, "userStories": []}`:         "",
		`{"userStories": []}`:                             "",
		`{"branchName": 7, "userStories": []}`:            "!",
		`{"branchName": ["a"], "userStories": []}`:        "!",
	} {
		path := filepath.Join(dir, "prd.json")
		write(t, path, body)
		got, err := Branch(&PRDJSON{File: path})
		var bad *BadInputError
		switch {
		case want == "!" && !errors.As(err, &bad):
			t.Errorf("%s: %q, %v; want bad input", body, got, err)
		case want != "!" && (err != nil || got != want):
			t.Errorf("%s: %q, %v; want %q", body, got, err, want)
		}
	}
	md := filepath.Join(dir, "plan.md")
	write(t, md, "- [ ] US-1: x\n")
	if got, err := Branch(&Markdown{File: md}); got != "" || err != nil {
		t.Errorf("markdown plan: %q, %v", got, err)
	}
}

// Append adds stories at the end of userStories, as given, keeping the
// rest; a story the plan has, or one without an id, changes nothing.
func TestPRDJSONAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := os.WriteFile(path, []byte("\ufeff"+`{"project": "x", "userStories": [{"id": "US-1", "title": "one", "priority": 1, "passes": false}], "branchName": "b"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &PRDJSON{File: path}
	before, _ := os.ReadFile(path)
	for _, bad := range []string{`{"id": "US-1", "title": "again"}`, `{"title": "no id"}`, `[1]`} {
		if err := p.Append([]json.RawMessage{json.RawMessage(bad)}); err == nil {
			t.Errorf("Append(%s) took it", bad)
		}
		if now, _ := os.ReadFile(path); string(now) != string(before) {
			t.Fatalf("a refused Append changed the plan:\n%s", now)
		}
	}
	if err := p.Append([]json.RawMessage{json.RawMessage(`{"id": "US-9", "title": "nine", "priority": 9, "passes": false, "notes": "n"}`)}); err != nil {
		t.Fatal(err)
	}
	stories, err := p.Stories()
	if err != nil || len(stories) != 2 || stories[1].ID != "US-9" || stories[1].Title != "nine" {
		t.Fatalf("%+v %v", stories, err)
	}
	data, _ := os.ReadFile(path)
	if want := "\ufeff" + `{"project": "x", "userStories": [{"id": "US-1", "title": "one", "priority": 1, "passes": false}, {"id": "US-9", "title": "nine", "priority": 9, "passes": false, "notes": "n"}], "branchName": "b"}`; string(data) != want {
		t.Fatalf("the plan changed beyond the story appended:\n got %q\nwant %q", data, want)
	}
	got, err := StoriesIn(data, []string{"US-9"})
	if err != nil || len(got) != 1 || !strings.Contains(string(got[0]), `"notes":"n"`) && !strings.Contains(string(got[0]), `"notes": "n"`) {
		t.Fatalf("StoriesIn: %s %v", got, err)
	}
}

// A prd.json's tick changes the story's passes value and no other byte:
// the person's indentation (four spaces, a tab, one object a line), line
// endings, byte order mark and text - "R&D <b>" is not written back as
// "R\u0026D \u003cb\u003e" - stay as written. A passes nested in another
// field is not the story's; a story already passing changes nothing; one
// with no passes field gets one, the file written again in its own
// indentation.
func TestPRDJSONMarkDoneKeepsTheFile(t *testing.T) {
	write := func(t *testing.T, text string) *PRDJSON {
		t.Helper()
		path := filepath.Join(t.TempDir(), "prd.json")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return &PRDJSON{File: path}
	}
	read := func(t *testing.T, p *PRDJSON) string {
		t.Helper()
		data, err := os.ReadFile(p.File)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	text := "\ufeff{\r\n    \"project\": \"R&D <b> site\",\r\n    \"userStories\": [\r\n" +
		"        {\"id\": \"US-1\", \"title\": \"a & b\", \"meta\": {\"passes\": false}, \"passes\" :\tfalse, \"notes\": \"é ü <i>\"},\r\n" +
		"        {\"id\": \"US-2\", \"title\": \"two\", \"passes\": false}\r\n    ]\r\n}\r\n"
	p := write(t, text)
	if err := p.MarkDone("US-1"); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(text, "\"passes\" :\tfalse", "\"passes\" :\ttrue", 1)
	if got := read(t, p); got != want {
		t.Fatalf("the tick changed more than the passes value:\n got %q\nwant %q", got, want)
	}
	if err := p.MarkDone("US-1"); err != nil || read(t, p) != want {
		t.Fatalf("ticking a passing story again changed the file (%v):\n%q", err, read(t, p))
	}
	if err := p.MarkDone("US-9"); err == nil || read(t, p) != want {
		t.Fatalf("a story the plan does not have: %v\n%q", err, read(t, p))
	}
	stories, err := p.Stories()
	if err != nil || !stories[0].Done || stories[1].Done {
		t.Fatalf("%+v %v", stories, err)
	}

	tabbed := write(t, "{\n\t\"userStories\": [\n\t\t{\n\t\t\t\"id\": \"US-1\",\n\t\t\t\"title\": \"R&D <b>\"\n\t\t}\n\t]\n}\n")
	if err := tabbed.MarkDone("US-1"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, tabbed); got != "{\n\t\"userStories\": [\n\t\t{\n\t\t\t\"id\": \"US-1\",\n\t\t\t\"title\": \"R&D <b>\",\n\t\t\t\"passes\": true\n\t\t}\n\t]\n}\n" {
		t.Fatalf("a story without passes, in a tab-indented plan:\n%s", got)
	}
	if err := tabbed.Append([]json.RawMessage{json.RawMessage(`{"id": "US-2", "title": "x < y"}`)}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, tabbed); got != "{\n\t\"userStories\": [\n\t\t{\n\t\t\t\"id\": \"US-1\",\n\t\t\t\"title\": \"R&D <b>\",\n\t\t\t\"passes\": true\n\t\t},\n\t\t{\"id\": \"US-2\", \"title\": \"x < y\"}\n\t]\n}\n" {
		t.Fatalf("Append changed the plan beyond the story it wrote at the list's end, after the list's own separator:\n%q", got)
	}
	// Two stories: the separator is the one between them.
	two := write(t, "{\"userStories\": [\n    {\"id\": \"A\"},\n    {\"id\": \"B\"}\n  ],\n  \"x\": 1}")
	if err := two.Append([]json.RawMessage{json.RawMessage(`{"id": "C"}`), json.RawMessage(`{"id": "D"}`)}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, two); got != "{\"userStories\": [\n    {\"id\": \"A\"},\n    {\"id\": \"B\"},\n    {\"id\": \"C\"},\n    {\"id\": \"D\"}\n  ],\n  \"x\": 1}" {
		t.Fatalf("appended to a list of two:\n%q", got)
	}
	// An empty list: written again, in the file's indentation.
	none := write(t, "{\n   \"userStories\": []\n}\n")
	if err := none.Append([]json.RawMessage{json.RawMessage(`{"id": "A"}`)}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, none); got != "{\n   \"userStories\": [\n      {\n         \"id\": \"A\"\n      }\n   ]\n}\n" {
		t.Fatalf("appended to an empty list:\n%q", got)
	}
}

// An open checkbox that reads as neither a story nor a story's criterion -
// an id wiggum does not read (US-1a, US_2, US-2.1) or none, outside any
// story's nesting and details block - refuses the plan, naming its lines:
// skipped, it was never run and the run ended "0 open", exit 0. US-2.1 is
// not US-2.
func TestMarkdownUnreadCheckboxes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.md")
	write(t, path, "- [ ] US-1: one\n  - [ ] nested criterion\n- [ ] US-1a: split a\n- [ ] Add a logout button\n- [ ] US_2: underscore\n- [ ] US-2.1: sub\n- [x] done, no id\n- [ ] US-3: three\n\n### US-3\n- [ ] criterion in details\n")
	m := &Markdown{File: path}
	stories, err := m.Stories()
	if err != nil || len(stories) != 2 {
		t.Fatalf("stories: %v, %v; want US-1 and US-3, the unread lines left to Unread", stories, err)
	}
	err = m.Unread()
	var bad *BadInputError
	if !errors.As(err, &bad) {
		t.Fatalf("err = %v, want bad input", err)
	}
	for _, want := range []string{`line 3 "- [ ] US-1a: split a"`, `line 4 "- [ ] Add a logout button"`, `line 5 "- [ ] US_2: underscore"`, `line 6 "- [ ] US-2.1: sub"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name %s", err, want)
		}
	}
	for _, not := range []string{"line 2", "line 7", "line 11", "line 1 "} {
		if strings.Contains(err.Error(), not) {
			t.Errorf("err = %v names %s, which is no unread story", err, not)
		}
	}

	write(t, path, "- [ ] US-1: one\n  - [ ] nested criterion\n- [ ] US-3: three\n\n### US-3\n- [ ] criterion in details\n")
	if err := Unread(&Markdown{File: path}); err != nil {
		t.Fatalf("criteria only: %v", err)
	}
}

// A story commented out with <!-- --> - how a story is parked, hidden by
// every renderer - is no story: it was given to an agent and ticked.
func TestMarkdownCommentedOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.md")
	write(t, path, "- [ ] US-1: add login <!-- inline note -->\n<!-- postponed until legal signs off:\n- [ ] US-2: delete all user accounts older than a year\n- [ ] no id either\n-->\n- [ ] US-3: three <!-- parked below:\n- [ ] US-4: parked\n-->\n<!-- - [ ] US-5: one line -->\n```\n<!--\n```\n- [ ] US-6: after a fence that only shows a comment\n")
	m := &Markdown{File: path}
	stories, err := m.Stories()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range stories {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "US-1,US-3,US-6" {
		t.Fatalf("ids = %v, want US-1,US-3,US-6", ids)
	}
	if stories[1].Title != "three" {
		t.Errorf("US-3's title = %q", stories[1].Title)
	}
	if err := m.MarkDone("US-2"); err == nil {
		t.Errorf("MarkDone(US-2) of a commented-out story: no error")
	}
}

// Two open issues with one id are refused, naming both files, as a
// markdown plan's two stories with one id are: the second was never run
// and the run ended "0 open". One open and one completed stays completed.
func TestIssuesSameIDTwice(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bugs", "P1-BUG-1-crash-on-start.md"), "# Crash on start\n")
	write(t, filepath.Join(dir, "features", "P2-BUG-1-dark-mode.md"), "# Add dark mode\n")
	write(t, filepath.Join(dir, "features", "P3-FEAT-2-export-csv.md"), "# Export CSV\n")
	_, err := (&Issues{Dir: dir}).Stories()
	var bad *BadInputError
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "two open issues as BUG-1 (bugs/P1-BUG-1-crash-on-start.md and features/P2-BUG-1-dark-mode.md)") {
		t.Fatalf("err = %v, want bad input naming both files", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "completed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "bugs", "P1-BUG-1-crash-on-start.md"), filepath.Join(dir, "completed", "P1-BUG-1-crash-on-start.md")); err != nil {
		t.Fatal(err)
	}
	got, err := (&Issues{Dir: dir}).Stories()
	if err != nil || len(got) != 2 || !got[0].Done {
		t.Fatalf("open and completed: %+v, %v", got, err)
	}
}

// The stories a prd.json plan keeps between reads follow its own ticks
// (the passes values after a tick move by a byte) and any other write: each
// read says what a fresh read of the file says.
func TestPRDJSONKeptStoriesFollowTicks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	write(t, path, "\ufeff{\"userStories\": [\n  {\"id\": \"A-1\", \"passes\": false, \"priority\": 3},\n  {\"id\": \"A-2\", \"passes\": false, \"priority\": 1},\n  {\"id\": \"A-3\", \"priority\": 2},\n  {\"id\": \"A-4\", \"passes\": false, \"priority\": 4}\n]}\n")
	p := &PRDJSON{File: path}
	same := func(step string) {
		t.Helper()
		kept, err := p.Stories()
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := (&PRDJSON{File: path}).Stories()
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(kept) != fmt.Sprint(fresh) {
			t.Fatalf("%s: kept %v, the file says %v", step, kept, fresh)
		}
	}
	for _, id := range []string{"A-2", "A-4", "A-3", "A-1"} {
		same("before " + id)
		if err := p.MarkDone(id); err != nil {
			t.Fatal(err)
		}
		same("after " + id)
	}
	if got := read(t, path); !strings.HasPrefix(got, "\ufeff") || strings.Count(got, `"passes": true`) != 4 {
		t.Errorf("file after the ticks:\n%s", got)
	}
	write(t, path, "{\"userStories\": [{\"id\": \"B-1\", \"passes\": false}]}\n")
	same("rewritten by someone else")
}

// A plan - a markdown file, a prd.json, an issues directory - an agent
// replaced by a FIFO is an error at once, never a wait in open(2) for a
// writer that never comes (hunt10 #6, hunt11 #4; os.ReadDir opens with
// O_DIRECTORY, so the issues directory never waited).
func TestFIFOPlanIsNeverWaitedOn(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []Plan{&Markdown{File: filepath.Join(dir, "plan.md")}, &PRDJSON{File: filepath.Join(dir, "prd.json")}, &Issues{Dir: filepath.Join(dir, "issues")}} {
		name := filepath.Join(dir, "plan.md")
		switch p := p.(type) {
		case *PRDJSON:
			name = p.File
		case *Issues:
			name = p.Dir
		}
		if err := syscall.Mkfifo(name, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := p.Stories(); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s a FIFO: no error", name)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s a FIFO: Stories is still waiting on it after a minute", name)
		}
	}
}

// Lines indented under a story's line - its acceptance criteria, as the
// plan check counts them - are part of its details, given to the agent as
// a prd.json's acceptanceCriteria are, after its ### block when it has
// one; they were counted, and never sent. The nesting ends at a line as
// far left as the story's (a box indented after it is refused, as it
// reaches no agent), a heading, or the next story; a comment in it is
// not sent. A tick still changes one byte.
func TestMarkdownNestedCriteria(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.md")
	plan := "# PRD\n" +
		"- [ ] US-2: Add todo\n" +
		"  - [ ] input field renders\n" +
		"  - [ ] pressing enter adds item\n" +
		"    and clears the field\n" +
		"\n" +
		"  - [x] a criterion met already <!-- parked:\n" +
		"  - [ ] hidden\n" +
		"  -->\n" +
		"  ```\n" +
		"todo add milk\n" +
		"  ```\n" +
		"- [ ] US-3: Block and nesting\n" +
		"  * [ ] nested of three\n" +
		"- [ ] US-4: Parent\n" +
		"  - [ ] US-5: Child\n" +
		"    - [ ] criterion of five\n" +
		"- [ ] US-6: No criteria\n" +
		"\n" +
		"Text at the story's indent ends its nesting.\n" +
		"\n" +
		"### US-3 Block and nesting\n" +
		"The block.\n"
	write(t, path, plan)
	m := &Markdown{File: path}
	got, err := m.Stories()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"US-2": "US-2: Add todo\n\nAcceptance criteria:\n- [ ] input field renders\n- [ ] pressing enter adds item\n  and clears the field\n\n- [x] a criterion met already\n```\ntodo add milk\n```",
		"US-3": "### US-3 Block and nesting\nThe block.\n\nAcceptance criteria:\n* [ ] nested of three",
		"US-4": "",
		"US-5": "US-5: Child\n\nAcceptance criteria:\n- [ ] criterion of five",
		"US-6": "",
	}
	if len(got) != len(want) {
		t.Fatalf("stories = %+v", got)
	}
	for _, s := range got {
		if s.Details != want[s.ID] {
			t.Errorf("%s details = %q\nwant %q", s.ID, s.Details, want[s.ID])
		}
	}
	if err := m.Unread(); err != nil {
		t.Errorf("Unread: %v", err)
	}
	if err := m.MarkDone("US-2"); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, path), strings.Replace(plan, "- [ ] US-2", "- [x] US-2", 1); got != want {
		t.Errorf("tick changed more than the story's mark:\n%s", got)
	}

	write(t, path, "- [ ] US-1: one\nA paragraph at the story's indent.\n  - [ ] under the paragraph, not the story\n")
	m = &Markdown{File: path}
	if got, err := m.Stories(); err != nil || len(got) != 1 || got[0].Details != "" {
		t.Errorf("stories = %+v, %v; want US-1 without details", got, err)
	}
	if err := m.Unread(); err == nil || !strings.Contains(err.Error(), `line 3 "- [ ] under the paragraph, not the story"`) {
		t.Errorf("Unread = %v, want line 3 named: it reaches no agent", err)
	}
}
