package git

import (
	"io/fs"
	"syscall"
)

// changed is a file's change time (ctime).
func changed(fi fs.FileInfo) syscall.Timespec {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim
	}
	return syscall.Timespec{}
}
