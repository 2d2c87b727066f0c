package checkpoint

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// diffTrees lists what differs from tree a to tree b for each pair {a, b}:
// what `git diff-tree -r --no-renames --raw` reports, in its order, from
// the cat-file the rollback already runs. Subtrees with the same id on
// both sides are never read; the others are read a level at a time, one
// round trip for all pairs. Trees among known (objects already read or
// written, under any name) are not read again.
func diffTrees(cat *git.Cat, known map[string]git.Object, pairs ...[2]string) ([][]treeChange, error) {
	type job struct {
		pair   int
		prefix string // "" or "dir/"
		a, b   string // tree ids; "" for none
	}
	out := make([][]treeChange, len(pairs))
	var jobs []job
	for i, p := range pairs {
		if p[0] != p[1] {
			jobs = append(jobs, job{pair: i, a: p[0], b: p[1]})
		}
	}
	trees := map[string]map[string]treeEntry{}
	for _, o := range known {
		if _, ok := trees[o.ID]; ok || o.Type != "tree" {
			continue
		}
		entries := map[string]treeEntry{}
		if parseTree(o.Data, len(o.ID)/2, entries) == nil {
			trees[o.ID] = entries
		}
	}
	for len(jobs) > 0 {
		var want []string
		for _, j := range jobs {
			for _, id := range []string{j.a, j.b} {
				if _, ok := trees[id]; id != "" && !ok {
					trees[id] = nil
					want = append(want, id)
				}
			}
		}
		if len(want) > 0 {
			objs, err := cat.Read(want...)
			if err != nil {
				return nil, err
			}
			for i, o := range objs {
				if o.ID == "" || o.Type != "tree" {
					return nil, fmt.Errorf("git cat-file: %s is not a tree", want[i])
				}
				entries := map[string]treeEntry{}
				if err := parseTree(o.Data, len(o.ID)/2, entries); err != nil {
					return nil, fmt.Errorf("tree %s: %w", o.ID, err)
				}
				trees[want[i]] = entries
			}
		}
		var next []job
		for _, j := range jobs {
			ea, eb := trees[j.a], trees[j.b]
			for name, x := range ea {
				y, inB := eb[name]
				path := j.prefix + name
				xt, yt := isTree(x.mode), inB && isTree(y.mode)
				switch {
				case inB && x.mode == y.mode && string(x.id) == string(y.id):
				case xt && yt:
					next = append(next, job{j.pair, path + "/", hex.EncodeToString(x.id), hex.EncodeToString(y.id)})
				case xt:
					next = append(next, job{j.pair, path + "/", hex.EncodeToString(x.id), ""})
					if inB {
						out[j.pair] = append(out[j.pair], leaf(path, y))
					}
				case yt:
					out[j.pair] = append(out[j.pair], treeChange{path: path})
					next = append(next, job{j.pair, path + "/", "", hex.EncodeToString(y.id)})
				case inB:
					out[j.pair] = append(out[j.pair], leaf(path, y))
				default:
					out[j.pair] = append(out[j.pair], treeChange{path: path})
				}
			}
			for name, y := range eb {
				if _, inA := ea[name]; inA {
					continue
				}
				path := j.prefix + name
				if isTree(y.mode) {
					next = append(next, job{j.pair, path + "/", "", hex.EncodeToString(y.id)})
				} else {
					out[j.pair] = append(out[j.pair], leaf(path, y))
				}
			}
		}
		jobs = next
	}
	// A tree's entries sort as if a directory's name ended in "/", so
	// git's depth-first order is the byte order of the full paths.
	for _, l := range out {
		sort.Slice(l, func(i, j int) bool { return l[i].path < l[j].path })
	}
	return out, nil
}

// leaf is a non-tree entry as diff-tree reports it: with the canonical
// mode git reads trees with (any regular file is 100644 or 100755).
func leaf(path string, e treeEntry) treeChange {
	m, _ := strconv.ParseUint(e.mode, 8, 32)
	mode := "100644"
	switch {
	case m&0o170000 == 0o120000:
		mode = "120000"
	case m&0o170000 == 0o160000:
		mode = "160000"
	case m&0o100 != 0:
		mode = "100755"
	}
	return treeChange{path: path, mode: mode, oid: hex.EncodeToString(e.id)}
}

func isTree(mode string) bool {
	m, err := strconv.ParseUint(mode, 8, 32)
	return err == nil && m&0o170000 == 0o040000
}
