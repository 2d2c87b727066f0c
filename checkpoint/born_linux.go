package checkpoint

import (
	"time"

	"golang.org/x/sys/unix"
)

// bornAfter reports whether the directory at path was created after t,
// from its birth time; false when the file system does not record one.
func bornAfter(path string, t time.Time) bool {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return false
	}
	return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec)).After(t)
}
