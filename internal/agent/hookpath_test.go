package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestOnPathLinksThisBinaryWhenPathLacksIt(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	runtime := t.TempDir()
	if n := HookNote(); !strings.Contains(n, "wiggum is not on PATH") {
		t.Fatalf("install's note = %q", n)
	}
	note, err := OnPath(runtime)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(note, "wiggum is not on PATH") {
		t.Fatalf("note = %q", note)
	}
	dir := filepath.Join(runtime, HookBinDir)
	if !strings.HasSuffix(os.Getenv("PATH"), string(os.PathListSeparator)+dir) {
		t.Fatalf("PATH = %q, want %s last (nothing else to come before)", os.Getenv("PATH"), dir)
	}

	found, err := exec.LookPath("wiggum")
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	if !sameFile(found, self) {
		t.Fatalf("PATH finds %s, not the running binary %s", found, self)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("%s holds %d entries; only the link belongs there", dir, len(entries))
	}
	// Now PATH finds this binary: nothing more to do, nothing to say.
	if note, err := OnPath(runtime); err != nil || note != "" {
		t.Fatalf("second call: note %q, err %v", note, err)
	}
	if n := HookNote(); n != "" {
		t.Fatalf("install's note once PATH finds this binary = %q", n)
	}
}

func TestOnPathPutsThisBinaryBeforeAnotherWiggum(t *testing.T) {
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "wiggum"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", other)
	if n := HookNote(); !strings.Contains(n, "is not this one") || !strings.Contains(n, other) {
		t.Fatalf("install's note = %q", n)
	}
	runtime := t.TempDir()
	// A stale link from an earlier binary is replaced.
	dir := filepath.Join(runtime, HookBinDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(other, "wiggum"), filepath.Join(dir, "wiggum")); err != nil {
		t.Fatal(err)
	}
	note, err := OnPath(runtime)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(note, "is not this one") || !strings.Contains(note, filepath.Join(other, "wiggum")) {
		t.Fatalf("note = %q", note)
	}
	found, err := exec.LookPath("wiggum")
	self, _ := os.Executable()
	if err != nil || !sameFile(found, self) {
		t.Fatalf("PATH finds %s (%v), not the running binary %s", found, err, self)
	}
	if !strings.HasPrefix(os.Getenv("PATH"), dir+string(os.PathListSeparator)) {
		t.Fatalf("PATH = %q, want %s first, before the other wiggum", os.Getenv("PATH"), dir)
	}
}

func TestOnPathFailsClearlyWhenItCannotLink(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := os.Getenv("PATH")
	if _, err := OnPath(file); err == nil || !strings.Contains(err.Error(), "create") {
		t.Fatalf("err = %v, want a clear failure to create the directory", err)
	}
	if os.Getenv("PATH") != before {
		t.Fatal("PATH changed although the link was not made")
	}
}
