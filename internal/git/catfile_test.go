package git

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatReadsInRounds: one cat-file answers round after round as Batch
// does, names no object as "", and neither side blocks when the names and
// the answers are far larger than a pipe holds.
func TestCatReadsInRounds(t *testing.T) {
	dir := testRepo(t)
	big := strings.Repeat("0123456789abcdef", 1<<14) // 256 KiB
	write(t, dir, "big.txt", big)
	gitT(t, dir, "add", "big.txt")
	gitT(t, dir, "commit", "-q", "-m", "big")
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	cat := r.Cat(ctx)
	defer cat.Close()
	names := []string{"HEAD^{tree}", "HEAD:a.txt", "HEAD:nope", "HEAD~1^{commit}"}
	got, err := cat.Read(names...)
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.Batch(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		if got[i].ID != want[i].ID || got[i].Type != want[i].Type || string(got[i].Data) != string(want[i].Data) {
			t.Fatalf("%s: cat %+v, Batch %+v", names[i], got[i], want[i])
		}
	}
	if got[2].ID != "" {
		t.Fatalf("a missing name read as %+v", got[2])
	}
	// Many names for a big blob: megabytes each way.
	var many []string
	for range 2000 {
		many = append(many, "HEAD:big.txt")
	}
	objs, err := cat.Read(many...)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != len(many) || string(objs[len(objs)-1].Data) != big {
		t.Fatalf("%d answers, last %d bytes", len(objs), len(objs[len(objs)-1].Data))
	}
	if err := cat.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCatReportsGitsFailure: a cat-file that cannot run says why, and so
// does every later read.
func TestCatReportsGitsFailure(t *testing.T) {
	dir := testRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	cat := r.Cat(ctx)
	if _, err := cat.Read("HEAD"); err == nil || !strings.Contains(err.Error(), "cat-file") {
		t.Fatalf("read in a removed repository: %v", err)
	}
	if _, err := cat.Read("HEAD"); err == nil {
		t.Fatal("a second read after a failure succeeded")
	}
	cat.Close()
}
