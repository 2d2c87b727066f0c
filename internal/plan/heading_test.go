package plan

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// headingOf is the heading expression without backtracking: same answers.
func TestHeadingOfMatchesTheExpression(t *testing.T) {
	for _, line := range []string{
		"# Plan", "## US-1: title ##", "### C#", "# #", "#", "#x", "####### seven", "##\tUS-2 tab", "## trailing   ",
		"#  spaced  # ", "no heading", "", " # indented", "### US-3 ### more ###", "## a#b", "##  ", "# \t#\t",
	} {
		want := heading().FindStringSubmatch(line)
		if got := headingOf(line); !slices.Equal(got, want) {
			t.Errorf("%q: got %q, want %q", line, got, want)
		}
	}
}

// The cached parse follows the file: an edit by anyone else (another
// inode, size or time) is seen, and MarkDone's own write keeps it right.
func TestMarkdownCacheFollowsTheFile(t *testing.T) {
	path := t.TempDir() + "/plan.md"
	write := func(s string) {
		if err := os.WriteFile(path+".tmp", []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write("- [ ] US-1: one\n- [ ] US-2: two\n")
	m := &Markdown{File: path}
	if s, _ := m.Stories(); len(s) != 2 || s[0].Done {
		t.Fatalf("%+v", s)
	}
	if err := m.MarkDone("US-1"); err != nil {
		t.Fatal(err)
	}
	if s, _ := m.Stories(); !s[0].Done || s[1].Done {
		t.Errorf("after MarkDone: %+v", s)
	}
	write("- [ ] US-1: one\n- [x] US-2: two\n- [ ] US-3: three\n")
	if s, _ := m.Stories(); len(s) != 3 || s[0].Done || !s[1].Done {
		t.Errorf("after an outside edit: %+v", s)
	}
	data, _ := os.ReadFile(path)
	if err := m.MarkDone("US-3"); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(path); string(now) != strings.Replace(string(data), "[ ] US-3", "[x] US-3", 1) {
		t.Errorf("MarkDone wrote %q", now)
	}
}

// A tick is written in place, one byte, on the file as parsed: the plan
// keeps its inode (a symlinked plan stays a link), and a line that moved
// since the parse - an edit that kept the file's size and time - is found
// where it is now rather than overwritten where it was.
func TestMarkdownTickInPlace(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/plan.md"
	if err := os.WriteFile(path, []byte("# Plan\n- [ ] US-1: one\n- [ ] US-2: two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := dir + "/link.md"
	if err := os.Symlink("plan.md", link); err != nil {
		t.Fatal(err)
	}
	m := &Markdown{File: link}
	if _, err := m.Stories(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	if err := m.MarkDone("US-2"); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) {
		t.Error("the tick replaced the plan's file instead of writing it in place")
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlinked plan is no longer a link: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "# Plan\n- [ ] US-1: one\n- [x] US-2: two\n" {
		t.Fatalf("after the tick: %q", got)
	}
	// Someone swaps two lines and puts the time back: same size, same
	// time, same inode, so the cache still holds the old lines.
	fi, _ := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("- [ ] US-1: one\n# Plan\n"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := m.MarkDone("US-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "- [x] US-1: one\n# Plan\n- [x] US-2: two\n" {
		t.Fatalf("after a tick on a plan edited behind the cache: %q", got)
	}
}

// NextOpen says what Next and Open say of Stories, through ticks in any
// order, a story listed twice, skips, and an edit behind the plan's back.
func TestNextOpenFollowsTicks(t *testing.T) {
	path := t.TempDir() + "/plan.md"
	if err := os.WriteFile(path, []byte("- [ ] A-1: a\n- [x] A-2: b\n- [ ] A-3: c\n- [ ] A-4: d\n- [ ] A-3: c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &Markdown{File: path}
	same := func(skip map[string]bool) {
		t.Helper()
		got, open, err := NextOpen(m, skip)
		if err != nil {
			t.Fatal(err)
		}
		all, _ := m.Stories()
		want := Next(all, skip)
		if (got == nil) != (want == nil) || got != nil && *got != *want || open != Open(all) {
			t.Fatalf("NextOpen = %+v, %d; Next, Open = %+v, %d", got, open, want, Open(all))
		}
	}
	same(nil)
	for _, id := range []string{"A-3", "A-1", "A-1"} {
		if err := m.MarkDone(id); err != nil {
			t.Fatal(err)
		}
		same(nil)
		same(map[string]bool{"A-4": true})
	}
	if err := os.WriteFile(path, []byte("- [ ] A-0: new\n- [x] A-1: a\n- [ ] A-4: d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	same(nil)
	if err := m.MarkDone("A-0"); err != nil {
		t.Fatal(err)
	}
	same(nil)
	if err := m.MarkDone("A-4"); err != nil {
		t.Fatal(err)
	}
	same(nil)
	if s, open, _ := NextOpen(m, nil); s != nil || open != 0 {
		t.Fatalf("all done: %+v, %d", s, open)
	}
}

// Two different stories under one id (a copied line edited into a new
// story): the second was ticked with the first and never run, the run
// saying all was done. The plan is refused, naming both lines; the same
// line twice is still one story.
func TestSameIDForTwoStories(t *testing.T) {
	path := t.TempDir() + "/plan.md"
	if err := os.WriteFile(path, []byte("- [ ] US-1: add login page\n- [ ] US-2: add logout\n- [ ] US-1: add password reset\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &Markdown{File: path}
	_, err := m.Stories()
	var bad *BadInputError
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), `lists two stories as US-1 (line 1: "add login page", line 3: "add password reset")`) {
		t.Fatalf("Stories: %v", err)
	}
	if _, _, err := NextOpen(m, nil); !errors.As(err, &bad) {
		t.Fatalf("NextOpen: %v", err)
	}
	if err := m.MarkDone("US-1"); err == nil {
		t.Fatal("MarkDone ticked a plan with one id for two stories")
	}
	if data, _ := os.ReadFile(path); strings.Contains(string(data), "[x]") {
		t.Fatalf("the plan was changed:\n%s", data)
	}
}
