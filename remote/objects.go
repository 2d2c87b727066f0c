package remote

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// objects writes the few small objects a claim or a landing needs (a
// claim commit, the ticked plan, its trees, the landing commit) as loose
// objects from this process: they sit in the window between reading the
// target's tip and pushing on it, where every git process started is time
// another machine can land in. Only for SHA-1 repositories without a
// shared-permissions setting; otherwise git writes them.
type objects struct {
	w *git.ObjectWriter // nil when git must write
	// author and committer are "Name <email>" for landing commits; ""
	// when git does not know them (git then writes the commit, and fails
	// the same way).
	author, committer string
}

// openObjects decides how objects are written in repo.
func (r *Remote) openObjects(ctx context.Context) objects {
	format, err := r.Repo.Line(ctx, "rev-parse", "--show-object-format")
	if err != nil || format != "sha1" {
		return objects{}
	}
	if shared, _ := r.Repo.Line(ctx, "config", "--get", "core.sharedRepository"); shared != "" {
		return objects{}
	}
	o := objects{w: r.Repo.ObjectWriter(40)}
	if o.w == nil {
		return objects{}
	}
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
func (o objects) write(typ string, data []byte) (string, error) { return o.w.Write(typ, data) }

// commit writes a commit object.
func (o objects) commit(tree string, parents []string, author, committer string, when time.Time, msg []byte) (string, error) {
	return o.w.Commit(tree, parents, author, committer, when, string(msg))
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
	return o.w.Write("tree", b.Bytes())
}
