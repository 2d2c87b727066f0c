package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzMarkDone checks that marking any story done changes exactly the
// checkbox of that story's lines and nothing else in the file.
func FuzzMarkDone(f *testing.F) {
	f.Add(tenPlan, 0)
	f.Add("- [ ] US-1: a\n- [ ] US-10: b\n- [ ] US-100: c\n", 0)
	f.Add("* [ ] **T-1** x\r\n1. [ ] T-1 again\n", 0)
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
		for _, s := range parseMarkdown(was) {
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
