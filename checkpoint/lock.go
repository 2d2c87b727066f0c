package checkpoint

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
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

// SessionEnv is exported by the lock holder to everything it starts.
const SessionEnv = "WIGGUM_SESSION"

// Holder is the record the lock holder writes next to the lock file.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	Session string    `json:"session"`
	Command []string  `json:"command,omitempty"`
}

// Lock is the held agent lock. The lock file itself is never deleted: the
// bash loop and other wiggums lock the same inode.
type Lock struct {
	st     *State
	fl     *flock.Flock
	Holder Holder
}

// HeldError says the agent lock belongs to another process.
type HeldError struct {
	Holder *Holder // nil when the holder left no record (a bash loop, say)
	PID    int     // from /proc/locks when known
	// Without a record, what /proc says about PID: when the process
	// started and its command line (zero when unknown).
	Since   time.Time
	Command string
}

func (e *HeldError) Error() string {
	var b strings.Builder
	b.WriteString("another agent is running: the agent lock " + LockFile + " is held")
	switch {
	case e.Holder != nil:
		fmt.Fprintf(&b, " by pid %d on %s since %s (%s ago)", e.Holder.PID, e.Holder.Host,
			e.Holder.Started.Local().Format(time.RFC3339), time.Since(e.Holder.Started).Round(time.Second))
		if len(e.Holder.Command) > 0 {
			fmt.Fprintf(&b, ", running %q", strings.Join(e.Holder.Command, " "))
		}
	case e.PID > 0:
		fmt.Fprintf(&b, " by pid %d", e.PID)
		if !e.Since.IsZero() {
			fmt.Fprintf(&b, " since %s (%s ago)", e.Since.Local().Format(time.RFC3339), time.Since(e.Since).Round(time.Second))
		}
		if e.Command != "" {
			fmt.Fprintf(&b, ", running %q", e.Command)
		}
		b.WriteString(" (no wiggum holder record: perhaps a bash ralph loop)")
	}
	b.WriteString("; wait for it to finish, or use --wait")
	return b.String()
}

// ExitCode implements exitcode.Coder.
func (e *HeldError) ExitCode() int { return 3 }

// AcquireOptions tunes Acquire.
type AcquireOptions struct {
	Wait    time.Duration // 0: fail at once when held
	Command []string      // recorded in the holder record
}

// Acquire takes the agent lock and writes the holder record with a fresh
// session token.
func (s *State) Acquire(ctx context.Context, opts AcquireOptions) (*Lock, error) {
	if err := os.MkdirAll(s.Path(StateDir), 0o755); err != nil {
		return nil, fmt.Errorf("lock: create %s: %w", StateDir, err)
	}
	fl := flock.New(s.Path(LockFile))
	var ok bool
	var err error
	if opts.Wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, opts.Wait)
		ok, err = fl.TryLockContext(wctx, 50*time.Millisecond)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			err = nil
		}
	} else {
		ok, err = fl.TryLock()
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", LockFile, err)
	}
	if !ok {
		return nil, s.heldError()
	}
	host, _ := os.Hostname()
	l := &Lock{st: s, fl: fl, Holder: Holder{
		PID: os.Getpid(), Host: host, Started: time.Now().UTC(), Session: newToken(), Command: opts.Command,
	}}
	if err := statefile.WriteJSON(s.Path(HolderFile), l.Holder); err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("lock: write holder record: %w", err)
	}
	return l, nil
}

// Dup returns a new descriptor for the locked open file, so that a
// supervisor process can inherit it and keep the lock held until the agent's
// whole process group is gone, even when this process is SIGKILLed.
// flock(2) locks belong to the open file description, which a dup shares.
// gofrs/flock does not expose its descriptor, so it is found in
// /proc/self/fd by device and inode; elsewhere Dup returns nil.
func (l *Lock) Dup() *os.File {
	fi, err := l.fl.Stat()
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
		nfd, err := syscall.Dup(fd)
		if err != nil {
			return nil
		}
		syscall.CloseOnExec(nfd)
		return os.NewFile(uintptr(nfd), LockFile)
	}
	return nil
}

