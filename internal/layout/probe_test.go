package layout

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// Probing the lock (what status and every hook do) must never make an
// uncontended Acquire fail. Probers hammer Probe while one goroutine takes
// and releases the lock; a probe that took the flock even for an instant
// would make some of those acquisitions return HeldError.
func TestProbeNeverRefusesAnAcquire(t *testing.T) {
	tr := At(t.TempDir())
	var stop atomic.Bool
	var wg sync.WaitGroup
	var probes atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := tr.Probe(); err != nil {
					t.Error(err)
					return
				}
				probes.Add(1)
			}
		}()
	}
	refused := 0
	for range 300 {
		l, err := tr.Acquire(context.Background(), AcquireOptions{})
		var he *HeldError
		if errors.As(err, &he) {
			refused++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if refused > 0 {
		t.Fatalf("%d of 300 uncontended acquisitions were refused during %d probes", refused, probes.Load())
	}
}
