package hooks

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wiggum-dev/wiggum/guard"
)

// readScript reads regular files in bounds and refuses, without blocking,
// what is not one.
func TestReadScriptBounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	push := write("push.sh", "git push\n")
	big := write("big.sh", strings.Repeat("#", 3*guard.MaxScript))
	tool := write("tool", "\x7fELF\x02\x01\x01\x00"+strings.Repeat("x", 3*guard.MaxScript))
	if b, err := readScript(tool); err != nil || len(b) != 1024 {
		t.Errorf("a compiled program: read %d bytes, %v; want its first KiB", len(b), err)
	}
	small := write("small.sh", strings.Repeat("y", 1024)+"git push\n")
	if b, err := readScript(small); err != nil || !strings.HasSuffix(string(b), "git push\n") || len(b) != 1033 {
		t.Errorf("a script past its first KiB: read %d bytes, %v", len(b), err)
	}
	link := filepath.Join(dir, "link.sh")
	loop := filepath.Join(dir, "loop.sh")
	fifo := filepath.Join(dir, "fifo")
	if err := os.Symlink(push, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{push, link} {
		if b, err := readScript(p); err != nil || string(b) != "git push\n" {
			t.Errorf("%s: got %q, %v", p, b, err)
		}
	}
	if b, err := readScript(big); err != nil || len(b) != guard.MaxScript+1 {
		t.Errorf("big: read %d bytes, %v; want %d", len(b), err, guard.MaxScript+1)
	}
	if _, err := readScript(filepath.Join(dir, "missing.sh")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want not-exist", err)
	}
	for _, p := range []string{dir, fifo, loop, "/dev/null"} {
		if _, err := readScript(p); err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want an error other than not-exist", p, err)
		}
	}

	// Wired into the hook's policy: the script's content is judged.
	p := guardPolicy(dir, dir)
	for cmd, want := range map[string]guard.Action{
		"sh push.sh": guard.Deny, "./link.sh": guard.Deny, "sh big.sh": guard.Ask,
		"sh fifo": guard.Ask, "sh missing.sh": guard.Allow, "./tool --version": guard.Allow,
	} {
		if d := guard.Check(cmd, p); d.Action != want {
			t.Errorf("%q: got %v, want %s", cmd, d, want)
		}
	}
}
