package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func TestReadJSONMissingIsNotExistCorruptIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	var v map[string]int
	if err := ReadJSON(filepath.Join(dir, "none.json"), &v, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	for _, bad := range []string{"", "{", "[1,2", `{"a":1} trailing`, "\x00\xff"} {
		p := filepath.Join(dir, "bad.json")
		os.WriteFile(p, []byte(bad), 0o644)
		var ce *CorruptError
		if err := ReadJSON(p, &v, nil); !errors.As(err, &ce) {
			t.Fatalf("%q: got %v, want CorruptError", bad, err)
		}
	}
	p := filepath.Join(dir, "ok.json")
	if err := WriteJSON(p, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	failCheck := func() error { return errors.New("no b") }
	var ce *CorruptError
	if err := ReadJSON(p, &v, failCheck); !errors.As(err, &ce) {
		t.Fatalf("failed check: %v", err)
	}
	if err := ReadJSON(p, &v, nil); err != nil || v["a"] != 1 {
		t.Fatalf("round trip: %v %v", v, err)
	}
}

// Concurrent appenders never interleave or lose lines, synced or not.
func TestAppendLineConcurrent(t *testing.T) {
	for name, appendFn := range map[string]func(string, []byte) error{"AppendLine": AppendLine, "AppendLog": AppendLog} {
		t.Run(name, func(t *testing.T) { appendConcurrently(t, appendFn) })
	}
}

func appendConcurrently(t *testing.T, appendFn func(string, []byte) error) {
	p := filepath.Join(t.TempDir(), "log.jsonl")
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				line, _ := json.Marshal(map[string]string{"w": fmt.Sprint(w), "pad": string(make([]byte, 3000))})
				if err := appendFn(p, line); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	got, err := ReadJSONLines[map[string]string](p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != writers*each {
		t.Fatalf("%d lines, want %d", len(got), writers*each)
	}
}

func TestReadJSONLinesNamesTheBadLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "j.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n\n{oops\n"), 0o644)
	_, err := ReadJSONLines[map[string]int](p, nil)
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("got %v", err)
	}
}

