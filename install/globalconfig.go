package install

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/renameio/v2"
)

// userConfigFile is one of the person's own git config files as read at
// one moment: the name git reads it by, the file a link there leads to
// (a dotfiles repository's), the link itself, and its content (nil when
// there was none).
type userConfigFile struct {
	name, real, link string
	data             []byte
	mode             fs.FileMode // its permissions (a 0600 file may hold a token)
}

// userConfigFiles reads the files git reads as the person's own config:
// GIT_CONFIG_GLOBAL's alone when it is set, else the XDG git/config and
// ~/.gitconfig. One that is not a regular file (/dev/null) or is too
// large to hold is not watched.
func userConfigFiles(home string) []userConfigFile {
	var names []string
	if f := os.Getenv("GIT_CONFIG_GLOBAL"); f != "" {
		names = []string{f}
	} else {
		if xdg := xdgConfig(home); xdg != "" {
			names = append(names, filepath.Join(xdg, "git", "config"))
		}
		if home != "" {
			names = append(names, filepath.Join(home, ".gitconfig"))
		}
	}
	var out []userConfigFile
	for _, name := range names {
		f := userConfigFile{name: name, real: name}
		if fi, err := os.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			f.link, _ = os.Readlink(name)
			real, err := filepath.EvalSymlinks(name)
			if err != nil {
				continue // a dangling link: not a file of the person's to put back
			}
			f.real = real
		}
		fi, err := os.Stat(f.real)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil || !fi.Mode().IsRegular() || fi.Size() >= maxIgnore:
			continue
		default:
			if f.data, err = readAll(f.real); err != nil {
				continue
			}
			f.mode = fi.Mode().Perm()
		}
		out = append(out, f)
	}
	return out
}

func readAll(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIgnore))
	if data == nil {
		data = []byte{}
	}
	return data, err
}

// UserConfigChanged lists the person's own git config files that are not,
// now, as g read them: rewritten, emptied, made or removed, a link there
// replaced. A rewrite that only drops settings - their identity, their
// signing key - is a change too: git reads the file in every repository,
// and no rollback reaches it. RestoreUserConfig puts them back.
func (g GitRails) UserConfigChanged() []string {
	var changed []string
	for _, f := range g.userConfig {
		if !f.same() {
			changed = append(changed, f.name)
		}
	}
	return changed
}

// same reports whether the file is as it was read.
func (f userConfigFile) same() bool {
	if f.link != "" {
		if to, err := os.Readlink(f.name); err != nil || to != f.link {
			return false
		}
	}
	// Never opened unless a regular file: a FIFO there blocks the open.
	var now []byte
	if fi, err := os.Stat(f.name); err == nil {
		if !fi.Mode().IsRegular() || fi.Size() >= maxIgnore {
			return false
		}
		if now, err = readAll(f.name); err != nil {
			return false
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return (f.data == nil) == (now == nil) && bytes.Equal(f.data, now)
}

// RestoreUserConfig writes the person's own git config files back as g
// read them: the content into the file a link led to (with the
// permissions it had), the link made again where it was replaced, a file
// the attempt made removed. What each changed file held is kept first in
// saveDir, named after it and the time - a change may be the person's
// own, made while the run went on, and is not lost - and listed in saved.
func (g GitRails) RestoreUserConfig(saveDir string) (saved []string, err error) {
	stamp := time.Now().UTC().Format("20060102T150405")
	for _, f := range g.userConfig {
		if f.same() {
			continue
		}
		if fi, err := os.Stat(f.name); err == nil && fi.Mode().IsRegular() {
			if now, err := readAll(f.name); err == nil {
				keep := filepath.Join(saveDir, strings.TrimPrefix(filepath.Base(f.name), ".")+"-"+stamp)
				if err := os.MkdirAll(saveDir, 0o700); err != nil {
					return saved, err
				}
				if err := renameio.WriteFile(keep, now, 0o600); err != nil {
					return saved, err
				}
				saved = append(saved, keep)
			}
		}
		if f.link != "" {
			if to, err := os.Readlink(f.name); err != nil || to != f.link {
				if err := os.Remove(f.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return saved, err
				}
				if err := os.Symlink(f.link, f.name); err != nil {
					return saved, err
				}
			}
		}
		if f.data == nil {
			if err := os.Remove(f.real); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return saved, err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(f.real), 0o755); err != nil {
			return saved, err
		}
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := renameio.WriteFile(f.real, f.data, mode); err != nil {
			return saved, err
		}
	}
	return saved, nil
}
