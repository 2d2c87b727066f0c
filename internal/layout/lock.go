package layout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Holder is the record the lock holder writes next to the lock file.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	Session string    `json:"session"`
	Command []string  `json:"command,omitempty"`
	// AllowPush: the holder was started with WIGGUM_ALLOW_PUSH=1, so the
	// session's own processes may push. Only the holder's environment
	// says so: one of its agents setting the variable does not.
	AllowPush bool `json:"allow_push,omitempty"`
}

// Lock is the held agent lock. The lock file itself is never deleted: the
// bash loop and other wiggums lock the same inode.
type Lock struct {
	tree   Tree
	fl     *flock.Flock
	mark   *os.File // a second descriptor of the locked file, carrying the live mark
	Holder Holder
	// kept: files that replaced the lock file while it was held, locked
	// and marked too (Keep), with their marks; keepMu orders the workers
	// of a parallel run that Keep the main lock at once.
	keepMu    sync.Mutex
	kept      []*flock.Flock
	keptMarks []*os.File
}

// HeldError says the agent lock belongs to another process.
type HeldError struct {
	Holder *Holder // nil when the holder left no record (a bash loop, say)
	PID    int     // from /proc/locks when known
	// Without a record, what /proc says about PID: when the process
	// started and its command line (zero when unknown).
	Since   time.Time
	Command string
	// Wiggum: PID, holding with no record, runs this wiggum's executable.
	Wiggum bool
	// HereAs: the holder's pid in this PID namespace, when its record
	// names it as another namespace sees it (0 otherwise).
	HereAs int
	// Waits: the refused command takes --wait (wiggum lock); the others
	// are told to run again.
	Waits bool
	// Waited: how long the refused command waited for the lock (its
	// --wait); it is told so, not to use --wait.
	Waited time.Duration
	// Stopped: the holder is stopped (^Z, SIGSTOP) and keeps the lock
	// until someone resumes or ends it; waiting for it is waiting for
	// nothing.
	Stopped bool
}

