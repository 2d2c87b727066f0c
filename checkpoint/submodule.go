package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// SubmoduleReturn says what a rollback did (or, dry, would do) with one
// submodule checked out in the working tree. A rollback of the main tree
// records a submodule only as the commit it is at, and git's own reset
// leaves a submodule's files alone; so each submodule that changed since
// the checkpoint is saved in its own repository and returned there
// separately.
type SubmoduleReturn struct {
	Path string `json:"path"`
	// Commit is the commit the submodule returns to: the one the
	// checkpoint records for it.
	Commit string `json:"commit,omitempty"`
	// Backup is where its state before the rollback is saved: a backup
	// ref in the submodule's own repository (wiggum -C PATH recover).
	Backup string `json:"backup,omitempty"`
	// Left says why it was left as it is.
	Left string `json:"left,omitempty"`
}

func (r SubmoduleReturn) String() string {
	switch {
	case r.Left != "":
		return fmt.Sprintf("submodule %s left as it is: %s", r.Path, r.Left)
	case r.Backup == "":
		return fmt.Sprintf("submodule %s would return to %s", r.Path, short(r.Commit))
	}
	return fmt.Sprintf("submodule %s returned to %s; its state is saved in %s of %s (wiggum -C %s recover)", r.Path, short(r.Commit), r.Backup, r.Path, r.Path)
}

// returnSubmodules returns the checked-out submodules that changed since
// the checkpoint to it, after the main tree's rollback: those the status
// saw changed (subs) and those whose recorded commit the rollback moved
// (changes, the main tree's paths it returned). A submodule returns to the
// commit the checkpoint records for it, its tracked files to that
// commit's and its untracked ones (not ignored) removed - all of it saved
// first in a backup ref of its own repository. A submodule that had
// changes at the checkpoint itself is left as it is: the checkpoint does
// not record them. A submodule is returned by moving its HEAD (detached,
// as git submodule update leaves it), never a branch of its own: no commit
// in it is discarded.
func (s *State) returnSubmodules(ctx context.Context, cp *Checkpoint, subs []string, changes []treeChange, reason string, dry bool) ([]SubmoduleReturn, error) {
	type want struct{ commit, left string }
	wants := map[string]want{}
	var order []string
	add := func(p string, w want) {
		if _, ok := wants[p]; !ok {
			order = append(order, p)
		}
		wants[p] = w
	}
	for _, c := range changes {
		switch {
		case c.mode == "160000":
			add(c.path, want{commit: c.oid})
		case slices.Contains(subs, c.path):
			add(c.path, want{left: "the checkpoint has no submodule there"})
		}
	}
	for _, p := range subs {
		if _, ok := wants[p]; !ok {
			add(p, want{}) // the same commit: its files return
		}
	}
	var out []SubmoduleReturn
	for _, p := range order {
		w := wants[p]
		r := SubmoduleReturn{Path: p, Commit: w.commit, Left: w.left}
		dir := filepath.Join(s.Repo.Root, filepath.FromSlash(p))
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
			continue // not checked out: none of its files are here
		}
		if r.Left == "" && slices.Contains(cp.Submodules, p) {
			r.Left = "it had changes at the checkpoint, which the checkpoint does not record"
		}
		if r.Left != "" {
			out = append(out, r)
			continue
		}
		rs, err := returnSubmodule(ctx, dir, r, reason, dry)
		out = append(out, rs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// returnSubmodule returns the submodule checked out at dir to r.Commit
// ("" for the commit it is at), saving its state first, and then the
// submodules checked out inside it to the commits it records for them.
// It lists what it did, the nested ones after it.
func returnSubmodule(ctx context.Context, dir string, r SubmoduleReturn, reason string, dry bool) ([]SubmoduleReturn, error) {
	p := r.Path
	sub, err := git.Open(ctx, dir)
	if err != nil || sub.Root != dir {
		return []SubmoduleReturn{{Path: p, Left: "git cannot read it as a repository of its own"}}, nil
	}
	st, err := sub.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("rollback: submodule %s: %w", p, err)
	}
	if r.Commit == "" {
		r.Commit = st.Head
	}
	var out []SubmoduleReturn
	// Changes inside its own submodules are theirs, returned below.
	if st.Head != r.Commit || st.DirtyBesidesSubmodules() {
		if !dry {
			ref, err := FromRepo(sub).Backup(ctx, reason+" (submodule "+p+" of the rolled-back tree)")
			if err != nil {
				return nil, fmt.Errorf("rollback: submodule %s: save it (left as it is): %w", p, err)
			}
			r.Backup = ref
			restore := []string{"reset", "--hard", "--quiet"}
			if st.Head != r.Commit {
				restore = []string{"checkout", "--quiet", "--force", "--detach", r.Commit}
			}
			if _, err := sub.Run(ctx, restore...); err != nil {
				return nil, fmt.Errorf("rollback: submodule %s: return it to %s (its state is saved in %s): %w", p, short(r.Commit), ref, err)
			}
			if _, err := sub.Run(ctx, "clean", "-f", "-d", "--quiet"); err != nil {
				return nil, fmt.Errorf("rollback: submodule %s: remove its new files (saved in %s): %w", p, ref, err)
			}
		}
		out = append(out, r)
	}
	for _, np := range st.ChangedSubmodules() {
		inner := filepath.Join(dir, filepath.FromSlash(np))
		if _, err := os.Lstat(filepath.Join(inner, ".git")); err != nil {
			continue
		}
		want, err := sub.Line(ctx, "rev-parse", "--verify", "--quiet", r.Commit+":"+np)
		if err != nil {
			out = append(out, SubmoduleReturn{Path: p + "/" + np, Left: "the checkpoint's commit of " + p + " has no submodule there"})
			continue
		}
		rs, err := returnSubmodule(ctx, inner, SubmoduleReturn{Path: p + "/" + np, Commit: want}, reason, dry)
		out = append(out, rs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// Notes says, for a person, a line each, what the rollback did with the
// repositories of their own in the tree: each submodule it returned or
// left, each new repository it left as it is.
func (res *RollbackResult) Notes() []string {
	var out []string
	for _, sub := range res.Submodules {
		out = append(out, sub.String())
	}
	for _, dir := range res.Repositories {
		out = append(out, RepositoryLeft(dir))
	}
	for _, r := range res.SetAside {
		out = append(out, r.String())
	}
	for _, d := range res.InTheWay {
		out = append(out, d.String())
	}
	if n := len(res.Unhidden); n > 0 {
		out = append(out, fmt.Sprintf("%d file(s) the attempt's .gitignore change had hidden (%s) removed; saved in %s",
			n, strings.Join(res.Unhidden[:min(n, 3)], ", "), res.UnhiddenBackup))
	}
	return out
}

// RepositoryLeft says, for a person, that a new directory holding a git
// repository of its own was left as it is by a rollback.
func RepositoryLeft(dir string) string {
	return fmt.Sprintf("%s left as it is: a git repository of its own (a backup of this tree cannot hold its history)", dir)
}
