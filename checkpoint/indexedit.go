package checkpoint

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// A rollback's last git process used to be `update-index --index-info`,
// setting the entries of the paths it changed in a copy of the user's
// index. editIndex does that edit in this process: the index format (git's
// Documentation/gitformat-index) is a sorted list of fixed-layout entries
// and a few extensions, and the edit copies every other entry byte for
// byte, so each keeps its stat data as it did with git. It declines -
// leaving the edit to git - for what it does not handle as git would: a
// version-4 (path-compressed) index, a SHA-256 repository, unmerged
// entries, a submodule entry to write, and any extension but the cache
// tree (TREE, kept and invalidated along the changed paths, as git does),
// resolve-undo (REUC, kept) and the two offset tables (EOIE, IEOT, which
// only speed up loading and are dropped): a split index (link), a sparse
// index (sdir), the untracked cache (UNTR) and the fsmonitor state (FSMN)
// stay git's job.

// errIndexDecline means editIndex cannot make this edit; nothing was
// written.
var errIndexDecline = errors.New("index edit needs git")

const (
	indexEntryFixed = 62     // stat data (40), object id (20), flags (2)
	indexExtended   = 0x4000 // flags: a second flags word follows (v3)
	indexStageMask  = 0x3000
	indexNameMask   = 0x0fff
)

// indexEntry is one entry of an index: its path and its bytes on disk
// (name is a slice of them: an index of 100,000 entries is parsed without
// 100,000 allocations).
type indexEntry struct {
	name []byte
	raw  []byte
}

// editIndex reads the index at src, sets the entries for changes as
// `update-index --add --replace -z --index-info` would given setEntries'
// input (a change without mode removes the path; one with a mode points it
// at its blob with no stat data, replacing entries it conflicts with as a
// file or a directory), and writes the result to dst. It returns
// errIndexDecline, with nothing written, when git must do it.
func editIndex(src, dst string, changes []treeChange, hexLen int) error {
	if hexLen != 2*sha1.Size {
		return errIndexDecline
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return errIndexDecline // git says what is wrong
	}
	fi, err := os.Stat(src)
	if err != nil {
		return errIndexDecline
	}
	out, err := editIndexData(data, fi.ModTime().Unix(), changes)
	if err != nil {
		return err
	}
	// The new index gets the old one's permissions whatever the umask,
	// as git's (a shared repository's group bits included).
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	_, werr := f.Write(out)
	return errors.Join(werr, f.Chmod(fi.Mode().Perm()), f.Close())
}

