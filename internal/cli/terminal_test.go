package cli

import (
	"os"
	"syscall"
	"testing"
)

// /dev/null is a character device, not a terminal: wiggum run with its
// output there draws no status line into it (nor colours its log, nor
// watch goes full-screen with its input there).
func TestDevNullIsNoTerminal(t *testing.T) {
	t.Setenv("TERM", "xterm")
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is not the character device this test needs: %v %v", os.DevNull, fi, err)
	}
	if isTerminal(f) {
		t.Fatalf("isTerminal(%s) = true", os.DevNull)
	}
}

// A terminal still is one: the pseudo-terminal's master side answers a
// terminal's ioctl as a terminal does.
func TestPtyIsTerminal(t *testing.T) {
	t.Setenv("TERM", "xterm")
	f, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no pseudo-terminal: %v", err)
		}
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer f.Close()
	if !isTerminal(f) {
		t.Fatal("isTerminal(/dev/ptmx) = false")
	}
	t.Setenv("TERM", "dumb")
	if isTerminal(f) {
		t.Fatal("isTerminal with TERM=dumb = true")
	}
}