// Swap rewrites a state file through one spare: after the first two
// writes, later ones create no file and free none (the two inodes take
// turns under the two names), every read sees the last record whole, and
// nothing but the file, its spare and its lock is left beside it.
func TestSwapReusesItsSpare(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.json")
	inodes := map[uint64]bool{}
	for i := range 6 {
		rec := map[string]any{"seq": i, "pad": strings.Repeat("x", 100*(6-i))} // shorter each time
		data, _ := json.Marshal(rec)
		if err := Swap(p, data, i == 3); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Seq int    `json:"seq"`
			Pad string `json:"pad"`
		}
		if err := ReadJSON(p, &got, nil); err != nil || got.Seq != i || len(got.Pad) != 100*(6-i) {
			t.Fatalf("write %d read back %d (%d bytes of padding), %v", i, got.Seq, len(got.Pad), err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		inodes[fi.Sys().(*syscall.Stat_t).Ino] = true
	}
	if len(inodes) != 2 {
		t.Errorf("%d files took the state file's name over 6 writes, want 2 taking turns", len(inodes))
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != ".run.json.spare run.json run.json.lock" {
		t.Errorf("files beside the state file: %v", names)
	}
}

// Writers that Swap one file at once never tear it: the lock makes them
// take turns at the one spare.
func TestSwapConcurrentWriters(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.json")
	const writers, each = 6, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Lengths differ between writers, so a write cut short by
				// another's truncate, or mixed with it, does not decode.
				data, _ := json.Marshal(map[string]string{"w": fmt.Sprint(w), "pad": strings.Repeat(fmt.Sprint(w), 500*(w+1)+i)})
				if err := Swap(p, data, false); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var got map[string]string
	if err := ReadJSON(p, &got, nil); err != nil {
		t.Fatal(err)
	}
	w := got["w"]
	if want := strings.Repeat(w, len(got["pad"])); got["pad"] != want {
		t.Fatalf("record of writer %s is mixed with another's", w)
	}
}

// A file that stays damaged is corrupt, however many times it is read; a
// damaged spare is never read as the state.
func TestSwapTornSpareIsNotState(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "checkpoint.json")
	if err := Swap(p, []byte(`{"seq":1}`), true); err != nil {
		t.Fatal(err)
	}
	// A write killed half-way leaves a torn spare and the state as it was.
	if err := os.WriteFile(SparePath(p), []byte(`{"seq":2, "pa`), 0o644); err != nil {
		t.Fatal(err)
	}
	var got map[string]int
	if err := ReadJSON(p, &got, nil); err != nil || got["seq"] != 1 {
		t.Fatalf("state beside a torn spare: %v %v", got, err)
	}
	// The next write goes over the torn spare whole.
	if err := Swap(p, []byte(`{"seq":3}`), false); err != nil {
		t.Fatal(err)
	}
	if err := ReadJSON(p, &got, nil); err != nil || got["seq"] != 3 {
		t.Fatalf("after a torn spare: %v %v", got, err)
	}
	if err := os.WriteFile(p, []byte(`{"seq":`), 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptError
	if err := ReadJSON(p, &got, nil); !errors.As(err, &ce) {
		t.Fatalf("a torn state file read as %v, %v; want CorruptError", got, err)
	}
}

// Where there is nothing to swap with, Exchange renames; a missing spare
// is an error, not an empty state.
func TestExchangeWithoutATarget(t *testing.T) {
	dir := t.TempDir()
	p, spare := filepath.Join(dir, "checkpoint.json"), filepath.Join(dir, "checkpoint.pending.json")
	if err := Stage(spare, []byte(`{"seq":1}`), true); err != nil {
		t.Fatal(err)
	}
	if err := Exchange(spare, p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spare); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("spare after a rename onto a missing file: %v", err)
	}
	if err := Exchange(spare, p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("exchange of a missing spare: %v", err)
	}
	var got map[string]int
	if err := ReadJSON(p, &got, nil); err != nil || got["seq"] != 1 {
		t.Fatalf("%v %v", got, err)
	}
}

// A state file or its spare that is a link - symbolic or hard - or a
// directory is never written through: Swap, Stage, Truncate and the
// appends leave what it names as it was. Before, Stage rewrote the file a
// linked spare named and Truncate emptied it.
func TestNeverWritesThroughALink(t *testing.T) {
	const precious = "precious notes\n"
	victim := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "victim")
		if err := os.WriteFile(p, []byte(precious), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	same := func(t *testing.T, p string) {
		t.Helper()
		if data, err := os.ReadFile(p); err != nil || string(data) != precious {
			t.Fatalf("the linked file changed: %q, %v", data, err)
		}
	}
	for _, link := range []string{"symbolic", "hard"} {
		ln := func(t *testing.T, target, name string) {
			t.Helper()
			var err error
			if link == "symbolic" {
				err = os.Symlink(target, name)
			} else {
				err = os.Link(target, name)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Run(link+" spare", func(t *testing.T) {
			dir, v := t.TempDir(), victim(t)
			path := filepath.Join(dir, "run.json")
			ln(t, v, SparePath(path))
			if err := Swap(path, []byte("{\"a\": 1}\n"), false); err != nil {
				t.Fatal(err)
			}
			same(t, v)
			if data, _ := os.ReadFile(path); string(data) != "{\"a\": 1}\n" {
				t.Fatalf("the record: %q", data)
			}
		})
		t.Run(link+" record", func(t *testing.T) {
			dir, v := t.TempDir(), victim(t)
			path := filepath.Join(dir, "run.json")
			ln(t, v, path)
			for i := range 3 { // the link swapped out becomes the spare
				if err := Swap(path, fmt.Appendf(nil, "{\"a\": %d}\n", i), false); err != nil {
					t.Fatal(err)
				}
				if err := Truncate(SparePath(path)); err != nil {
					t.Fatal(err)
				}
			}
			same(t, v)
			if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("the record is not a file of its own: %v %v", fi, err)
			}
		})
	}
	t.Run("symbolic log", func(t *testing.T) {
		dir, v := t.TempDir(), victim(t)
		path := filepath.Join(dir, "events.jsonl")
		if err := os.Symlink(v, path); err != nil {
			t.Fatal(err)
		}
		for _, appendTo := range []func(string, []byte) error{AppendLine, AppendLog} {
			if err := appendTo(path, []byte("{}")); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
				t.Fatalf("appending through a link: %v", err)
			}
		}
		same(t, v)
	})
	t.Run("directory spare", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "run.json")
		if err := os.Mkdir(SparePath(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Swap(path, []byte("{}\n"), false); err != nil {
			t.Fatalf("an empty directory in the spare's place: %v", err)
		}
		if err := os.MkdirAll(filepath.Join(SparePath(path), "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Swap(path, []byte("{}\n"), false); err == nil || !strings.Contains(err.Error(), "could not be removed") {
			t.Fatalf("a directory with something in it in the spare's place: %v", err)
		}
	})
}

// A FIFO in a state file's place is refused, never waited on: read, it is
// corrupt; appended to or truncated, an error or removed.
func TestFIFOIsNeverWaitedOn(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "state.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	var corrupt *CorruptError
	if err := ReadJSON(fifo, &v, nil); !errors.As(err, &corrupt) || !strings.Contains(err.Error(), "a FIFO (named pipe), not a regular file") {
		t.Errorf("ReadJSON of a FIFO: %v, want it corrupt", err)
	}
	if _, err := ReadJSONLines[map[string]any](fifo, nil); !errors.As(err, &corrupt) {
		t.Errorf("ReadJSONLines of a FIFO: %v, want it corrupt", err)
	}
	var nr *NotRegularError
	if _, err := ReadFile(fifo); !errors.As(err, &nr) {
		t.Errorf("ReadFile of a FIFO: %v, want NotRegularError", err)
	}
	if _, err := ReadFile(dir); !errors.As(err, &nr) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("ReadFile of a directory: %v", err)
	}
	if f, err := OpenAppend(fifo); err == nil || !strings.Contains(err.Error(), "is a FIFO") {
		f.Close()
		t.Errorf("OpenAppend of a FIFO: %v, want a FIFO refused", err)
	}
	if err := Truncate(fifo); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(fifo); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Truncate left the FIFO: %v", err)
	}
}
