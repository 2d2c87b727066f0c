package layout

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// Writers at once - the runtime state's lines and rules of their own -
// all reach the file.
func TestExcludeConcurrentWriters(t *testing.T) {
	info := t.TempDir()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			rules := []string{"/w" + string(rune('a'+i)) + "/"}
			if i%4 == 0 {
				if err := EnsureExcluded(info); err != nil {
					t.Error(err)
				}
			}
			if err := Exclude(info, "test", rules); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(filepath.Join(info, "exclude"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 16 {
		if r := "/w" + string(rune('a'+i)) + "/\n"; !strings.Contains(string(data), r) {
			t.Errorf("%q lost:\n%s", r, data)
		}
	}
	for _, l := range excludeLines {
		if !strings.Contains(string(data), l+"\n") {
			t.Errorf("runtime state line %q lost:\n%s", l, data)
		}
	}
}

// A holder of the lock that never lets go (a stopped process) does not
// hang the writer: it waits a while, then writes.
func TestExcludeDoesNotWaitForEver(t *testing.T) {
	info := t.TempDir()
	held := flock.New(filepath.Join(info, "wiggum-exclude.lock"))
	if err := held.Lock(); err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	defer func(w time.Duration) { excludeLockWait = w }(excludeLockWait)
	excludeLockWait = 50 * time.Millisecond
	if err := Exclude(info, "test", []string{"/x/"}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(info, "exclude")); !strings.Contains(string(data), "/x/\n") {
		t.Fatalf("not written:\n%s", data)
	}
}
