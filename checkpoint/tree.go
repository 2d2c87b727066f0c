package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// A snapshot of a dirty working tree is HEAD's tree with the paths `git
// status` named replaced. Building it through an index (the user's, linked,
// then update-index and write-tree) reads and rewrites the whole index
// twice: at 100,000 files that is most of a rollback beyond its status.
// quickSnapshot instead hashes only the named files (one hash-object), reads
// only HEAD's trees along their paths (one cat-file) and writes the few new
// trees and the commit from this process. Anything it does not handle the
// way git's index would (submodules, conflicts, a SHA-256 or group-shared
// object store, names with line breaks, an untracked directory) makes it
// decline, and the index route runs instead.

// errDecline means quickSnapshot cannot build this snapshot; nothing was
// written that matters (at most unreferenced objects).
var errDecline = errors.New("snapshot needs the index")

// quickSnapshot writes the snapshot commit of now's working tree and
// returns it with its tree and the working-tree state of every path status
// named (their entries in that tree, mode "" when deleted): the tracked
// ones, then the untracked ones. A rollback's index takes the untracked
// ones too: a file the attempt untracked (git rm --cached) that the
// checkpoint has as it is now gets its entry back.
//
// pre holds objects already read (see treeNames), nil when none are; cat,
// when not nil, reads the rest. The trees it writes are added to pre (by
// id), for a rollback's diff to find without reading them back.
func (s *State) quickSnapshot(ctx context.Context, now *git.Status, message string, pre map[string]git.Object, cat *git.Cat) (commit, tree string, tracked []treeChange, err error) {
	ow := s.Repo.ObjectWriter(len(now.Head))
	if ow == nil {
		return "", "", nil, errDecline
	}
	var edits []treeChange // every changed path's state in the working tree
	var hash []string      // regular files for git to hash (filters apply)
	var hashAt []int       // their index in edits
	add := func(c treeChange) {
		if c.mode != "" && c.mode != "120000" && c.oid == "" {
			hash = append(hash, c.path)
			hashAt = append(hashAt, len(edits))
		}
		edits = append(edits, c)
	}
	for _, c := range now.Changes {
		if c.Unmerged || c.Submodule || c.WorktreeMode == "" || strings.ContainsAny(c.Path, "\n\r") {
			return "", "", nil, errDecline
		}
		switch c.WorktreeMode {
		case "000000":
			add(treeChange{path: c.Path})
		case "100644", "100755":
			// git calls a FIFO (or socket, device) in a tracked file's
			// place a modified file, and hashing it would wait on the
			// FIFO for good. It holds no content to save: the snapshot
			// records the file as gone, and the rollback puts it back.
			if fi, err := os.Lstat(filepath.Join(s.Repo.Root, filepath.FromSlash(c.Path))); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
				add(treeChange{path: c.Path})
				continue
			}
			add(treeChange{path: c.Path, mode: c.WorktreeMode})
		case "120000":
			oid, err := s.symlinkBlob(ow, c.Path)
			if err != nil {
				return "", "", nil, err
			}
			add(treeChange{path: c.Path, mode: c.WorktreeMode, oid: oid})
		default:
			return "", "", nil, errDecline
		}
	}
	for _, p := range now.Untracked {
		if strings.HasSuffix(p, "/") || strings.ContainsAny(p, "\n\r") {
			return "", "", nil, errDecline // a nested repository, or a name stdin cannot carry
		}
		fi, err := os.Lstat(filepath.Join(s.Repo.Root, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // gone since status read it, as update-index would find it
		case err != nil:
			return "", "", nil, err
		case fi.Mode()&fs.ModeSymlink != 0:
			oid, err := s.symlinkBlob(ow, p)
			if err != nil {
				return "", "", nil, err
			}
			add(treeChange{path: p, mode: "120000", oid: oid})
		case fi.Mode().IsRegular():
			mode := "100644"
			if fi.Mode()&0o111 != 0 {
				mode = "100755"
			}
			add(treeChange{path: p, mode: mode})
		default:
			return "", "", nil, errDecline
		}
	}
	if len(hash) > 0 {
		ids, err := s.hashFiles(ctx, ow, hash)
		if err != nil {
			return "", "", nil, err
		}
		for i, id := range ids {
			edits[hashAt[i]].oid = id
		}
	}
	tree, err = s.editTree(ctx, ow, now.Head+"^{tree}", edits, pre, cat)
	if err != nil {
		return "", "", nil, err
	}
	commit, err = ow.Commit(tree, []string{now.Head}, "wiggum <wiggum@localhost>", "wiggum <wiggum@localhost>", time.Now(), message+"\n")
	if err != nil {
		return "", "", nil, err
	}
	return commit, tree, edits, nil
}

// inProcessHashLimit bounds the files hashFiles reads into memory itself;
// beyond it git streams them.
const inProcessHashLimit = 8 << 20

