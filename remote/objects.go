package remote

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// objects writes the few small objects a claim or a landing needs (a
// claim commit, the ticked plan, its trees, the landing commit) as loose
// objects from this process: they sit in the window between reading the
// target's tip and pushing on it, where every git process started is time
// another machine can land in. Only for SHA-1 repositories without a
// shared-permissions setting; otherwise git writes them.
type objects struct {
	dir string // the objects directory; "" when git must write
	// author and committer are "Name <email>" for landing commits; ""
	// when git does not know them (git then writes the commit, and fails
	// the same way).
	author, committer string
}

// openObjects decides how objects are written in repo.
func (r *Remote) openObjects(ctx context.Context) objects {
	out, err := r.Repo.Run(ctx, "rev-parse", "--show-object-format", "--git-path", "objects")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 || lines[0] != "sha1" {
		return objects{}
	}
	if shared, _ := r.Repo.Line(ctx, "config", "--get", "core.sharedRepository"); shared != "" {
		return objects{}
	}
	dir := lines[1]
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(r.Repo.Root, dir)
	}
	o := objects{dir: dir}
	o.author, o.committer = r.ident(ctx, "GIT_AUTHOR_IDENT"), r.ident(ctx, "GIT_COMMITTER_IDENT")
	return o
}

// ident is git's "Name <email>" for who (without the time git var adds).
func (r *Remote) ident(ctx context.Context, who string) string {
	id, err := r.Repo.Line(ctx, "var", who)
	if err != nil {
		return ""
	}
	if i := strings.LastIndexByte(id, '>'); i > 0 {
		return id[:i+1]
	}
	return ""
}

// write stores an object and returns its id.
func (o objects) write(typ string, data []byte) (string, error) {
	head := typ + " " + strconv.Itoa(len(data)) + "\x00"
	h := sha1.New()
	h.Write([]byte(head))
	h.Write(data)
	id := hex.EncodeToString(h.Sum(nil))
	path := filepath.Join(o.dir, id[:2], id[2:])
	if _, err := os.Stat(path); err == nil {
		return id, nil
	}
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write([]byte(head))
	zw.Write(data)
	if err := zw.Close(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("remote: write object: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "tmp_obj_")
	if err != nil {
		return "", fmt.Errorf("remote: write object: %w", err)
	}
	_, werr := tmp.Write(buf.Bytes())
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("remote: write object: %w", err)
	}
	_ = os.Chmod(tmp.Name(), 0o444)
	// As git does: a link never replaces an object that is already there.
	err = os.Link(tmp.Name(), path)
	_ = os.Remove(tmp.Name())
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("remote: write object: %w", err)
	}
	return id, nil
}

// commit writes a commit object.
func (o objects) commit(tree string, parents []string, author, committer string, when time.Time, msg []byte) (string, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	stamp := fmt.Sprintf(" %d %s", when.Unix(), when.Format("-0700"))
	fmt.Fprintf(&b, "author %s%s\ncommitter %s%s\n\n", author, stamp, committer, stamp)
	b.Write(msg)
	return o.write("commit", b.Bytes())
}

// tree writes a tree from ls-tree -z entries ("mode type id\tname"), in
// the order given (ls-tree's, which is git's).
func (o objects) tree(entries []string) (string, error) {
	var b bytes.Buffer
	for _, e := range entries {
		meta, name, ok := strings.Cut(e, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return "", fmt.Errorf("remote: bad tree entry %q", e)
		}
		raw, err := hex.DecodeString(f[2])
		if err != nil || len(raw) != sha1.Size {
			return "", fmt.Errorf("remote: bad tree entry %q", e)
		}
		b.WriteString(strings.TrimLeft(f[0], "0"))
		b.WriteByte(' ')
		b.WriteString(name)
		b.WriteByte(0)
		b.Write(raw)
	}
	return o.write("tree", b.Bytes())
}
