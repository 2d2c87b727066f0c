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
