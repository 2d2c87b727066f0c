package git

import (
	"os"
	"os/exec"
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

// TestCatSizes: --batch-command tells sizes without contents; a git
// without it (before 2.36: here the real git behind a wrapper that rejects
// the option as such a git does) still reads, and Sizes says it cannot.
func TestCatSizes(t *testing.T) {
	dir := testRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	cat := r.Cat(ctx)
	sizes, ok, err := cat.Sizes("HEAD:a.txt", "HEAD:nope")
	if err != nil || !ok || len(sizes) != 2 || sizes[0] != 2 || sizes[1] != -1 {
		t.Fatalf("Sizes = %v %v %v", sizes, ok, err)
	}
	if objs, err := cat.Read("HEAD:a.txt"); err != nil || string(objs[0].Data) != "a\n" {
		t.Fatalf("Read after Sizes: %v %v", objs, err)
	}
	cat.Close()

	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	wrapper := "#!/bin/sh\nfor a; do [ \"$a\" = --batch-command ] && { echo \"error: unknown option \\`batch-command'\" >&2; exit 129; }; done\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, sizesFirst := range []bool{true, false} {
		cat := r.Cat(ctx)
		if sizesFirst {
			if _, ok, err := cat.Sizes("HEAD:a.txt"); ok || err != nil {
				t.Fatalf("Sizes on an old git: ok %v, %v", ok, err)
			}
		}
		objs, err := cat.Read("HEAD:a.txt", "HEAD:b.txt")
		if err != nil || string(objs[0].Data) != "a\n" || string(objs[1].Data) != "b\n" {
			t.Fatalf("Read on an old git: %v %v", objs, err)
		}
		if _, ok, err := cat.Sizes("HEAD:a.txt"); ok || err != nil {
			t.Fatalf("Sizes on an old git: ok %v, %v", ok, err)
		}
		if err := cat.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
