package signals

import (
	"syscall"
	"testing"
	"time"
)

// A wait begun after a first signal interrupted the command ends at the
// second signal, not at its deadline; one begun before any signal ends at
// the first.
func TestWithinEndsAtTheNextSignal(t *testing.T) {
	ctx, stop := Context()
	defer stop()
	before, cancel := Within(ctx, time.Hour)
	defer cancel()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-before.Done()
	if got := Caught(ctx); got != syscall.SIGINT {
		t.Fatalf("Caught = %v, want SIGINT", got)
	}
	after, cancel := Within(ctx, time.Hour)
	defer cancel()
	if after.Err() != nil {
		t.Fatalf("a wait begun after the first signal ended before a second: %v", after.Err())
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-after.Done()
	if got := Caught(ctx); got != syscall.SIGINT {
		t.Fatalf("Caught after a second signal = %v, want the first, SIGINT", got)
	}
}
