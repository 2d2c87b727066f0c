package install

import (
	"os"
	"syscall"
	"time"
)

// racyMargin is memoRacy or memoRacyLocal for the file system path is on.
func racyMargin(path string) time.Duration {
	var fs syscall.Statfs_t
	if syscall.Statfs(path, &fs) != nil {
		return memoRacy
	}
	switch uint32(fs.Type) {
	case 0xEF53, // ext2/3/4
		0x58465342, // xfs
		0x9123683E, // btrfs
		0x01021994, // tmpfs
		0x794C7630, // overlayfs
		0xF2F52010, // f2fs
		0x2FC12FC1: // zfs
		return min(memoRacy, memoRacyLocal)
	}
	return memoRacy
}

// stampOf is what the file at path is now.
func stampOf(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{exists: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	}
	return stamp{exists: true, dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}
