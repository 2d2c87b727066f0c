package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
	// CheckedOut: the attempt had removed it (git rm); its checkout is
	// made again from its repository under .git/modules, which git rm
	// keeps.
	CheckedOut bool `json:"checked_out,omitempty"`
	// Removed: the attempt had added it (git submodule add); the
	// checkpoint has no submodule there. Its checkout was moved to Aside
	// (dry: would be), its repository is kept in Repository.
	Removed    bool   `json:"removed,omitempty"`
	Aside      string `json:"aside,omitempty"`
	Repository string `json:"repository,omitempty"`
}

func (r SubmoduleReturn) String() string {
	switch {
	case r.Left != "":
		return fmt.Sprintf("submodule %s left as it is: %s", r.Path, r.Left)
	case r.Removed && r.Aside == "":
		return fmt.Sprintf("submodule %s, added since the checkpoint, would be removed: its checkout set aside", r.Path)
	case r.Removed:
		return fmt.Sprintf("submodule %s, added since the checkpoint, removed: its checkout moved to %s (git -C %s log), its repository kept in %s", r.Path, r.Aside, r.Aside, r.Repository)
	case r.CheckedOut:
		return fmt.Sprintf("submodule %s, removed since the checkpoint, checked out again at %s", r.Path, short(r.Commit))
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
//
// A submodule the attempt removed (git rm), whose gitlink the rollback
// put back, is checked out again from its repository under .git/modules;
// one it added (git submodule add), which the checkpoint does not have,
// has its checkout moved under NestedAside, its repository left under
// .git/modules. Each is said; one that cannot be is left, and said so.
func (s *State) returnSubmodules(ctx context.Context, cp *Checkpoint, subs []string, changes []treeChange, reason string, dry bool) ([]SubmoduleReturn, error) {
	type want struct {
		commit, left string
		remove       bool
	}
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
		case c.mode == "" && s.checkedOut(c.path):
			// A gitlink the checkpoint does not have: the tree's own
			// files are never a checkout of a repository of their own.
			add(c.path, want{remove: true})
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
		if w.remove {
			out = append(out, s.removeSubmodule(ctx, r, dry))
			continue
		}
		if !s.checkedOut(p) {
			if r.Left == "" && r.Commit != "" {
				if r, ok := s.checkOutSubmodule(ctx, cp, r, dry); ok {
					out = append(out, r)
				}
			}
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

// checkedOut reports whether the path (from the root) holds a checkout of
// a repository of its own: a .git, file or directory.
func (s *State) checkedOut(p string) bool {
	_, err := os.Lstat(filepath.Join(s.Repo.Root, filepath.FromSlash(p), ".git"))
	return err == nil
}

// submoduleName is the name the checkpoint's .gitmodules gives the
// submodule at p; "" when it names none.
func (s *State) submoduleName(ctx context.Context, cp *Checkpoint, p string) string {
	at := cp.Head
	if cp.Snapshot != "" {
		at = cp.Snapshot
	}
	out, err := s.Repo.Run(ctx, "config", "--blob", at+":.gitmodules", "-z", "--get-regexp", `^submodule\..*\.path$`)
	if err != nil {
		return ""
	}
	for _, kv := range strings.Split(out, "\x00") {
		k, v, _ := strings.Cut(kv, "\n")
		if v == p {
			return strings.TrimSuffix(strings.TrimPrefix(k, "submodule."), ".path")
		}
	}
	return ""
}

// checkOutSubmodule checks out again, at r.Commit, a submodule whose
// checkout the attempt removed with its gitlink (git rm keeps its
// repository under .git/modules and its configuration). A submodule never
// initialized here (no url in the configuration) had no checkout at the
// checkpoint either: ok is false, nothing to say.
func (s *State) checkOutSubmodule(ctx context.Context, cp *Checkpoint, r SubmoduleReturn, dry bool) (_ SubmoduleReturn, ok bool) {
	name := s.submoduleName(ctx, cp, r.Path)
	if name == "" {
		return r, false
	}
	if _, err := s.Repo.Line(ctx, "config", "--get", "submodule."+name+".url"); err != nil {
		return r, false
	}
	modules := filepath.Join(s.Repo.CommonDir, "modules", filepath.FromSlash(name))
	if _, err := os.Stat(modules); err != nil {
		r.Left = fmt.Sprintf("it is not checked out, and its repository is not in %s to check it out from (git submodule update --init -- %s clones it)", modules, r.Path)
		return r, true
	}
	if dry {
		return r, true
	}
	// --checkout: not a merge or rebase a configured update mode asks for.
	if _, err := s.Repo.Run(ctx, "submodule", "--quiet", "update", "--checkout", "--no-fetch", "--", r.Path); err != nil {
		r.Left = fmt.Sprintf("it is not checked out, and git submodule update --no-fetch -- %s failed: %v", r.Path, err)
		return r, true
	}
	r.CheckedOut = true
	return r, true
}

// removeSubmodule takes out of the tree the checkout of a submodule the
// attempt added, whose gitlink the rollback removed: the directory, files
// and .git file, moves whole under NestedAside, so nothing in it is lost;
// its repository stays under .git/modules, where git submodule add put it.
func (s *State) removeSubmodule(ctx context.Context, r SubmoduleReturn, dry bool) SubmoduleReturn {
	r.Removed = true
	dir := filepath.Join(s.Repo.Root, filepath.FromSlash(r.Path))
	if gd, err := git.Open(ctx, dir); err == nil && gd.Root == dir {
		r.Repository = gd.CommonDir
	}
	if dry {
		return r
	}
	aside := filepath.Join(s.Repo.CommonDir, NestedAside, time.Now().UTC().Format("20060102T150405.000000000Z")+"-"+strings.ReplaceAll(r.Path, "/", "%")+".checkout")
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		return SubmoduleReturn{Path: r.Path, Left: "added since the checkpoint, but its checkout could not be set aside: " + err.Error()}
	}
	if err := os.Rename(dir, aside); err != nil {
		return SubmoduleReturn{Path: r.Path, Left: "added since the checkpoint, but its checkout could not be set aside: " + err.Error()}
	}
	r.Aside = aside
	if r.Repository != "" {
		// The checkout and its repository name each other (its .git
		// file, the repository's core.worktree): both follow it, so
		// git works in it where it is now.
		if fi, err := os.Lstat(filepath.Join(aside, ".git")); err == nil && fi.Mode().IsRegular() {
			os.WriteFile(filepath.Join(aside, ".git"), []byte("gitdir: "+r.Repository+"\n"), 0o644)
			s.Repo.Run(ctx, "config", "--file", filepath.Join(r.Repository, "config"), "core.worktree", aside)
		}
	}
	// The directories its checkout leaves empty go, as a removed file's do.
	for d := filepath.Dir(dir); d != s.Repo.Root && strings.HasPrefix(d, s.Repo.Root); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	return r
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
	nested := st.ChangedSubmodules()
	if st.Head != r.Commit {
		// Moved, its own submodules whose recorded commit the move
		// changes return too: clean at the commit it was at, status
		// did not name them.
		moved, err := sub.Run(ctx, "diff-tree", "-r", "-z", "--no-renames", st.Head, r.Commit)
		if err != nil {
			return out, fmt.Errorf("rollback: submodule %s: list the submodules its return moves: %w", p, err)
		}
		for _, np := range movedGitlinks(moved) {
			if !slices.Contains(nested, np) {
				nested = append(nested, np)
			}
		}
	}
	for _, np := range nested {
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

// movedGitlinks lists the paths of diff-tree -r -z's raw output whose
// entry is a gitlink on either side.
func movedGitlinks(raw string) []string {
	var out []string
	fields := strings.Split(raw, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) >= 2 && (meta[0] == "160000" || meta[1] == "160000") {
			out = append(out, fields[i+1])
		}
	}
	return out
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
