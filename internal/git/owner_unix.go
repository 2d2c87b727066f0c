//go:build unix

package git

import (
	"io/fs"
	"syscall"
)

// owner is the device and the owner's uid of a file.
func owner(fi fs.FileInfo) (dev uint64, uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), int(st.Uid), true
}
