package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MergeResult is the merge of two commits, as MergeTree makes it.
type MergeResult struct {
	Tree      string   // the merged tree; "" when Conflicts is set
	Conflicts []string // the paths git could not merge
	// Appended are the paths both sides only added lines to the end of
	// (a progress log each story appends its entry to): merged keeping
	// both, the first commit's lines, then the second's.
	Appended []string
}

// maxAppendMerge bounds the size of a file MergeTree merges by appending
// (each of the three versions is read into memory).
const maxAppendMerge = 16 << 20

// MergeTree merges commits ours and theirs with git merge-tree
// --write-tree, which touches no working tree, index or ref.
//
// Where git finds conflicts only in files that both sides changed by
// adding lines at the end - the base version, ending in a newline, is the
// start of both - the merge keeps both additions, ours first: an
// append-only log that every story adds to (snarktank's progress.txt)
// otherwise conflicted in every parallel landing but the first. git's own
// union driver does not do it: it takes the lines both entries end with
// ("---") out of the conflict and keeps them once, after both entries'
// first lines. A file the repository's gitattributes give a merge driver
// (or -merge) keeps git's conflict.
func (r *Repo) MergeTree(ctx context.Context, ours, theirs string) (*MergeResult, error) {
	res, conflicted, err := r.mergeTree(ctx, ours, theirs)
	if err != nil || len(res.Conflicts) == 0 {
		return res, err
	}
	want, err := r.appendOnly(ctx, ours, theirs, res.Conflicts)
	if err != nil || want == nil {
		return res, err
	}
	attrs, err := r.Run(ctx, append([]string{"check-attr", "-z", "merge", "--"}, res.Conflicts...)...)
	if err != nil {
		return nil, fmt.Errorf("git check-attr: %w", err)
	}
	f := strings.Split(attrs, "\x00")
	for i := 2; i < len(f); i += 3 {
		if f[i] != "unspecified" {
			return res, nil
		}
	}
	tree, err := r.replaceFiles(ctx, conflicted, res.Conflicts, want)
	if err != nil {
		return nil, err
	}
	return &MergeResult{Tree: tree, Appended: res.Conflicts}, nil
}

