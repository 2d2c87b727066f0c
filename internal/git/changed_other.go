//go:build !linux

package git

import (
	"io/fs"
	"time"
)

// changed is a file's modification time: its change time is not at hand.
func changed(fi fs.FileInfo) time.Time { return fi.ModTime() }
