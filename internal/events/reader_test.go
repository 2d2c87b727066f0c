package events

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func next(t *testing.T, r *Reader) Event {
	t.Helper()
	ev, err := r.Next()
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return ev
}

func wantEOF(t *testing.T, r *Reader) {
	t.Helper()
	if ev, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("Next = %+v, %v; want io.EOF", ev, err)
	}
}

func TestReaderFollowsATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	r := NewReader(path)
	defer r.Close()
	wantEOF(t, r) // no file yet

	appendTo(t, path, `{"time":"2026-11-23T10:00:00Z","event":"run_start","plan":"plan.md","workers":2}`+"\n"+`{"event":"iteration_st`)
	ev := next(t, r)
	if ev.Name != RunStart || ev.Plan != "plan.md" || ev.Workers != 2 || ev.Time.Hour() != 10 {
		t.Errorf("first event = %+v", ev)
	}
	wantEOF(t, r)
	if r.Pending() == 0 {
		t.Error("the torn line is not pending")
	}
	appendTo(t, path, `art","story":"US-1","worker":3}`+"\n")
	ev = next(t, r)
	if ev.Name != IterationStart || ev.Story != "US-1" || ev.Worker != 3 {
		t.Errorf("completed line = %+v", ev)
	}
	wantEOF(t, r)
	if fi, _ := os.Stat(path); r.Offset() != fi.Size() {
		t.Errorf("offset %d, file size %d", r.Offset(), fi.Size())
	}
}

func TestReaderReportsCorruptLinesAndGoesOn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	long := `{"event":"x","message":"` + strings.Repeat("a", MaxLine+10) + `"}`
	appendTo(t, path, "not json\n\n{\"no_event\":1}\n"+long+"\n"+`{"event":"run_end","open":2}`+"\n")
	r := NewReader(path)
	defer r.Close()
	var lineErrs []*LineError
	var got []Event
	for {
		ev, err := r.Next()
		var le *LineError
		if errors.As(err, &le) {
			lineErrs = append(lineErrs, le)
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(got) != 1 || got[0].Name != RunEnd || got[0].Open != 2 {
		t.Errorf("events = %+v", got)
	}
	if len(lineErrs) != 3 {
		t.Fatalf("line errors = %v", lineErrs)
	}
	if lineErrs[0].Line != 1 || lineErrs[1].Line != 2 || lineErrs[2].Line != 3 {
		t.Errorf("line numbers: %v", lineErrs)
	}
	if !errors.Is(lineErrs[2], ErrTooLong) || lineErrs[2].Offset != int64(len("not json\n\n{\"no_event\":1}\n")) {
		t.Errorf("oversized line: %v", lineErrs[2])
	}
	if cap(r.buf) > MaxLine+1 {
		t.Errorf("buffer grew to %d bytes", cap(r.buf))
	}
}

func TestReaderAtOffsetAndTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	appendTo(t, path, `{"event":"run_start"}`+"\n")
	size, err := Size(path)
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, `{"event":"run_end"}`+"\n")
	r := NewReaderAt(path, size)
	defer r.Close()
	if ev := next(t, r); ev.Name != RunEnd {
		t.Errorf("from the offset: %+v", ev)
	}
	wantEOF(t, r)
	// The log is removed and started again: the reader starts over.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, `{"event":"merged","story":"A"}`+"\n")
	wantEOF(t, r) // notices the new file
	if ev := next(t, r); ev.Name != Merged || ev.Story != "A" {
		t.Errorf("after replacement: %+v", ev)
	}
}

func TestScanCountsWhatItSkips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if bad, err := Scan(path, func(Event) error { t.Error("event from a missing log"); return nil }); err != nil || bad.Lines != 0 {
		t.Fatalf("missing log: %+v, %v", bad, err)
	}
	appendTo(t, path, `{"event":"iteration_end","outcome":"failed (gate)","duration_ms":1500,"time":"2026-11-23T10:00:05Z"}`+"\n{oops\n"+`{"event":"run_e`)
	var evs []Event
	bad, err := Scan(path, func(e Event) error { evs = append(evs, e); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || bad.Lines != 1 || bad.TornBytes != len(`{"event":"run_e`) {
		t.Fatalf("events %+v, bad %+v", evs, bad)
	}
	e := evs[0]
	if !e.Failed() || e.FailSource() != "gate" || e.Begin().Format("15:04:05.000") != "10:00:03.500" {
		t.Errorf("failed %v source %q begin %v", e.Failed(), e.FailSource(), e.Begin())
	}
	stop := errors.New("stop")
	if _, err := Scan(path, func(Event) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("fn's error: %v", err)
	}
}

// "done" is a count in run_start and a boolean in the hooks' stop events;
// both decode.
func TestDoneIsACountOrABoolean(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	appendTo(t, path, `{"event":"run_start","stories":5,"done":2}`+"\n"+`{"event":"agent-stop","done":true}`+"\n"+`{"event":"story-incomplete","done":false}`+"\n")
	var got []Count
	bad, err := Scan(path, func(e Event) error { got = append(got, e.Done); return nil })
	if err != nil || bad.Lines != 0 || len(got) != 3 || got[0] != 2 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("done %v, bad %+v, %v", got, bad, err)
	}
}

// Numbers readers size or sum by are checked: a worker past MaxWorkers
// (a crafted "worker":300000000 made watch and report allocate one entry
// per worker) and a cost no run could have are bad lines, skipped.
func TestOutOfRangeLinesSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	appendTo(t, path, `{"time":"2026-11-29T14:00:00Z","event":"run_start","plan":"p.md","workers":100000000,"pid":1}
{"time":"2026-11-29T14:00:01Z","event":"iteration_start","story":"US-1","worker":300000000,"iteration":1}
{"time":"2026-11-29T14:00:01Z","event":"iteration_start","story":"US-1","worker":-1,"iteration":1}
{"time":"2026-11-29T14:00:02Z","event":"iteration_end","story":"US-1","outcome":"done","cost_usd":1e308}
{"time":"2026-11-29T14:00:02Z","event":"iteration_end","story":"US-1","outcome":"done","cost_usd":-1}
{"time":"2026-11-29T14:00:03Z","event":"run_start","plan":"p.md","workers":32}
{"time":"2026-11-29T14:00:04Z","event":"iteration_end","story":"US-1","worker":32,"outcome":"done","cost_usd":2.5}
`)
	var evs []Event
	bad, err := Scan(path, func(e Event) error { evs = append(evs, e); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if bad.Lines != 5 || len(evs) != 2 || evs[0].Workers != 32 || evs[1].Worker != 32 || evs[1].CostUSD != 2.5 {
		t.Fatalf("events %+v, bad %+v", evs, bad)
	}
	if msg := bad.First[0].Error(); !strings.Contains(msg, "workers 100000000 out of range") {
		t.Errorf("first bad line: %s", msg)
	}
}
