package layout

import (
	"os"
	"path/filepath"
	"testing"
)

// Linking a second name again - every run after the first does, for the
// event log and the run journal - leaves no stray name.tmp beside it (a
// rename onto another name of the same file does nothing), nor does a
// link that cannot be made because a directory is in its place.
func TestLinkSecondNameLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path, link := filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "git", "wiggum-events.jsonl")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		LinkSecondName(path, link)
		fi, err1 := os.Stat(path)
		li, err2 := os.Stat(link)
		if err1 != nil || err2 != nil || !os.SameFile(fi, li) {
			t.Fatalf("link is not a second name of path: %v, %v", err1, err2)
		}
		if _, err := os.Lstat(link + ".tmp"); err == nil {
			t.Fatalf("%s.tmp left behind", link)
		}
	}
	other := filepath.Join(dir, "git", "wiggum-lease")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	LinkSecondName(path, other)
	if _, err := os.Lstat(other + ".tmp"); err == nil {
		t.Fatalf("%s.tmp left behind", other)
	}
}