// hashFiles stores each file (relative paths) as a blob and returns their
// ids, as `git hash-object -w` would. Where git stores the files verbatim
// (no attributes or conversions apply; see git.Repo.Verbatim) and they are
// small, this process hashes them; otherwise one hash-object does.
func (s *State) hashFiles(ctx context.Context, ow *git.ObjectWriter, paths []string) ([]string, error) {
	if ids, ok := s.hashVerbatim(ow, paths); ok {
		return ids, nil
	}
	// A file over core.bigFileThreshold (512 MiB) is streamed into a
	// pack at pack.compression, zlib's default level unless set; git
	// stores every loose object at level 1 (core.looseCompression), and
	// a snapshot's big file is no different: at 1 GB that is a quarter
	// of the hashing's CPU.
	out, err := s.Repo.RunEnv(ctx, nil, []byte(strings.Join(paths, "\n")+"\n"), "-c", "pack.compression=1", "hash-object", "-w", "--stdin-paths")
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(out)
	if len(ids) != len(paths) {
		return nil, fmt.Errorf("git hash-object: %d ids for %d files", len(ids), len(paths))
	}
	return ids, nil
}

// hashVerbatim is hashFiles in this process; ok is false when git must do
// it (a conversion could apply, a file is large or not a regular file).
func (s *State) hashVerbatim(ow *git.ObjectWriter, paths []string) (ids []string, ok bool) {
	if !s.Repo.Verbatim(paths) {
		return nil, false
	}
	var total int64
	for _, p := range paths {
		fi, err := os.Lstat(filepath.Join(s.Repo.Root, filepath.FromSlash(p)))
		if err != nil || !fi.Mode().IsRegular() {
			return nil, false // git reports what is wrong
		}
		if total += fi.Size(); total > inProcessHashLimit {
			return nil, false
		}
	}
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(s.Repo.Root, filepath.FromSlash(p)))
		if err != nil || int64(len(data)) > inProcessHashLimit {
			return nil, false
		}
		id, err := ow.Write("blob", data)
		if err != nil {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// symlinkBlob stores a symbolic link's target as git does: a blob of the
// target's bytes.
func (s *State) symlinkBlob(ow *git.ObjectWriter, rel string) (string, error) {
	target, err := os.Readlink(filepath.Join(s.Repo.Root, filepath.FromSlash(rel)))
	if err != nil {
		return "", err
	}
	return ow.Write("blob", []byte(target))
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	mode string // octal, as trees store it: "40000" for a tree
	id   []byte // raw object id
}

// treeNode is one directory of the tree being edited.
type treeNode struct {
	entries map[string]treeEntry
	subdirs map[string]*treeNode // directories holding an edit
}

// editTree writes the tree that is base with edits applied (mode ""
// removes the path) and returns its id. Only base's trees along the edited
// paths are read, with one cat-file; only the trees that change are
// written. Directories left empty disappear, as git never records them.
func (s *State) editTree(ctx context.Context, ow *git.ObjectWriter, base string, edits []treeChange, pre map[string]git.Object, cat *git.Cat) (string, error) {
	root := &treeNode{}
	nodes := map[string]*treeNode{"": root}
	dirs := []string{""}
	var node func(dir string) *treeNode
	node = func(dir string) *treeNode {
		if n, ok := nodes[dir]; ok {
			return n
		}
		n := &treeNode{}
		nodes[dir] = n
		dirs = append(dirs, dir)
		parent := node(parentDir(dir))
		if parent.subdirs == nil {
			parent.subdirs = map[string]*treeNode{}
		}
		parent.subdirs[path.Base(dir)] = n
		return n
	}
	for _, e := range edits {
		node(parentDir(e.path))
	}
	// Read what base has at each of those directories (pre may hold
	// them already: a rollback reads them with its other objects).
	objs := make([]git.Object, len(dirs))
	var fetch []string
	var fetchAt []int
	for i, d := range dirs {
		name := treeName(base, d)
		if o, ok := pre[name]; ok {
			objs[i] = o
		} else {
			fetch, fetchAt = append(fetch, name), append(fetchAt, i)
		}
	}
	if len(fetch) > 0 {
		read := s.Repo.Batch
		if cat != nil {
			read = func(_ context.Context, names ...string) ([]git.Object, error) { return cat.Read(names...) }
		}
		got, err := read(ctx, fetch...)
		if err != nil {
			return "", err
		}
		for k, o := range got {
			objs[fetchAt[k]] = o
		}
	}
	for i, d := range dirs {
		o := objs[i]
		nodes[d].entries = map[string]treeEntry{}
		switch {
		case o.ID == "" && d == "":
			return "", fmt.Errorf("git cat-file: %s: no such tree", base)
		case o.ID == "" || o.Type != "tree":
			continue // a new directory, or a file where a directory is now
		}
		if err := parseTree(o.Data, len(o.ID)/2, nodes[d].entries); err != nil {
			return "", fmt.Errorf("tree %s: %w", o.ID, err)
		}
	}
	for _, e := range edits {
		n := nodes[parentDir(e.path)]
		name := path.Base(e.path)
		if e.mode == "" {
			delete(n.entries, name)
			continue
		}
		id, err := hex.DecodeString(e.oid)
		if err != nil {
			return "", fmt.Errorf("bad object id %q", e.oid)
		}
		n.entries[name] = treeEntry{mode: strings.TrimLeft(e.mode, "0"), id: id}
	}
	id, err := writeNode(ow, root, pre)
	if err != nil {
		return "", err
	}
	if id == nil {
		return ow.Write("tree", nil)
	}
	return hex.EncodeToString(id), nil
}

// treeName names base's tree at dir for cat-file.
func treeName(base, dir string) string {
	if dir == "" {
		return base
	}
	return base + ":" + dir
}

// treeNames names base's trees along every path's directories: what
// editTree reads for edits of those paths.
func treeNames(base string, paths []string) []string {
	seen := map[string]bool{"": true}
	names := []string{base}
	for _, p := range paths {
		if strings.ContainsAny(p, "\n\r") {
			continue // quickSnapshot declines it; cat-file cannot carry it
		}
		for d := parentDir(p); !seen[d]; d = parentDir(d) {
			seen[d] = true
			names = append(names, treeName(base, d))
		}
	}
	return names
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// parseTree reads a tree object's entries ("mode name\0<raw id>").
func parseTree(b []byte, idLen int, into map[string]treeEntry) error {
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp < 0 || nul < sp || nul+1+idLen > len(b) {
			return errors.New("malformed tree")
		}
		name := string(b[sp+1 : nul])
		if !git.TreePath(name) || strings.ContainsRune(name, '/') {
			// git never writes such a tree; one made by hand (an agent's
			// hash-object --literally) must not send a rollback writing or
			// removing outside the tree, or inside .git.
			return fmt.Errorf("it holds an entry named %q, which git never writes and a checkout refuses: the commit was made by hand (an agent's hash-object --literally?); nothing is written or removed by that name", name)
		}
		into[name] = treeEntry{mode: string(b[:sp]), id: b[nul+1 : nul+1+idLen]}
		b = b[nul+1+idLen:]
	}
	return nil
}

// writeNode writes n's subdirectories, then n, and returns n's raw id (nil
// when n is empty). Each tree written is added to written (by id) unless
// it is nil.
func writeNode(ow *git.ObjectWriter, n *treeNode, written map[string]git.Object) ([]byte, error) {
	for name, sub := range n.subdirs {
		id, err := writeNode(ow, sub, written)
		if err != nil {
			return nil, err
		}
		switch {
		case id != nil:
			n.entries[name] = treeEntry{mode: "40000", id: id}
		case n.entries[name].mode == "40000":
			delete(n.entries, name) // emptied
		}
	}
	if len(n.entries) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(n.entries))
	for name := range n.entries {
		names = append(names, name)
	}
	// git's order: names compare as if a tree's name ended in "/".
	key := func(name string) string {
		if n.entries[name].mode == "40000" {
			return name + "/"
		}
		return name
	}
	sort.Slice(names, func(i, j int) bool { return key(names[i]) < key(names[j]) })
	var b bytes.Buffer
	for _, name := range names {
		e := n.entries[name]
		b.WriteString(e.mode)
		b.WriteByte(' ')
		b.WriteString(name)
		b.WriteByte(0)
		b.Write(e.id)
	}
	id, err := ow.Write("tree", b.Bytes())
	if err != nil {
		return nil, err
	}
	if written != nil {
		written[id] = git.Object{ID: id, Type: "tree", Data: b.Bytes()}
	}
	return hex.DecodeString(id)
}