func (e *HeldError) Error() string {
	var b strings.Builder
	b.WriteString("another agent is running: the agent lock " + LockFile + " is held")
	switch {
	case e.Holder != nil:
		fmt.Fprintf(&b, " by pid %d", e.Holder.PID)
		if e.HereAs > 0 {
			fmt.Fprintf(&b, " of another PID namespace (a container's; pid %d here)", e.HereAs)
		}
		fmt.Fprintf(&b, " on %s since %s (%s ago)", e.Holder.Host,
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
		if e.Wiggum {
			b.WriteString(" (a wiggum process whose holder record is gone: a killed run's agent supervisor keeps the lock until its agent has exited)")
		} else {
			b.WriteString(" (no wiggum holder record: perhaps a bash ralph loop)")
		}
	}
	if pid := e.PID; e.Stopped {
		if e.Holder != nil {
			pid = e.Holder.PID
		}
		fmt.Fprintf(&b, "; pid %d is stopped (^Z or SIGSTOP) and holds the lock until it runs again: resume it (kill -CONT %d, or fg in its terminal) or end it (kill %d), then run again", pid, pid, pid)
	} else if e.Waited > 0 {
		fmt.Fprintf(&b, "; waited %s and it is still held: wait for it to finish, or give --wait more time", e.Waited)
	} else if e.Waits {
		b.WriteString("; wait for it to finish, or use --wait")
	} else {
		b.WriteString("; wait for it to finish (wiggum status shows it), then run again")
	}
	return b.String()
}

// AcquireOptions tunes Acquire.
type AcquireOptions struct {
	Wait    time.Duration // 0: fail at once when held
	Command []string      // recorded in the holder record
}

// Acquire takes the agent lock, marks it live for probes in any PID
// namespace, and writes the holder record with a fresh session token.
func (t Tree) Acquire(ctx context.Context, opts AcquireOptions) (*Lock, error) {
	if err := os.MkdirAll(t.Path(StateDir), 0o755); err != nil {
		return nil, fmt.Errorf("lock: create %s: %w", StateDir, err)
	}
	var deadline time.Time
	if opts.Wait > 0 {
		deadline = time.Now().Add(opts.Wait)
	}
	// The lock's second name first: a holder whose lock file an agent
	// removed from the tree still holds its lock there, and must be met
	// before this acquire makes and takes a new file in the tree.
	link := leaseLink(t.Root)
	old, err := lockSecond(ctx, link, deadline)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, t.heldError()
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", LockFile, err)
	}
	if old != nil {
		if a, err1 := old.Stat(); err1 == nil {
			if b, err2 := os.Stat(t.Path(LockFile)); err2 == nil && os.SameFile(a, b) {
				// One file by both names, as it should be: lock it by its
				// name in the tree (an flock taken twice on one file,
				// through two opens, refuses itself). Another acquirer may
				// take it in between; this one then waits or is refused,
				// as for any holder.
				old.Close()
				old = nil
			}
		}
	}
	fl := flock.New(t.Path(LockFile))
	var ok bool
	if !deadline.IsZero() {
		wctx, cancel := context.WithDeadline(ctx, deadline)
		ok, err = fl.TryLockContext(wctx, 50*time.Millisecond)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			err = nil
		}
	} else {
		ok, err = fl.TryLock()
	}
	if err == nil && ok && link != "" {
		// Both names for the file now locked; the one the second name had
		// (a tree file deleted or replaced while nobody held it) is locked
		// until the link is made, so no acquirer that opened it meets it
		// free before the new one is in place.
		if fi, err1 := os.Stat(link); err1 != nil || old != nil || !sameLocked(fl, fi) {
			LinkSecondName(t.Path(LockFile), link)
		}
	}
	if old != nil {
		old.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", LockFile, err)
	}
	if !ok {
		return nil, t.heldError()
	}
	l := &Lock{tree: t, fl: fl}
	l.mark = dupLocked(fl)
	if l.mark != nil {
		if err := setLiveMark(l.mark); err != nil {
			l.unlock()
			return nil, fmt.Errorf("lock: mark %s live: %w", LockFile, err)
		}
	}
	host, _ := os.Hostname()
	l.Holder = Holder{PID: os.Getpid(), Host: host, Started: time.Now().UTC(), Session: newToken(), Command: opts.Command,
		AllowPush: os.Getenv(AllowPushEnv) == "1"}
	// The record is renamed into place whole (readers, and a kill of this
	// process, never see it torn) but not fsynced: it describes an flock,
	// which no power cut or kernel crash leaves held, and every reader
	// takes a record as a live holder's only while that flock is held (or,
	// in heldError, when its pid is the flock's). A record a power cut tore
	// is a stale one: read as no holder, replaced by the next holder. The
	// flush would cost every lock, checkpoint and rollback a disk write.
	data, err := statefile.Encode(l.Holder)
	if err == nil {
		err = statefile.WriteUnsynced(t.Path(HolderFile), data)
	}
	if err != nil {
		l.unlock()
		return nil, fmt.Errorf("lock: write holder record: %w", err)
	}
	return l, nil
}

// Dup returns a new descriptor for the locked open file, so that a
// supervisor process can inherit it and keep the lock - and its live mark,
// which belongs to the same open file description - held until the agent's
// whole process group is gone, even when this process is SIGKILLed. Nil
// where descriptors cannot be found (not Linux).
func (l *Lock) Dup() *os.File {
	if l.mark == nil {
		return nil
	}
	return dupFile(l.mark)
}

