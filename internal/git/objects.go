package git

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// ObjectWriter writes loose objects (trees, commits, small blobs) from this
// process, as git itself writes them: zlib-compressed, named by the SHA-1 of
// their header and content, put in place by a hard link that never replaces
// an object already there. It saves a git process per object batch where
// wiggum writes a handful of small objects.
type ObjectWriter struct {
	dir string // the objects directory
	// zw is reused for every object (under mu): a compressor's tables
	// are most of what writing a small object costs (page faults on
	// fresh memory).
	mu  sync.Mutex
	zw  *zlib.Writer
	buf bytes.Buffer
}

// ObjectWriter returns a writer for a repository whose object ids are
// hexLen digits long, or nil when git must write the objects itself: a
// SHA-256 repository, or an object store shared with a group (git adjusts
// the permissions of what it writes there; see core.sharedRepository).
func (r *Repo) ObjectWriter(hexLen int) *ObjectWriter {
	if hexLen != 2*sha1.Size {
		return nil
	}
	dir := filepath.Join(r.CommonDir, "objects")
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode()&(fs.ModeSetgid|0o022) != 0 {
		return nil
	}
	return &ObjectWriter{dir: dir}
}

// Write stores an object of type typ ("blob", "tree", "commit") and returns
// its id.
func (w *ObjectWriter) Write(typ string, data []byte) (string, error) {
	head := typ + " " + strconv.Itoa(len(data)) + "\x00"
	h := sha1.New()
	h.Write([]byte(head))
	h.Write(data)
	id := hex.EncodeToString(h.Sum(nil))
	path := filepath.Join(w.dir, id[:2], id[2:])
	if _, err := os.Lstat(path); err == nil {
		return id, nil
	}
	// Level 1, the level git writes loose objects at
	// (core.looseCompression's default).
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
	if w.zw == nil {
		w.zw, _ = zlib.NewWriterLevel(&w.buf, zlib.BestSpeed)
	} else {
		w.zw.Reset(&w.buf)
	}
	w.zw.Write([]byte(head))
	w.zw.Write(data)
	if err := w.zw.Close(); err != nil {
		return "", err
	}
	buf := &w.buf
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("write object: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "tmp_obj_")
	if err != nil {
		return "", fmt.Errorf("write object: %w", err)
	}
	_, werr := tmp.Write(buf.Bytes())
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write object: %w", err)
	}
	os.Chmod(tmp.Name(), 0o444)
	err = os.Link(tmp.Name(), path)
	os.Remove(tmp.Name())
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("write object: %w", err)
	}
	return id, nil
}

// Commit writes a commit of tree with the given parents, by author and
// committer ("Name <email>" each) at when.
func (w *ObjectWriter) Commit(tree string, parents []string, author, committer string, when time.Time, msg string) (string, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	stamp := fmt.Sprintf(" %d %s", when.Unix(), when.Format("-0700"))
	fmt.Fprintf(&b, "author %s%s\ncommitter %s%s\n\n%s", author, stamp, committer, stamp, msg)
	return w.Write("commit", b.Bytes())
}
