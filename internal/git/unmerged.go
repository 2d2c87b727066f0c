package git

import (
	"bytes"
	"context"
	binenc "encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Unmerged lists the paths with a conflict recorded in the index (stages
// 1-3): what a `git stash pop`, `git checkout -m` or `git apply --3way`
// leaves without any other trace, and a merge or rebase besides its own
// files. `git add` would take each such file as resolved, conflict
// markers and all.
//
// It reads the index file itself - no git process on the loop's path -
// in formats 2 to 4, and asks git (ls-files -u) when the file cannot be
// read that way: a split index, a format it does not know, anything that
// does not add up.
func (r *Repo) Unmerged(ctx context.Context) ([]string, error) {
	paths, err := unmergedInIndex(filepath.Join(r.GitDir, "index"), hashSize(r.CommonDir))
	if err == nil {
		return paths, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // no index yet: nothing staged, nothing in conflict
	}
	out, err := r.Run(ctx, "ls-files", "-u", "-z")
	if err != nil {
		return nil, err
	}
	var list []string
	for _, rec := range SplitZ(out) {
		if _, path, ok := strings.Cut(rec, "\t"); ok && (len(list) == 0 || list[len(list)-1] != path) {
			list = append(list, path)
		}
	}
	return list, nil
}

// errIndexFormat: the index is not in a form unmergedInIndex reads.
var errIndexFormat = errors.New("index: not a form read here")

// hashSize is the repository's object id size in bytes: 32 under
// extensions.objectFormat = sha256, else 20.
func hashSize(commonDir string) int {
	data, err := statefile.ReadFile(filepath.Join(commonDir, "config"))
	if err == nil {
		for _, line := range strings.Split(strings.ToLower(string(data)), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok && strings.TrimSpace(k) == "objectformat" && strings.TrimSpace(v) == "sha256" {
				return 32
			}
		}
	}
	return 20
}

// unmergedInIndex walks the entries of the index file at path (git's
// index-format: a "DIRC" header, then per entry 40 bytes of stat data,
// the object id, 16 bits of flags - stage in bits 12-13 - 16 more in
// version 3 and later when the extended bit is set, and the path:
// NUL-padded to 8 bytes in versions 2 and 3, prefix-compressed in 4).
func unmergedInIndex(path string, hashLen int) ([]string, error) {
	data, err := statefile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, errIndexFormat
	}
	version := binenc.BigEndian.Uint32(data[4:8])
	count := binenc.BigEndian.Uint32(data[8:12])
	if version < 2 || version > 4 {
		return nil, errIndexFormat
	}
	var out []string
	prev := []byte{}
	at := 12
	for range count {
		start := at
		at += 40 + hashLen
		if at+2 > len(data) {
			return nil, errIndexFormat
		}
		flags := binenc.BigEndian.Uint16(data[at : at+2])
		at += 2
		if flags&0x4000 != 0 {
			if version < 3 {
				return nil, errIndexFormat
			}
			at += 2
		}
		var name []byte
		if version == 4 {
			drop, used, ok := offsetVarint(data[at:])
			if !ok || drop > uint64(len(prev)) {
				return nil, errIndexFormat
			}
			at += used
			end := bytes.IndexByte(data[at:], 0)
			if end < 0 {
				return nil, errIndexFormat
			}
			name = append(append([]byte{}, prev[:len(prev)-int(drop)]...), data[at:at+end]...)
			at += end + 1
		} else {
			end := bytes.IndexByte(data[at:], 0)
			if end < 0 {
				return nil, errIndexFormat
			}
			if l := int(flags & 0xfff); l < 0xfff && l != end {
				return nil, errIndexFormat // the hash size was guessed wrong
			}
			name = data[at : at+end]
			at += end + 1
			at = start + (at-start+7)/8*8
		}
		if at > len(data) {
			return nil, errIndexFormat
		}
		if flags&0x3000 != 0 && (len(out) == 0 || out[len(out)-1] != string(name)) {
			out = append(out, string(name))
		}
		prev = name
	}
	// A split index keeps most entries in a shared file ("link").
	if hasExtension(data[at:], "link") {
		return nil, errIndexFormat
	}
	return out, nil
}

// offsetVarint decodes git's offset varint (each continuation adds one
// before shifting: varint.c), returning the value and bytes used.
func offsetVarint(b []byte) (uint64, int, bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	c := b[0]
	v := uint64(c & 0x7f)
	i := 1
	for c&0x80 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0, false
		}
		c = b[i]
		v = ((v + 1) << 7) | uint64(c&0x7f)
		i++
	}
	return v, i, true
}

// hasExtension walks the index extensions after the entries (4-byte
// signature, 4-byte size, data), up to the trailing checksum, for sig.
func hasExtension(b []byte, sig string) bool {
	for len(b) >= 8 {
		size := binenc.BigEndian.Uint32(b[4:8])
		if string(b[:4]) == sig {
			return true
		}
		if uint64(size) > uint64(len(b)-8) {
			return false
		}
		b = b[8+size:]
	}
	return false
}