// writeIndex writes a version 2 index holding exactly entries (blobs and
// symlinks of a SHA-1 repository), with no stat data, so git treats every
// one as changed: what `update-index --index-info` would write into an
// empty index, without starting it. It reports false when it cannot (a
// SHA-256 id, a mode it does not write) and git must.
func writeIndex(path string, entries []treeChange) (bool, error) {
	sorted := slices.Clone(entries)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].path < sorted[j].path })
	var b bytes.Buffer
	b.WriteString("DIRC")
	binary.Write(&b, binary.BigEndian, [2]uint32{2, uint32(len(sorted))})
	for _, e := range sorted {
		mode, err := strconv.ParseUint(e.mode, 8, 32)
		id, herr := hex.DecodeString(e.oid)
		if err != nil || herr != nil || len(id) != sha1.Size || (mode != 0o100644 && mode != 0o100755 && mode != 0o120000) {
			return false, nil
		}
		start := b.Len()
		var stat [10]uint32 // ctime, mtime (s, ns), dev, ino: unknown
		stat[6] = uint32(mode)
		binary.Write(&b, binary.BigEndian, stat)
		b.Write(id)
		binary.Write(&b, binary.BigEndian, uint16(min(len(e.path), 0xfff)))
		b.WriteString(e.path)
		// NUL-terminated, padded to a multiple of 8 bytes.
		b.Write(make([]byte, 8-(b.Len()-start)%8))
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return true, os.WriteFile(path, b.Bytes(), 0o644)
}
