//go:build !linux

package install

import (
	"os"
	"time"
)

// racyMargin is memoRacy: whether a file system's times are fine enough
// is known here only for Linux's.
func racyMargin(string) time.Duration { return memoRacy }

// stampOf is what the file at path is now: its change time is not at
// hand, its modification time stands for both.
func stampOf(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	m := fi.ModTime().UnixNano()
	return stamp{exists: true, size: fi.Size(), mtime: m, ctime: m}
}
