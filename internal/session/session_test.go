package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

func newState(t *testing.T) *checkpoint.State {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	st, err := checkpoint.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRunRecordRoundTripAndCorrupt(t *testing.T) {
	st := newState(t)
	if r, err := ReadRun(st); r != nil || err != nil {
		t.Fatalf("no run: %v %v", r, err)
	}
	if err := WriteRun(st, Run{PID: 7, Story: "US-1", Iteration: 2, Policy: PolicyRecord}); err != nil {
		t.Fatal(err)
	}
	r, err := ReadRun(st)
	if err != nil || r.Story != "US-1" || r.Iteration != 2 || r.Policy != PolicyRecord {
		t.Fatalf("got %+v, %v", r, err)
	}
	// A second write goes through the spare the first left.
	if err := WriteRun(st, Run{PID: 7, Story: "US-2", Iteration: 3}); err != nil {
		t.Fatal(err)
	}
	if r, err := ReadRun(st); err != nil || r.Story != "US-2" || r.Policy != "" {
		t.Fatalf("second record: %+v, %v", r, err)
	}
	path, _ := st.Runtime(layout.RunFile)
	os.WriteFile(path, []byte("{not json"), 0o644)
	var ce *checkpoint.CorruptError
	if _, err := ReadRun(st); !errors.As(err, &ce) || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupt run record: %v", err)
	}
	if err := ClearRun(st); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, statefile.SparePath(path)} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after ClearRun: %v", p, err)
		}
	}
	if err := ClearRun(st); err != nil {
		t.Fatalf("clearing twice: %v", err)
	}
}

// Concurrent hooks appending failures lose nothing below the cap, and the
// log keeps only the newest entries past it.
func TestAppendFailureConcurrentAndCapped(t *testing.T) {
	st := newState(t)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				if err := AppendFailure(st, Failure{Story: fmt.Sprintf("US-%d", w), Source: "test-hook", Output: strings.Repeat("x", 20000)}); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	all, err := Failures(st, "")
	if err != nil || len(all) != 40 {
		t.Fatalf("got %d entries, %v", len(all), err)
	}
	if len(all[0].Output) > maxOutputLen+8 {
		t.Fatalf("output not capped: %d bytes", len(all[0].Output))
	}
	one, _ := Failures(st, "US-2")
	if len(one) != 10 {
		t.Fatalf("US-2 has %d failures, want 10", len(one))
	}
	for i := 0; i < maxFailures; i++ {
		AppendFailure(st, Failure{Story: "US-9", Source: "gate"})
	}
	all, _ = Failures(st, "")
	if len(all) != maxFailures || all[0].Story != "US-9" {
		t.Fatalf("cap: %d entries, first %q", len(all), all[0].Story)
	}
}

func TestAppendFailureSetsAsideACorruptLog(t *testing.T) {
	st := newState(t)
	path, _ := st.Runtime(layout.FailureFile)
	os.WriteFile(path, []byte("garbage\n"), 0o644)
	if _, err := Failures(st, ""); err == nil {
		t.Fatal("a corrupt failure log must be an error when read")
	}
	if err := AppendFailure(st, Failure{Story: "US-1", Source: "gate"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".corrupt"); err != nil {
		t.Fatal("the damaged log must be kept aside")
	}
	all, err := Failures(st, "")
	if err != nil || len(all) != 1 {
		t.Fatalf("got %v, %v", all, err)
	}
}

// An event line is written whatever its fields hold: a number JSON cannot
// hold (a run's spending summed to +Inf) is left out, not the line - the
// run's run_end was silently dropped, and report called the run
// unfinished. What may be a secret in its text is masked.
func TestAppendEventAtWritesEveryLine(t *testing.T) {
	path := t.TempDir() + "/events.jsonl"
	if err := AppendEventAt(path, "run_end", map[string]any{"iterations": 2, "cost_usd": math.Inf(1), "error": "push https://u:SECRET@host/r failed"}); err != nil {
		t.Fatal(err)
	}
	if err := AppendEventAt(path, "iteration_end", map[string]any{"cost_usd": math.NaN(), "paths": []string{"GITHUB_TOKEN=SECRET"}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"event":"run_end"`) || !strings.Contains(lines[0], `"iterations":2`) ||
		strings.Contains(string(b), "cost_usd") || strings.Contains(string(b), "SECRET") || !strings.Contains(lines[0], "https://***@host/r") {
		t.Fatalf("log:\n%s", b)
	}
}
