package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// inProcessCheckoutLimit bounds the blobs writeVerbatim holds in memory;
// beyond it git's checkout-index streams them.
const inProcessCheckoutLimit = 8 << 20

// writeVerbatim writes each of write (regular files at their blobs) into
// the working tree as `git checkout-index -f` would, from the running
// cat-file, where git would write the blobs byte for byte (see
// git.Repo.Verbatim) and they are small. ok is false, with nothing
// written, when git must do it: a symbolic link, a conversion that could
// apply, a large blob, a git too old to tell sizes first.
func (s *State) writeVerbatim(cat *git.Cat, write []treeChange) (ok bool, err error) {
	if len(write) == 0 {
		return true, nil
	}
	paths := make([]string, len(write))
	oids := make([]string, len(write))
	for i, c := range write {
		if c.mode != "100644" && c.mode != "100755" {
			return false, nil
		}
		paths[i], oids[i] = c.path, c.oid
	}
	if !s.Repo.Verbatim(paths) {
		return false, nil
	}
	sizes, ok, err := cat.Sizes(oids...)
	if err != nil || !ok {
		return false, err
	}
	var total int64
	for _, n := range sizes {
		if n < 0 {
			return false, nil // git says what is missing
		}
		total += n
	}
	if total > inProcessCheckoutLimit {
		return false, nil
	}
	blobs, err := cat.Read(oids...)
	if err != nil {
		return false, err
	}
	for i, c := range write {
		if blobs[i].Type != "blob" {
			return false, nil
		}
		if err := s.writeFile(c.path, blobs[i].Data, c.mode == "100755"); err != nil {
			return true, err // some may be written: the caller reports it
		}
	}
	return true, nil
}

// writeFile puts data at rel as checkout-index -f does: whatever is in the
// way (a file or a symbolic link where a directory belongs, a directory
// where the file belongs) is removed, and the file is created anew with
// mode 0666 or 0777 less the umask.
func (s *State) writeFile(rel string, data []byte, executable bool) error {
	parts := strings.Split(rel, "/")
	dir := s.Repo.Root
	for _, p := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, p)
		fi, err := os.Lstat(dir)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			if err := os.Remove(dir); err != nil {
				return err
			}
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if err := os.Mkdir(dir, 0o777); err != nil {
			return err
		}
	}
	path := filepath.Join(dir, parts[len(parts)-1])
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		if err := removeAll(path); err != nil {
			return err
		}
	} else if err == nil {
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	perm := os.FileMode(0o666)
	if executable {
		perm = 0o777
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		return err
	}
	return nil
}
