package plan

import (
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
