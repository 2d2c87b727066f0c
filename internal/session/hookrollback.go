package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// BeginHookRollback records f, a failing test run whose rollback an
// agent's hook is about to start, before anything in the tree moves: an
// agent kills a hook at its timeout, and the kernel's OOM killer may, and
// a hook stopped mid-rollback leaves a torn tree and, but for this record,
// nothing that says the tests failed. The returned function removes the
// record; the hook calls it once the rollback's outcome is in the failure
// log. UnfinishedHookRollbacks finds the records left.
func BeginHookRollback(st *checkpoint.State, f Failure) (done func(), err error) {
	dir, err := st.Runtime(layout.HookRollbacksDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if f.Time.IsZero() {
		f.Time = time.Now().UTC()
	}
	f.Output = Tail(f.Output, maxOutputLen)
	path := filepath.Join(dir, fmt.Sprintf("%d-%d.json", os.Getpid(), f.Time.UnixNano()))
	data, err := statefile.Encode(f)
	if err != nil {
		return nil, err
	}
	// Unsynced: it stands for a hook killed while the machine runs on,
	// and a hook's tool call should not wait on a disk flush.
	if err := statefile.WriteUnsynced(path, data); err != nil {
		return nil, err
	}
	return func() { _ = os.Remove(path) }, nil
}

// UnfinishedHookRollbacks returns the failures whose hook rollback began
// and never ended (its hook was killed), oldest first, and removes their
// records: each is the caller's to settle. A record that cannot be read
// still stands for a failure whose rollback did not finish.
func UnfinishedHookRollbacks(st *checkpoint.State) ([]Failure, error) {
	dir := st.RuntimePath(layout.HookRollbacksDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Failure
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue // a temporary file of a write that was cut off
		}
		path := filepath.Join(dir, e.Name())
		var f Failure
		data, err := os.ReadFile(path)
		if err != nil || json.Unmarshal(data, &f) != nil {
			f = Failure{Source: "test-hook", Output: "(wiggum could not read the hook's record " + e.Name() + ")"}
		}
		out = append(out, f)
		_ = os.Remove(path)
	}
	return out, nil
}
