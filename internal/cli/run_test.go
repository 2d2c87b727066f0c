package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// An error a full disk caused says so and what to do, once, and keeps
// what it wraps (the exit code follows the wrapped error).
func TestDiskFullErrorSaysWhatToDo(t *testing.T) {
	base := fmt.Errorf("run: checkpoint: snapshot the working tree: %w", &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC})
	err := diskFull(base)
	if !strings.HasSuffix(err.Error(), "The disk holding the repository is full: free space, then run again") || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("diskFull(ENOSPC) = %v", err)
	}
	gitErr := errors.New("git hash-object: fatal: unable to write loose object file: No space left on device")
	if err := diskFull(gitErr); !strings.Contains(err.Error(), "The disk holding the repository is full") {
		t.Fatalf("diskFull(git's words) = %v", err)
	}
	said := errors.New("US-1 failed ... The disk holding the repository is full. Its work is left ...")
	if err := diskFull(said); err != said {
		t.Fatalf("said twice: %v", err)
	}
	if err := diskFull(errors.New("other")); err.Error() != "other" {
		t.Fatalf("other error changed: %v", err)
	}
}