// replaceFiles returns tree with the files at paths (there already)
// holding data instead, built in an index of its own.
func (r *Repo) replaceFiles(ctx context.Context, tree string, paths []string, data [][]byte) (string, error) {
	dir, err := os.MkdirTemp("", "wiggum-merge-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, "index")}
	if _, err := r.RunEnv(ctx, env, nil, "read-tree", tree); err != nil {
		return "", fmt.Errorf("merge: %w", err)
	}
	// ls-tree lists in the tree's order, whatever the order asked in.
	listed, err := r.RunEnv(ctx, []string{"GIT_LITERAL_PATHSPECS=1"}, nil,
		append([]string{"ls-tree", "-z", "--format=%(objectmode) %(path)", tree, "--"}, paths...)...)
	if err != nil {
		return "", fmt.Errorf("merge: %w", err)
	}
	mode := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(listed, "\x00"), "\x00") {
		if m, p, ok := strings.Cut(l, " "); ok {
			mode[p] = m
		}
	}
	var info strings.Builder
	for i, p := range paths {
		if mode[p] == "" {
			return "", fmt.Errorf("merge: %s is not in the merged tree", p)
		}
		blob, err := r.RunEnv(ctx, nil, data[i], "hash-object", "-w", "--stdin")
		if err != nil {
			return "", fmt.Errorf("merge: %w", err)
		}
		fmt.Fprintf(&info, "%s %s\t%s\x00", mode[p], strings.TrimSpace(blob), p)
	}
	if _, err := r.RunEnv(ctx, env, []byte(info.String()), "update-index", "-z", "--index-info"); err != nil {
		return "", fmt.Errorf("merge: %w", err)
	}
	out, err := r.RunEnv(ctx, env, nil, "write-tree")
	if err != nil {
		return "", fmt.Errorf("merge: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// mergeTree is git merge-tree's answer; on a conflict, also the tree it
// wrote (conflicted files with git's markers).
func (r *Repo) mergeTree(ctx context.Context, ours, theirs string) (*MergeResult, string, error) {
	out, err := r.Run(ctx, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs)
	fields := strings.Split(out, "\x00")
	if err == nil {
		return &MergeResult{Tree: strings.TrimSpace(fields[0])}, "", nil
	}
	var ge *Error
	if !errors.As(err, &ge) || ge.Status() != 1 {
		return nil, "", fmt.Errorf("git merge-tree: %w", err)
	}
	seen := map[string]bool{}
	res := &MergeResult{Conflicts: []string{}}
	for _, p := range fields[1:] {
		if p != "" && !seen[p] {
			seen[p] = true
			res.Conflicts = append(res.Conflicts, p)
		}
	}
	return res, strings.TrimSpace(fields[0]), nil
}

// appendOnly returns, for each path, the base version followed by what
// ours and then theirs added to its end, when every path is a text file
// both sides only appended to; nil otherwise. A .gitignore both sides
// made (two agents in a new project) counts as appended to an empty one:
// its lines are a set of rules, and both sets are kept.
func (r *Repo) appendOnly(ctx context.Context, ours, theirs string, paths []string) ([][]byte, error) {
	bases, err := r.Run(ctx, "merge-base", "--all", ours, theirs)
	if err != nil {
		return nil, nil // no common commit: git's conflict stands
	}
	base := strings.Fields(bases)
	if len(base) != 1 {
		return nil, nil // a criss-cross merge: no one base to append to
	}
	var names []string
	for _, p := range paths {
		names = append(names, base[0]+":"+p, ours+":"+p, theirs+":"+p)
	}
	// Types and sizes first: a large file is never read whole.
	check, err := r.RunEnv(ctx, nil, []byte(strings.Join(names, "\n")+"\n"), "cat-file", "--batch-check=%(objecttype) %(objectsize)")
	if err != nil {
		return nil, fmt.Errorf("git merge-tree: look at the conflicted files: %w", err)
	}
	var total int64
	for i, line := range strings.Split(strings.TrimSuffix(check, "\n"), "\n") {
		var typ string
		var size int64
		if n, _ := fmt.Sscanf(line, "%s %d", &typ, &size); n != 2 || typ != "blob" {
			if i%3 == 0 && newIgnoreFile(paths[i/3]) && strings.HasSuffix(line, " missing") {
				continue
			}
			return nil, nil // missing on a side (a delete), or no file
		}
		if total += size; total > maxAppendMerge {
			return nil, nil
		}
	}
	objs, err := r.Batch(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("git merge-tree: read the conflicted files: %w", err)
	}
	want := make([][]byte, len(paths))
	for i, p := range paths {
		b, o, t := objs[3*i], objs[3*i+1], objs[3*i+2]
		if b.Size < 0 && newIgnoreFile(p) {
			b = Object{Type: "blob"} // made on both sides: each added its lines to nothing
		}
		if b.Type != "blob" || o.Type != "blob" || t.Type != "blob" ||
			(len(b.Data) > 0 && b.Data[len(b.Data)-1] != '\n') ||
			!bytes.HasPrefix(o.Data, b.Data) || !bytes.HasPrefix(t.Data, b.Data) ||
			bytes.IndexByte(o.Data, 0) >= 0 || bytes.IndexByte(t.Data, 0) >= 0 {
			return nil, nil
		}
		want[i] = append(append(append([]byte{}, b.Data...), o.Data[len(b.Data):]...), t.Data[len(b.Data):]...)
	}
	return want, nil
}

// newIgnoreFile reports whether a file of this path that both sides
// created may be merged by keeping both: a .gitignore.
func newIgnoreFile(p string) bool {
	return p == ".gitignore" || strings.HasSuffix(p, "/.gitignore")
}
