//go:build !linux

package layout

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// Without /proc there is no descriptor to find and no kernel list of lock
// holders: the lock works, but a supervisor cannot inherit it and a probe
// falls back to a non-blocking flock held for an instant.

func dupLocked(*flock.Flock) *os.File         { return nil }
func dupFile(*os.File) *os.File               { return nil }
func setLiveMark(*os.File) error              { return nil }
func flockHolders(string) ([]int, bool)       { return nil, false }
func sameExecutable(int) bool                 { return false }
func innerPID(int) int                        { return 0 }
func describeProcess(int) (time.Time, string) { return time.Time{}, "" }

func probeFile(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err // closing f drops the probe lock
}
