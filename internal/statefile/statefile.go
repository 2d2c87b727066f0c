// Package statefile writes wiggum's state files so that a crash or a
// concurrent writer never leaves a torn one (temp file, fsync, rename; a
// spare file swapped in; or an append under an flock), and reads them so
// that a damaged file is a clear error, never "no state".
package statefile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"
)

// CorruptError is a state file that exists but cannot be read as what it
// should hold.
type CorruptError struct {
	Path string
	Err  error
	// Advice replaces "inspect or move it aside, then run again" for a
	// file where that alone would not be enough (one with a second name
	// that would bring it back).
	Advice string
}

func (e *CorruptError) Error() string {
	advice := e.Advice
	if advice == "" {
		advice = "inspect or move it aside, then run again"
	}
	return fmt.Sprintf("%s is corrupt (%v); %s", e.Path, e.Err, advice)
}
func (e *CorruptError) Unwrap() error { return e.Err }

// ReadJSON decodes path into v. A missing file returns an error matching
// fs.ErrNotExist; undecodable content or a failed check returns
// *CorruptError.
//
// A file Swap rewrites can change under a slow reader: one that opened it
// just before a swap and read it after the next Stage began rewriting
// that file under its spare name. So content that does not decode is read
// again while it keeps changing (at most twice); only content that stays
// the same and is still damaged is corrupt.
func ReadJSON(path string, v any, check func() error) error {
	data, err := readState(path)
	if err != nil {
		return err
	}
	for retry := 0; ; retry++ {
		err = decodeJSON(data, v, check)
		if err == nil {
			return nil
		}
		if retry == 2 {
			break
		}
		again, rerr := ReadFile(path)
		if rerr != nil || bytes.Equal(again, data) {
			break
		}
		data = again
	}
	return &CorruptError{Path: path, Err: err}
}

// readState reads a state file; one that is not a regular file (a FIFO
// an agent swapped in) is corrupt, said without waiting on it.
func readState(path string) ([]byte, error) {
	data, err := ReadFile(path)
	var nr *NotRegularError
	if errors.As(err, &nr) {
		return nil, &CorruptError{Path: path, Err: fmt.Errorf("%s, not a regular file", fileKind(nr.Mode))}
	}
	return data, err
}

func decodeJSON(data []byte, v any, check func() error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	if check != nil {
		return check()
	}
	return nil
}

// WriteJSON writes v to path atomically.
func WriteJSON(path string, v any) error {
	data, err := Encode(v)
	if err != nil {
		return err
	}
	return Write(path, data)
}

// Encode is v as every state file holds it: indented JSON ending in a
// newline.
func Encode(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// Write writes data to path atomically, creating the directory.
func Write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// The temporary file goes beside path, never into the system temp
	// directory (another file system, or a place other users can see).
	return renameio.WriteFile(path, data, 0o644, renameio.WithTempDir(filepath.Dir(path)))
}

// WriteUnsynced writes data to path as Write does - a temporary file
// beside it (named "."+base+random, as Write's), renamed over path - but
// without an fsync. Readers and a writer killed at any point see the old
// content or the new, whole (the kernel keeps what was written; a SIGKILL
// needs no flush); only a power cut or a kernel crash may leave it torn or
// empty. It is for records that a power cut makes meaningless anyway,
// such as the agent lock's holder record (the flock it describes does not
// survive a reboot), where the flush would be milliseconds for nothing.
func WriteUnsynced(path string, data []byte) error {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, "."+base)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := f.Chmod(0o644); werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
	}
	return werr
}

// Stage writes data whole into spare, a file kept beside the state file it
// will replace, rewriting it in place: once spare exists no inode is
// created or freed, which on ext4 is most of what a temp file and a
// rename cost (a new inode is searched for past every inode freed in the
// last minutes). spare is never read as state until Exchange names it;
// a write killed half-way leaves a torn spare and the state file as it
// was. With sync it is fsynced: after a power cut its content is whole if
// Exchange's rename reached the disk. One writer at a time: the caller
// holds WithLock (or a lock of its own) around Stage and Exchange.
//
// A spare that is not wiggum's own file - a symbolic link, a hard link, or
// anything but a regular file (put there by hand, by an agent, or by a
// commit that tracks wiggum's state) - is never written through: it is
// removed (the link, not what it names) and a new spare made.
func Stage(spare string, data []byte, sync bool) error {
	f, err := openOwn(spare)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// openOwn opens spare for rewriting in place, making it anew when it is
// not a regular file with one name.
func openOwn(spare string) (*os.File, error) {
	for retry := 0; ; retry++ {
		f, err := os.OpenFile(spare, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
		if err == nil {
			fi, serr := f.Stat()
			if serr != nil {
				f.Close()
				return nil, serr
			}
			if fi.Mode().IsRegular() && !linked(fi) {
				return f, nil
			}
			f.Close()
		} else if !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.EISDIR) || retry > 0 {
			return nil, err
		}
		if retry > 0 {
			return nil, fmt.Errorf("%s is not a file of wiggum's own, and could not be made one", spare)
		}
		if err := os.Remove(spare); err != nil {
			return nil, fmt.Errorf("%s is not a file of wiggum's own (a link or a directory), and could not be removed: %w", spare, err)
		}
	}
}

// linked reports whether the file has another name (a hard link).
func linked(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}

// Truncate empties the file at path when it is a regular file of its own;
// a symbolic link there is removed instead, never followed, and so is a
// FIFO (opened without blocking: with no reader that is ENXIO).
func Truncate(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENXIO) {
		return os.Remove(path)
	}
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && (!fi.Mode().IsRegular() || linked(fi)) {
		f.Close()
		return os.Remove(path)
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// OpenAppend opens path for appending, creating it, and never through a
// symbolic link: wiggum's logs and journals are its own files, and a link
// there (by hand, by an agent, by a commit) would have wiggum write into
// whatever it names. A link is a clear error naming the file, and so is a
// FIFO or anything else but a regular file (opened without blocking, never
// waited on).
func OpenAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link, and wiggum writes its own files only, never through a link: remove it (rm %s), then run again", path, path)
	}
	if errors.Is(err, syscall.ENXIO) {
		return nil, fmt.Errorf("%s is a FIFO (named pipe), and wiggum writes its own files only: remove it (rm %s), then run again", path, path)
	}
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s is %s, and wiggum writes its own files only: remove it (rm %s), then run again", path, fileKind(fi.Mode()), path)
	}
	return f, nil
}