// editIndexData is editIndex on the bytes of an index whose file was last
// written in second stamp.
func editIndexData(data []byte, stamp int64, changes []treeChange) ([]byte, error) {
	const sum = sha1.Size
	if len(data) < 12+sum || string(data[:4]) != "DIRC" {
		return nil, errIndexDecline
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version != 2 && version != 3 {
		return nil, errIndexDecline
	}
	body, trailer := data[:len(data)-sum], data[len(data)-sum:]
	skipHash := bytes.Equal(trailer, make([]byte, sum)) // index.skipHash
	if !skipHash {
		if got := sha1.Sum(body); !bytes.Equal(got[:], trailer) {
			return nil, errIndexDecline
		}
	}
	count := int(binary.BigEndian.Uint32(data[8:12]))
	if count > (len(body)-12)/(indexEntryFixed+2) {
		return nil, errIndexDecline // more entries than the file could hold
	}
	entries := make([]indexEntry, 0, count+len(changes))
	off, err := scanIndex(body, sum, func(raw, name []byte, flags uint16) error {
		if flags&indexStageMask != 0 {
			return errIndexDecline // unmerged
		}
		if len(entries) > 0 && bytes.Compare(entries[len(entries)-1].name, name) >= 0 {
			return errIndexDecline // not in git's order: git says what is wrong
		}
		entries = append(entries, indexEntry{name: name, raw: raw})
		return nil
	})
	if err != nil {
		return nil, errIndexDecline
	}
	var tree *cacheTree
	var reuc []byte
	for off < len(body) {
		if off+8 > len(body) {
			return nil, errIndexDecline
		}
		sig := string(body[off : off+4])
		n := int(binary.BigEndian.Uint32(body[off+4:]))
		if n < 0 || off+8+n > len(body) {
			return nil, errIndexDecline
		}
		ext := body[off+8 : off+8+n]
		switch sig {
		case "TREE":
			var rest []byte
			var err error
			if tree, rest, err = parseCacheTree(ext, sum); err != nil || len(rest) != 0 {
				return nil, errIndexDecline
			}
		case "REUC":
			reuc = body[off : off+8+n]
		case "EOIE", "IEOT":
		default:
			return nil, errIndexDecline
		}
		off += 8 + n
	}

	// The edit, as update-index makes it: removals, then entries, each
	// replacing what is in its way (a file where a directory of it
	// belongs, anything under it). The entries are sorted by name, so
	// each question is a binary search, not a look at every entry.
	drop := make([]bool, len(entries))
	find := func(name string) int {
		i, _ := slices.BinarySearchFunc(entries, name, func(e indexEntry, n string) int { return bytes.Compare(e.name, []byte(n)) })
		return i
	}
	dropName := func(name string) {
		if i := find(name); i < len(entries) && string(entries[i].name) == name {
			drop[i] = true
		}
	}
	var added []indexEntry
	for _, c := range changes {
		dropName(c.path)
		if c.mode == "" {
			continue
		}
		e, ok := newIndexEntry(c)
		if !ok {
			return nil, errIndexDecline
		}
		added = append(added, e)
		for i := find(c.path + "/"); i < len(entries) && bytes.HasPrefix(entries[i].name, []byte(c.path+"/")); i++ {
			drop[i] = true
		}
		for d := parentDir(c.path); d != ""; d = parentDir(d) {
			dropName(d)
		}
	}
	slices.SortFunc(added, func(a, b indexEntry) int { return bytes.Compare(a.name, b.name) })
	for i := 1; i < len(added); i++ {
		if bytes.Equal(added[i].name, added[i-1].name) {
			return nil, errIndexDecline // a path written twice
		}
	}
	// Racily clean entries (changed in the second the index was written,
	// so their stat data cannot prove them clean) lose their size, as git
	// smudges them when it writes an index: the new index is younger, and
	// would otherwise vouch for them.
	merged := make([]indexEntry, 0, len(entries)+len(added))
	j := 0
	for i, e := range entries {
		if drop[i] {
			tree.invalidate(string(e.name))
			continue
		}
		for ; j < len(added) && bytes.Compare(added[j].name, e.name) < 0; j++ {
			merged = append(merged, added[j])
		}
		if mtime := int64(binary.BigEndian.Uint32(e.raw[8:12])); mtime >= stamp {
			e.raw = slices.Clone(e.raw)
			binary.BigEndian.PutUint32(e.raw[36:40], 0)
		}
		merged = append(merged, e)
	}
	merged = append(merged, added[j:]...)
	for _, e := range added {
		tree.invalidate(string(e.name))
	}
	entries = merged

	var b bytes.Buffer
	b.Grow(len(data) + len(added)*(indexEntryFixed+64))
	b.WriteString("DIRC")
	binary.Write(&b, binary.BigEndian, [2]uint32{version, uint32(len(entries))})
	for _, e := range entries {
		b.Write(e.raw)
	}
	if tree != nil {
		var t bytes.Buffer
		tree.write(&t)
		b.WriteString("TREE")
		binary.Write(&b, binary.BigEndian, uint32(t.Len()))
		b.Write(t.Bytes())
	}
	b.Write(reuc)
	if skipHash {
		b.Write(make([]byte, sum))
	} else {
		h := sha1.Sum(b.Bytes())
		b.Write(h[:])
	}
	return b.Bytes(), nil
}

// scanIndex walks the entries of an index's body (the file without its
// trailing checksum) as git writes them in versions 2, 3 and 4, with
// object ids of idLen bytes, and returns where its extensions start. fn
// gets each entry's bytes (stat data, object id, flags, the extended flags
// word where the flags say there is one; in versions 2 and 3 also the name
// and its padding, so raw is the entry whole) and its name: a slice of
// body in versions 2 and 3, in version 4 (names compressed against the
// previous one) a buffer the next entry reuses. An error from fn stops the
// walk and is returned; an index that is not what git writes is an error.
func scanIndex(body []byte, idLen int, fn func(raw, name []byte, flags uint16) error) (int, error) {
	bad := errors.New("index: malformed entry")
	if len(body) < 12 || string(body[:4]) != "DIRC" {
		return 0, bad
	}
	version := binary.BigEndian.Uint32(body[4:8])
	if version < 2 || version > 4 {
		return 0, fmt.Errorf("index: version %d", version)
	}
	count := int(binary.BigEndian.Uint32(body[8:12]))
	fixed := 40 + idLen + 2 // stat data, object id, flags
	var prev []byte         // version 4: the previous entry's name
	off := 12
	for range count {
		if off+fixed > len(body) {
			return 0, bad
		}
		flags := binary.BigEndian.Uint16(body[off+fixed-2:])
		nameAt := off + fixed
		if flags&indexExtended != 0 {
			if version < 3 {
				return 0, bad
			}
			nameAt += 2
		}
		if nameAt > len(body) {
			return 0, bad
		}
		if version == 4 {
			strip, n := indexVarint(body[nameAt:])
			if n <= 0 || strip > uint64(len(prev)) {
				return 0, bad
			}
			end := bytes.IndexByte(body[nameAt+n:], 0)
			if end < 0 {
				return 0, bad
			}
			prev = append(prev[:len(prev)-int(strip)], body[nameAt+n:nameAt+n+end]...)
			next := nameAt + n + end + 1
			if err := fn(body[off:nameAt], prev, flags); err != nil {
				return 0, err
			}
			off = next
			continue
		}
		n := bytes.IndexByte(body[nameAt:], 0)
		if n < 0 {
			return 0, bad
		}
		size := (nameAt - off + n + 8) &^ 7
		if off+size > len(body) {
			return 0, bad
		}
		if err := fn(body[off:off+size], body[nameAt:nameAt+n], flags); err != nil {
			return 0, err
		}
		off += size
	}
	return off, nil
}

// indexVarint reads the number a version-4 index puts before each name
// (git's varint: seven bits a byte, high bit "more", each continuation
// adding one), returning it and its length in bytes, or n <= 0 when b does
// not hold one.
func indexVarint(b []byte) (v uint64, n int) {
	for i, c := range b {
		if i > 0 {
			v++
		}
		if i == 9 {
			return 0, -1
		}
		v = v<<7 | uint64(c&0x7f)
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// newIndexEntry is the entry update-index --index-info writes for c: its
// mode and blob, no stat data (so git checks the file on its next read).
func newIndexEntry(c treeChange) (indexEntry, bool) {
	mode, err := strconv.ParseUint(c.mode, 8, 32)
	id, herr := hex.DecodeString(c.oid)
	if err != nil || herr != nil || len(id) != sha1.Size || (mode != 0o100644 && mode != 0o100755 && mode != 0o120000) || strings.IndexByte(c.path, 0) >= 0 {
		return indexEntry{}, false
	}
	size := (indexEntryFixed + len(c.path) + 8) &^ 7
	raw := make([]byte, size)
	binary.BigEndian.PutUint32(raw[24:28], uint32(mode))
	copy(raw[40:60], id)
	binary.BigEndian.PutUint16(raw[60:62], uint16(min(len(c.path), indexNameMask)))
	copy(raw[indexEntryFixed:], c.path)
	return indexEntry{name: raw[indexEntryFixed : indexEntryFixed+len(c.path)], raw: raw}, true
}

// cacheTree is the index's TREE extension: for each directory, how many
// entries it covers (-1 when unknown) and, when known, its tree's id.
type cacheTree struct {
	name     string
	entries  int
	id       []byte
	children []*cacheTree
}

// parseCacheTree reads one node and its subtrees from b, returning what
// follows them.
func parseCacheTree(b []byte, idLen int) (*cacheTree, []byte, error) {
	bad := errors.New("bad cache tree")
	nul := bytes.IndexByte(b, 0)
	if nul < 0 {
		return nil, nil, bad
	}
	t := &cacheTree{name: string(b[:nul])}
	b = b[nul+1:]
	lf := bytes.IndexByte(b, '\n')
	if lf < 0 {
		return nil, nil, bad
	}
	counts := strings.Fields(string(b[:lf]))
	if len(counts) != 2 {
		return nil, nil, bad
	}
	var err error
	if t.entries, err = strconv.Atoi(counts[0]); err != nil {
		return nil, nil, bad
	}
	sub, err := strconv.Atoi(counts[1])
	if err != nil || sub < 0 || sub > len(b) {
		return nil, nil, bad
	}
	b = b[lf+1:]
	if t.entries >= 0 {
		if len(b) < idLen {
			return nil, nil, bad
		}
		t.id, b = b[:idLen], b[idLen:]
	}
	for range sub {
		var c *cacheTree
		if c, b, err = parseCacheTree(b, idLen); err != nil {
			return nil, nil, err
		}
		t.children = append(t.children, c)
	}
	return t, b, nil
}

// invalidate marks every directory on path's way as unknown, as git does
// for each entry it adds or removes.
func (t *cacheTree) invalidate(path string) {
	for t != nil {
		t.entries, t.id = -1, nil
		dir, rest, ok := strings.Cut(path, "/")
		if !ok {
			return
		}
		var next *cacheTree
		for _, c := range t.children {
			if c.name == dir {
				next = c
				break
			}
		}
		t, path = next, rest
	}
}

func (t *cacheTree) write(b *bytes.Buffer) {
	fmt.Fprintf(b, "%s\x00%d %d\n", t.name, t.entries, len(t.children))
	if t.entries >= 0 {
		b.Write(t.id)
	}
	for _, c := range t.children {
		c.write(b)
	}
}
