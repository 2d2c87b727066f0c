package layout

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"

	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// The live mark is an open-file-description read lock over the whole lock
// file, taken through the same open file description as the flock. flock(2)
// and fcntl(2) locks do not interact, so the mark never stands in the way of
// the bash loop's `flock -n`, and F_OFD_GETLK tests it without taking
// anything. Unlike /proc/locks, which hides locks whose owner is outside the
// reader's PID namespace (the sandbox Codex runs every command in), the
// test answers the same from every namespace.

// dupLocked returns a second descriptor of the file fl has locked, found in
// /proc/self/fd by device and inode (gofrs/flock does not expose its own).
func dupLocked(fl *flock.Flock) *os.File {
	fi, err := fl.Stat()
	if err != nil {
		return nil
	}
	want, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) != nil || st.Dev != want.Dev || st.Ino != want.Ino {
			continue
		}
		nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		return os.NewFile(uintptr(nfd), LockFile)
	}
	return nil
}

func dupFile(f *os.File) *os.File {
	nfd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(nfd), f.Name())
}

func setLiveMark(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: 0, Len: 0}
	return unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
}

// liveMarked reports whether a wiggum holder's live mark is on path.
func liveMarked(path string) (bool, error) {
	f, err := statefile.OpenRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}

func probeFile(path string) (bool, error) {
	marked, err := liveMarked(path)
	if err != nil {
		return false, fmt.Errorf("probe %s: %w", LockFile, err)
	}
	if marked {
		return true, nil
	}
	pids, _ := flockHolders(path)
	return len(pids) > 0, nil
}

// flockHolders lists the pids holding an flock on path according to
// /proc/locks; ok is false where that file cannot be read. A missing lock
// file has no holders.
func flockHolders(path string) (pids []int, ok bool) {
	f, err := os.Open("/proc/locks")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := os.Stat(path)
	if err != nil {
		return nil, true
	}
	st, isUnix := fi.Sys().(*syscall.Stat_t)
	if !isUnix {
		return nil, false
	}
	// Lines look like "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF":
	// major and minor device in hex, then the inode. Waiters start "1: ->".
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, true
}

// innerPID returns the pid the process pid has in the innermost PID
// namespace it belongs to (the last NSpid of /proc/PID/status): its own
// pid when it shares this one, the pid a container's process sees for
// itself otherwise; 0 when unknown.
func innerPID(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}

// sameExecutable reports whether pid runs the same binary as this process,
// that is, a wiggum that will write a holder record.
func sameExecutable(pid int) bool {
	self, err := os.Stat("/proc/self/exe")
	if err != nil {
		return false
	}
	other, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/exe")
	return err == nil && os.SameFile(self, other)
}

// describeProcess returns when pid started and its command line, from /proc
// (zero values when it is gone).
func describeProcess(pid int) (time.Time, string) {
	dir := "/proc/" + strconv.Itoa(pid)
	var cmd string
	if data, err := os.ReadFile(dir + "/cmdline"); err == nil {
		cmd = strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
	}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return time.Time{}, cmd
	}
	// Field 22 is the start time in clock ticks after boot; the fields
	// start after the parenthesised name, which may hold spaces.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return time.Time{}, cmd
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 20 {
		return time.Time{}, cmd
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return time.Time{}, cmd
	}
	boot := bootTime()
	if boot.IsZero() {
		return time.Time{}, cmd
	}
	// Linux reports these times in USER_HZ, which is 100 on every
	// architecture Go supports.
	const userHZ = 100
	return boot.Add(time.Duration(ticks) * time.Second / userHZ), cmd
}

// bootTime reads the btime line of /proc/stat.
func bootTime() time.Time {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			if sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(sec, 0)
			}
		}
	}
	return time.Time{}
}