// Exchange makes what Stage wrote into spare the content of path in one
// atomic step: the two names swap their files (renameat2
// RENAME_EXCHANGE), so spare then holds path's previous content, whole,
// ready to be rewritten by the next Stage. Where there is no path yet, or
// the file system cannot swap, spare is renamed onto path (and the next
// Stage creates a new spare). A reader opening path sees the old content
// or the new one, never a mix.
func Exchange(spare, path string) error {
	err := exchange(spare, path)
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNoExchange) {
		return os.Rename(spare, path)
	}
	return err
}

// Swap replaces path with data atomically, as Replace does, through a
// spare file (.<name>.spare) it rewrites in place and swaps with path
// (Stage, then Exchange, under an flock on path+".lock"), so rewriting a
// record creates no file and frees none. With sync the new content is
// fsynced before it takes path's name.
func Swap(path string, data []byte, sync bool) error {
	return WithLock(path, func() error {
		spare := SparePath(path)
		if err := Stage(spare, data, sync); err != nil {
			return err
		}
		return Exchange(spare, path)
	})
}

// errNoExchange: this file system (or kernel) cannot swap two names.
var errNoExchange = errors.New("the file system cannot exchange two files")

// SparePath is the spare file Swap keeps beside path.
func SparePath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".spare")
}

// AppendLine appends line and a newline to path with one write under an
// flock, synced, so lines from concurrent writers never interleave.
func AppendLine(path string, line []byte) error {
	return WithLock(path, func() error {
		f, err := OpenAppend(path)
		if err != nil {
			return err
		}
		_, werr := f.Write(append(line, '\n'))
		if werr == nil {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		return werr
	})
}

// AppendLog appends line and a newline to a log with one write under an
// flock, so lines from concurrent writers never interleave, but without
// an fsync: a log's last lines may be lost to a power cut (never to a
// crash of the writer, and never torn in the middle of the file), which a
// log - unlike a state file - can afford, and which saves each append the
// milliseconds of a disk flush.
//
// The lock is waited for at most LogLockWait: any process can flock a log
// (an agent ran flock .ralph/wiggum/events.jsonl.lock sleep 600), and a
// hook that waited for it ran past its agent's timeout - a timed-out
// PreToolUse hook lets its call through. Past the wait the line is not
// written, and the error (matching ErrLocked) says why.
func AppendLog(path string, line []byte) error {
	return WithLockWait(path, LogLockWait, func() error {
		f, err := OpenAppend(path)
		if err != nil {
			return err
		}
		_, werr := f.Write(append(line, '\n'))
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		return werr
	})
}

// LogLockWait bounds AppendLog's wait for its lock.
var LogLockWait = 3 * time.Second

// ErrLocked is a lock another process held past the wait for it.
var ErrLocked = errors.New("held by another process")

// WithLockWait is WithLock waiting at most wait for the lock; past it fn
// is not run and the error matches ErrLocked. A free lock is taken at
// once, as WithLock takes it.
func WithLockWait(path string, wait time.Duration, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fl := flock.New(path + ".lock")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	locked, err := fl.TryLockContext(ctx, 10*time.Millisecond)
	cancel()
	switch {
	case locked:
		defer fl.Unlock()
		return fn()
	case err == nil || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("lock %s.lock: %w for over %s", path, ErrLocked, wait)
	}
	return fmt.Errorf("lock %s: %w", path, err)
}

// WithLock runs fn holding an flock on path+".lock".
func WithLock(path string, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fl := flock.New(path + ".lock")
	if err := fl.Lock(); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	defer fl.Unlock()
	return fn()
}

// ReadJSONLines decodes every non-blank line of path as a T, oldest first,
// and runs check on each. A missing file is no entries; a damaged line is a
// *CorruptError naming the line.
func ReadJSONLines[T any](path string, check func(*T) error) ([]T, error) {
	data, err := readState(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		err := json.Unmarshal(sc.Bytes(), &v)
		if err == nil && check != nil {
			err = check(&v)
		}
		if err != nil {
			return nil, &CorruptError{Path: path, Err: fmt.Errorf("line %d: %w", n, err)}
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	return out, nil
}
