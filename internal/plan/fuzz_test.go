package plan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzMarkDone checks that marking any story done changes exactly the
// checkbox of that story's lines and nothing else in the file.
func FuzzMarkDone(f *testing.F) {
	f.Add(tenPlan, 0)
	f.Add("- [ ] US-1: a\n- [ ] US-10: b\n- [ ] US-100: c\n", 0)
	f.Add("* [ ] **T-1** x\r\n1. [ ] T-1 again\n", 0)
	f.Add("- [ ] US-1: a\n  - [ ] crit\n  ```\nx\n  ```\n  - [ ] US-2: b\n\tnote <!--\n-->\n### US-1\nmore\n", 1)
	f.Fuzz(func(t *testing.T, text string, pick int) {
		path := filepath.Join(t.TempDir(), "plan.md")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		m := &Markdown{File: path}
		stories, err := m.Stories()
		if err != nil || len(stories) == 0 {
			return
		}
		if pick < 0 {
			pick = -pick
		}
		id := stories[pick%len(stories)].ID
		if err := m.MarkDone(id); err != nil {
			t.Fatal(err)
		}
		after, _ := os.ReadFile(path)
		was := strings.SplitAfter(text, "\n")
		now := strings.SplitAfter(string(after), "\n")
		if len(was) != len(now) {
			t.Fatalf("line count changed: %d -> %d", len(was), len(now))
		}
		targets := map[int]bool{}
		parsed, _ := parseMarkdown(was)
		for _, s := range parsed {
			if s.ID == id && !s.Done {
				targets[s.line] = true
			}
		}
		for i := range was {
			if was[i] == now[i] {
				if targets[i] {
					t.Fatalf("line %d of %s not ticked: %q", i, id, was[i])
				}
				continue
			}
			if !targets[i] {
				t.Fatalf("line %d changed but is not %s: %q -> %q", i, id, was[i], now[i])
			}
			if strings.Replace(was[i], "[ ]", "[x]", 1) != now[i] {
				t.Fatalf("line %d changed beyond its checkbox: %q -> %q", i, was[i], now[i])
			}
		}
		got, _ := m.Stories()
		for _, s := range got {
			if s.ID == id && !s.Done {
				t.Fatalf("%s still open after MarkDone", id)
			}
		}
	})
}

// FuzzPRDJSONMarkDone: whatever the prd.json, ticking one of its stories
// leaves it done and every other story as it was; where the story had a
// passes field, no byte but its value's changed.
func FuzzPRDJSONMarkDone(f *testing.F) {
	f.Add(`{"userStories": [{"id": "US-1", "passes": false}, {"id": "US-2", "passes": false}]}`, 0)
	f.Add("{\n    \"userStories\": [\n        {\"id\": \"a\", \"x\": {\"passes\": 1}, \"passes\": null},\n        {\"id\": \"b\"}\n    ]\n}\n", 1)
	f.Add(`{"userStories": [{"id": "x\u0026", "passes": 0, "passes": false}], "userStories2": []}`, 0)
	f.Fuzz(func(t *testing.T, text string, pick int) {
		path := filepath.Join(t.TempDir(), "prd.json")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		p := &PRDJSON{File: path}
		before, err := p.Stories()
		if err != nil || len(before) == 0 {
			return
		}
		id := before[max(pick, -pick)%len(before)].ID
		if err := p.MarkDone(id); err != nil {
			t.Fatal(err)
		}
		after, err := p.Stories()
		if err != nil || len(after) != len(before) {
			t.Fatalf("%v: %d stories, then %d", err, len(before), len(after))
		}
		for i := range after {
			want := before[i]
			want.Done = want.Done || want.ID == id
			if after[i] != want {
				t.Fatalf("story %d: %+v, want %+v", i, after[i], want)
			}
		}
		data, _ := os.ReadFile(path)
		if start, end, found, ok := passesSpan([]byte(text), id); ok && found && start >= 0 {
			if want := text[:start] + "true" + text[end:]; string(data) != want {
				t.Fatalf("bytes beyond the passes value changed:\n got %q\nwant %q", data, want)
			}
		}
	})
}

// FuzzPRDJSONAppend: whatever the prd.json, a story appended is there
// after it, and every story it had is as it was.
func FuzzPRDJSONAppend(f *testing.F) {
	f.Add(`{"userStories": [{"id": "US-1", "passes": false}, {"id": "US-2", "passes": true}]}`)
	f.Add("{\n\t\"userStories\": [\n\t\t{\"id\": \"a\"}\n\t],\n\t\"userStories\": [ {\"id\": \"b\"} ]\n}\n")
	f.Add(`{"userStories": []}`)
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(t.TempDir(), "prd.json")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		p := &PRDJSON{File: path}
		before, err := p.Stories()
		if err != nil {
			return
		}
		if err := p.Append([]json.RawMessage{json.RawMessage(`{"id": "NEW-fuzz", "title": "a < b"}`)}); err != nil {
			return // an id the plan has
		}
		after, err := p.Stories()
		if err != nil || len(after) != len(before)+1 {
			t.Fatalf("%v: %d stories, then %d", err, len(before), len(after))
		}
		i := slices.IndexFunc(after, func(s Story) bool { return s.ID == "NEW-fuzz" })
		if i < 0 || after[i].Title != "a < b" {
			t.Fatalf("the story appended is not there: %+v", after)
		}
		rest := slices.Delete(slices.Clone(after), i, i+1)
		if !slices.Equal(rest, before) {
			t.Fatalf("the plan's stories changed:\n%+v\n%+v", before, rest)
		}
	})
}
