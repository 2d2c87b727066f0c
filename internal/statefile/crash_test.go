package statefile

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writerEnv makes the test binary a writer that rewrites one state file as
// fast as it can until it is killed; writerModeEnv says how ("swap":
// Swap, "unsynced": WriteUnsynced, else WriteJSON).
const (
	writerEnv     = "WIGGUM_STATEFILE_CRASH_WRITER"
	writerModeEnv = "WIGGUM_STATEFILE_CRASH_MODE"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(writerEnv); path != "" {
		mode := os.Getenv(writerModeEnv)
		for i := 0; ; i++ {
			// Large enough that a write takes several system calls.
			rec := map[string]any{"seq": i, "pad": strings.Repeat(fmt.Sprint(i%10), 64<<10)}
			var err error
			switch mode {
			case "swap":
				data, _ := json.Marshal(rec)
				err = Swap(path, data, i%2 == 0)
			case "unsynced":
				data, _ := json.Marshal(rec)
				err = WriteUnsynced(path, data)
			default:
				err = WriteJSON(path, rec)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
		}
	}
	os.Exit(m.Run())
}

// A writer SIGKILLed at random moments, many times, never leaves a torn or
// unreadable state file: every read sees one whole record. A plain
// os.WriteFile (truncate, then write) fails this within a few kills.
func TestSIGKILLNeverTearsAStateFile(t *testing.T) {
	for _, mode := range []string{"write", "swap", "unsynced"} {
		t.Run(mode, func(t *testing.T) { killWriter(t, mode) })
	}
}

func killWriter(t *testing.T, mode string) {
	path := filepath.Join(t.TempDir(), "checkpoint.json")
	if err := WriteJSON(path, map[string]any{"seq": -1, "pad": ""}); err != nil {
		t.Fatal(err)
	}
	const kills = 40
	for k := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+path, writerModeEnv+"="+mode)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(5+rand.IntN(25)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		var rec struct {
			Seq int    `json:"seq"`
			Pad string `json:"pad"`
		}
		if err := ReadJSON(path, &rec, nil); err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		if rec.Seq >= 0 && len(rec.Pad) != 64<<10 {
			t.Fatalf("kill %d: record %d is torn (%d bytes of padding)", k, rec.Seq, len(rec.Pad))
		}
	}
	// Leftover temp files from killed writes must not be mistaken for state.
	ents, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range ents {
		n := e.Name()
		if n != "checkpoint.json" && n != "checkpoint.json.lock" && !strings.HasPrefix(n, ".checkpoint.json") {
			t.Fatalf("unexpected file %s next to the state file", n)
		}
	}
}