// Release removes the holder record, then unlocks. The order matters: a new
// holder may write its record the moment the flock is free.
func (l *Lock) Release() error {
	if err := os.Remove(l.st.Path(HolderFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		_ = l.fl.Unlock()
		return fmt.Errorf("lock: remove holder record: %w", err)
	}
	return l.fl.Unlock()
}

// recordWait bounds how long a refused caller waits for a wiggum that has
// just taken the lock to write its holder record: the record follows the
// flock by a file write and an fsync, and a caller that gave up in between
// could not say who holds the lock or since when.
const recordWait = 2 * time.Second

func (s *State) heldError() error {
	deadline := time.Now().Add(recordWait)
	for {
		e := s.readHeld()
		if e.Holder != nil || e.PID <= 0 || !sameExecutable(e.PID) || time.Now().After(deadline) {
			if e.Holder == nil && e.PID > 0 {
				e.Since, e.Command = describeProcess(e.PID)
			}
			return e
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readHeld reads who holds the lock: the holder record, when it belongs to
// the pid /proc/locks names (or that pid is unknown), and that pid.
func (s *State) readHeld() *HeldError {
	e := &HeldError{}
	var h Holder
	if err := statefile.ReadJSON(s.Path(HolderFile), &h, nil); err == nil && h.PID > 0 {
		e.Holder = &h
	}
	if pid := lockPID(s.Path(LockFile)); pid > 0 {
		e.PID = pid
		if e.Holder != nil && e.Holder.PID != pid {
			// The record is stale (its writer was killed) or the holder has
			// not written its own yet.
			e.Holder = nil
		}
	}
	return e
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
// (zero values elsewhere or when it is gone).
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

// Probe reports whether anyone holds the lock. On Linux it reads
// /proc/locks and never touches the lock itself: a probe that took the lock
// for an instant would make a concurrent `wiggum lock` fail for no reason.
func (s *State) Probe() (held bool, err error) {
	return ProbeFile(s.Path(LockFile))
}

// ProbeFile is Probe for a lock file given by path, for callers that find
// the working tree without git.
func ProbeFile(path string) (held bool, err error) {
	if pids, ok := flockHolders(path); ok {
		return len(pids) > 0, nil
	}
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
	if err != nil {
		return false, err
	}
	return false, nil // closing f drops the probe lock
}

// CurrentHolder returns the holder record when the lock is held and the
// record belongs to the holder, else nil.
func (s *State) CurrentHolder() (*Holder, error) {
	held, err := s.Probe()
	if err != nil || !held {
		return nil, err
	}
	var h Holder
	if err := statefile.ReadJSON(s.Path(HolderFile), &h, nil); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if pid := lockPID(s.Path(LockFile)); pid > 0 && pid != h.PID && !PIDAlive(h.PID) {
		return nil, nil
	}
	return &h, nil
}

// InSession reports whether this process runs inside the session of the
// current lock holder: WIGGUM_SESSION matches the live holder's token.
func (s *State) InSession() (*Holder, bool) {
	tok := os.Getenv(SessionEnv)
	if tok == "" {
		return nil, false
	}
	h, err := s.CurrentHolder()
	if err != nil || h == nil || h.Session != tok {
		return nil, false
	}
	return h, true
}

// WithLock runs fn as part of the current session when this process is in
// it, else under the agent lock taken without waiting. fn gets the session
// token it acts for, "" when it runs outside any session.
func (s *State) WithLock(ctx context.Context, command []string, fn func(session string) error) error {
	if h, ok := s.InSession(); ok {
		return fn(h.Session)
	}
	l, err := s.Acquire(ctx, AcquireOptions{Command: command})
	if err != nil {
		return err
	}
	// Outside a session there is no session to act for: a stale or
	// borrowed WIGGUM_SESSION proves nothing.
	ferr := fn("")
	if err := l.Release(); err != nil && ferr == nil {
		ferr = err
	}
	return ferr
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func PIDAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// LockPID returns the pid that took the agent lock according to the kernel,
// or 0 when it is free or that cannot be known (not Linux).
func (s *State) LockPID() int { return lockPID(s.Path(LockFile)) }

// lockPID returns the pid that took the flock on path, or 0.
func lockPID(path string) int {
	if pids, _ := flockHolders(path); len(pids) > 0 {
		return pids[0]
	}
	return 0
}

// flockHolders lists the pids holding an flock on path according to
// /proc/locks; ok is false where that file cannot be read (not Linux).
// A missing lock file has no holders.
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