// Release removes the holder record, then unlocks. The order matters: a new
// holder may write its record the moment the flock is free.
func (l *Lock) Release() error {
	if err := os.Remove(l.tree.Path(HolderFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.unlock()
		return fmt.Errorf("lock: remove holder record: %w", err)
	}
	return l.unlock()
}

// Keep makes sure the lock file at its path, and the holder record, are
// this lock's. Something that deleted or replaced them while the lock was
// held - an agent's script, say - would let another wiggum take the lock
// through a new file while this one still works, and would leave the
// hooks' probe finding no session. Keep locks whatever file is at the
// path now (making it if need be), marks it live and writes the holder
// record again; it fails with a *HeldError when another process holds that
// file already. repaired is what it put right (none when nothing).
func (l *Lock) Keep() (repaired Repaired, err error) {
	l.keepMu.Lock()
	defer l.keepMu.Unlock()
	path := l.tree.Path(LockFile)
	ours := func(now os.FileInfo) bool {
		for _, f := range append([]*flock.Flock{l.fl}, l.kept...) {
			if held, err := f.Stat(); err == nil && os.SameFile(held, now) {
				return true
			}
		}
		return false
	}
	var fixed Repaired
	if now, err := os.Stat(path); err != nil || !ours(now) {
		// An rm -rf .ralph took the directory too.
		if err := os.MkdirAll(l.tree.Path(StateDir), 0o755); err != nil {
			return nil, fmt.Errorf("lock %s again: %w", LockFile, err)
		}
		nf := flock.New(path)
		ok, err := nf.TryLock()
		if err != nil {
			return nil, fmt.Errorf("lock %s again: %w", LockFile, err)
		}
		if !ok {
			return nil, l.tree.heldError()
		}
		l.kept = append(l.kept, nf)
		if mark := dupLocked(nf); mark != nil {
			l.keptMarks = append(l.keptMarks, mark)
			if err := setLiveMark(mark); err != nil {
				return nil, fmt.Errorf("lock: mark %s live: %w", LockFile, err)
			}
		}
		fixed = append(fixed, LockFile)
	}
	var h Holder
	if err := statefile.ReadJSON(l.tree.Path(HolderFile), &h, nil); err != nil || h.Session != l.Holder.Session || h.PID != l.Holder.PID {
		data, err := statefile.Encode(l.Holder)
		if err == nil {
			err = statefile.WriteUnsynced(l.tree.Path(HolderFile), data)
		}
		if err != nil {
			return nil, fmt.Errorf("lock: write holder record: %w", err)
		}
		fixed = append(fixed, HolderFile)
	}
	return fixed, nil
}

// Repaired is the session files Keep put right: LockFile, HolderFile.
type Repaired []string

// String says what they are: "the agent lock file .ralph/.agent-lock and
// the holder record .ralph/.agent-lock.json"; "" for none.
func (r Repaired) String() string {
	what := make([]string, len(r))
	for i, f := range r {
		switch f {
		case LockFile:
			what[i] = "the agent lock file " + f
		case HolderFile:
			what[i] = "the holder record " + f
		default:
			what[i] = f
		}
	}
	return strings.Join(what, " and ")
}

func (l *Lock) unlock() error {
	l.keepMu.Lock()
	defer l.keepMu.Unlock()
	for _, m := range l.keptMarks {
		m.Close()
	}
	for _, f := range l.kept {
		_ = f.Unlock()
	}
	l.kept, l.keptMarks = nil, nil
	if l.mark != nil {
		// Closing the last descriptor of this process drops the live mark
		// with the flock; a supervisor's inherited one keeps both.
		l.mark.Close()
		l.mark = nil
	}
	return l.fl.Unlock()
}

// recordWait bounds how long a refused caller waits for a wiggum that has
// just taken the lock to write its holder record: the record follows the
// flock by a file write and a rename, and a caller that gave up in between
// could not say who holds the lock or since when.
const recordWait = 2 * time.Second

// sameLocked reports whether fi is the file fl has locked.
func sameLocked(fl *flock.Flock, fi os.FileInfo) bool {
	held, err := fl.Stat()
	return err == nil && os.SameFile(held, fi)
}

// flockUntil takes an exclusive flock on f, trying again every 50 ms until
// deadline (zero: once); syscall.EWOULDBLOCK when it stays held.
func flockUntil(ctx context.Context, f *os.File, deadline time.Time) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || deadline.IsZero() || !time.Now().Before(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (t Tree) heldError() error {
	deadline := time.Now().Add(recordWait)
	for {
		e := t.readHeld()
		if e.Holder != nil || e.PID <= 0 || !sameExecutable(e.PID) || time.Now().After(deadline) {
			if e.Holder == nil && e.PID > 0 {
				e.Since, e.Command = describeProcess(e.PID)
				e.Wiggum = sameExecutable(e.PID)
			}
			return e
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BusyError is a lock other than the agent lock - the repository mutex -
// that a command gave up waiting for, and who holds it (PID 0 when /proc
// does not say).
type BusyError struct {
	What    string // "the repository mutex"
	Path    string
	Waited  time.Duration
	PID     int
	Command string
	Stopped bool
}

func (e *BusyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s is still held after %s", e.What, e.Path, e.Waited)
	if e.PID > 0 {
		fmt.Fprintf(&b, ", by pid %d", e.PID)
		if e.Command != "" {
			fmt.Fprintf(&b, " (%s)", e.Command)
		}
	}
	if e.Stopped {
		fmt.Fprintf(&b, ", which is stopped (^Z or SIGSTOP) and holds it until it runs again: resume it (kill -CONT %d, or fg in its terminal) or end it (kill %d), then run again", e.PID, e.PID)
	} else {
		b.WriteString("; run again when it is done")
	}
	return b.String()
}

// FlockHolder is the pid holding an flock on path and its command line,
// from /proc/locks (0 when none is seen, or /proc cannot tell).
func FlockHolder(path string) (pid int, command string) {
	pids, _ := flockHolders(path)
	if len(pids) == 0 {
		return 0, ""
	}
	_, command = describeProcess(pids[0])
	return pids[0], command
}

// readHeld reads who holds the lock: the holder record, when it belongs to
// the pid /proc/locks names (or that pid is unknown), and that pid.
func (t Tree) readHeld() *HeldError {
	e := &HeldError{}
	var h Holder
	if err := statefile.ReadJSON(t.Path(HolderFile), &h, nil); err == nil && h.PID > 0 {
		e.Holder = &h
	}
	if pid := t.LockPID(); pid > 0 {
		e.PID = pid
		if e.Holder != nil && e.Holder.PID != pid {
			if Owns(pid, e.Holder.PID) {
				// A run in another PID namespace (a container sharing
				// the checkout): its record names it as it sees itself.
				e.HereAs = pid
			} else {
				// The record is stale (its writer was killed) or the
				// holder has not written its own yet.
				e.Holder = nil
			}
		}
	}
	if e.Holder != nil {
		e.Stopped = PIDStopped(e.Holder.PID)
	} else {
		e.Stopped = PIDStopped(e.PID)
	}
	return e
}

// Owns reports whether the process lockPID, which holds the agent lock as
// the kernel sees it from here, is the one a holder record naming
// recordPID was written by: the same pid, or the same process seen from
// another PID namespace (its pid in its own namespace is recordPID). A
// record naming any other pid is stale - after a reboot its pid may even
// belong to an unrelated live process.
func Owns(lockPID, recordPID int) bool {
	return lockPID == recordPID || (recordPID > 0 && innerPID(lockPID) == recordPID)
}

// Probe reports whether anyone holds the agent lock. It never takes the
// lock, not even for an instant: a probe that did would make a concurrent
// `wiggum lock` fail for no reason. A wiggum holder is seen from any PID
// namespace (its live mark is a lock the kernel tests without regard to
// namespaces); a holder that is not wiggum (a bash loop's flock) is seen
// through /proc/locks, which a PID namespace of its own filters.
func (t Tree) Probe() (held bool, err error) {
	held, err = probeFile(t.Path(LockFile))
	if held || err != nil {
		return held, err
	}
	// A holder whose lock file was taken from the tree holds it still by
	// its second name.
	if link := leaseLink(t.Root); link != "" {
		return probeFile(link)
	}
	return false, nil
}

// LockPID returns the pid that took the agent lock according to the
// kernel, or 0 when it is free or that cannot be known (not Linux, or a
// holder outside this PID namespace).
func (t Tree) LockPID() int {
	if pids, _ := flockHolders(t.Path(LockFile)); len(pids) > 0 {
		return pids[0]
	}
	if link := leaseLink(t.Root); link != "" {
		if pids, _ := flockHolders(link); len(pids) > 0 {
			return pids[0]
		}
	}
	return 0
}

// CurrentHolder returns the holder record when the lock is held and the
// record belongs to the holder, else nil.
func (t Tree) CurrentHolder() (*Holder, error) {
	held, err := t.Probe()
	if err != nil || !held {
		return nil, err
	}
	var h Holder
	if err := statefile.ReadJSON(t.Path(HolderFile), &h, nil); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if pid := t.LockPID(); pid > 0 && !Owns(pid, h.PID) {
		return nil, nil
	}
	return &h, nil
}

// HolderHere returns the holder record when the lock is held and the
// record belongs to the holder (CurrentHolder), and the holder's pid in
// this PID namespace: the kernel's, when it ran in another one (a
// container's run records its own pid there), else the record's.
func (t Tree) HolderHere() (h *Holder, here int, err error) {
	h, err = t.CurrentHolder()
	if err != nil || h == nil {
		return nil, 0, err
	}
	here = h.PID
	if pid := t.LockPID(); pid > 0 {
		here = pid
	}
	return h, here, nil
}

// LiveHolder returns the record of the live wiggum holding the agent
// lock, nil when none does: the lock held, the record its holder's own
// and that process alive here (HolderHere) - wiggum status's test of a
// run at work. A pid recorded elsewhere proves nothing by itself: seen
// from outside the PID namespace it was recorded in, or after a reboot, it
// can name any live process.
func (t Tree) LiveHolder() (*Holder, error) {
	h, here, err := t.HolderHere()
	if err != nil || h == nil || !PIDAlive(here) {
		return nil, err
	}
	return h, nil
}

// InSession reports whether this process runs inside the session of the
// current lock holder: WIGGUM_SESSION matches the live holder's token.
func (t Tree) InSession() (*Holder, bool) {
	tok := os.Getenv(SessionEnv)
	if tok == "" {
		return nil, false
	}
	h, err := t.CurrentHolder()
	if err != nil || h == nil || h.Session != tok {
		return nil, false
	}
	return h, true
}

// WithLock runs fn as part of the current session when this process is in
// it, else under the agent lock taken without waiting. fn gets the session
// token it acts for, "" when it runs outside any session.
func (t Tree) WithLock(ctx context.Context, command []string, fn func(session string) error) error {
	if h, ok := t.InSession(); ok {
		return fn(h.Session)
	}
	l, err := t.Acquire(ctx, AcquireOptions{Command: command})
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

// SessionInfo says whether a wiggum session holds the agent lock, and
// whether this process is part of it.
type SessionInfo struct {
	Active  bool   // a live wiggum holder has the lock
	Mine    bool   // WIGGUM_SESSION matches the holder's token
	Session string // the holder's token
	// AllowPush: the holder was started with WIGGUM_ALLOW_PUSH=1.
	AllowPush bool
	// Started is when the holder took the lock: what changed before it
	// was not the session's doing.
	Started time.Time
	// Elsewhere: the session holds another working tree of the same
	// repository, and this process is one of the session's (a client's
	// subagent working in a git worktree of its own). The guard applies;
	// this tree has no checkpoint of the session's to roll back to.
	Elsewhere bool
	// PID and Command are the holder's, as its record names them (zero
	// when the record is gone): the guard denies signalling it.
	PID     int
	Command []string
}

// Session reads the holder record and probes the lock; it is the hook
// path's question, answered with two file reads and a lock test. The
// record is written before and removed before the flock is released, so a
// missing record means no wiggum session; the probe tells a live holder
// from a record left by a SIGKILLed one.
//
// A process the session started for this tree (its environment names the
// session and the tree) is never told there is no session: if the record
// or the lock file is gone, something deleted them under the live session
// - an agent's script, say - and the guard must not stand down for that.
func (t Tree) Session() SessionInfo {
	if t.Root == "" {
		return SessionInfo{}
	}
	var h Holder
	if err := statefile.ReadJSON(t.Path(HolderFile), &h, nil); err != nil || h.Session == "" {
		return t.inSession()
	}
	if held, err := t.Probe(); err != nil || !held {
		return t.inSession()
	}
	tok := os.Getenv(SessionEnv)
	return SessionInfo{Active: true, Mine: tok != "" && tok == h.Session, Session: h.Session, Started: h.Started, AllowPush: h.AllowPush, PID: h.PID, Command: h.Command}
}

// inSession is the session this process was started in for this tree,
// when its environment says so; none otherwise.
func (t Tree) inSession() SessionInfo {
	tok, root := os.Getenv(SessionEnv), os.Getenv(RootEnv)
	if tok == "" || root == "" || !SameDir(root, t.Root) {
		return SessionInfo{}
	}
	return SessionInfo{Active: true, Mine: true, Session: tok}
}

// SameDir reports whether a and b name one directory (or file): the same
// path, or the same inode.
func SameDir(a, b string) bool {
	if a == b {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
