// Package statefile writes wiggum's state files so that a crash or a
// concurrent writer never leaves a torn one (temp file, fsync, rename; or an
// append under an flock), and reads them so that a damaged file is a clear
// error, never "no state".
package statefile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"
)

// CorruptError is a state file that exists but cannot be read as what it
// should hold.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s is corrupt (%v); inspect or move it aside, then run again", e.Path, e.Err)
}
func (e *CorruptError) Unwrap() error { return e.Err }

// ReadJSON decodes path into v. A missing file returns an error matching
// fs.ErrNotExist; undecodable content or a failed check returns
// *CorruptError.
func ReadJSON(path string, v any, check func() error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(v); err != nil {
		return &CorruptError{Path: path, Err: err}
	}
	if dec.More() {
		return &CorruptError{Path: path, Err: errors.New("trailing data after the JSON value")}
	}
	if check != nil {
		if err := check(); err != nil {
			return &CorruptError{Path: path, Err: err}
		}
	}
	return nil
}

// WriteJSON writes v to path atomically.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return Write(path, append(data, '\n'))
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

// Replace replaces path with data atomically (temp file, rename) without
// an fsync: a crash of the process never leaves it torn, a power cut may
// leave the old content or an empty file. For records of what is running
// right now (rewritten every iteration), where an fsync buys nothing.
func Replace(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(f.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
	}
	return werr
}

// AppendLine appends line and a newline to path with one write under an
// flock, synced, so lines from concurrent writers never interleave.
func AppendLine(path string, line []byte) error {
	return WithLock(path, func() error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
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
func AppendLog(path string, line []byte) error {
	return WithLock(path, func() error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
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
	data, err := os.ReadFile(path)
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
