package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/git"
)

// SubmoduleBackup is the work of one submodule checked out in a removed
// worktree, saved before the removal.
type SubmoduleBackup struct {
	// Path is the submodule's path in the worktree (and in the main tree).
	Path string `json:"path"`
	// Ref is the backup ref of its state at the removal: its commit, with
	// its uncommitted and untracked files on top when it had any; "" when
	// it had changed nothing.
	Ref string `json:"ref,omitempty"`
	// Earlier are the backups it already held - rollbacks made in the
	// worktree save a submodule's state in its own repository - carried
	// over under the same names.
	Earlier []string `json:"earlier,omitempty"`
	// Repo is where Ref is: the main tree's checkout of the same
	// submodule (Path, relative to the main tree), or "" for the main
	// repository itself when the main tree has none.
	Repo string `json:"repo"`
}

// String says where the backup is, for a person.
func (b SubmoduleBackup) String() string {
	what := b.Ref
	switch {
	case b.Ref == "":
		what = fmt.Sprintf("%d backup(s) of its rollbacks", len(b.Earlier))
	case len(b.Earlier) > 0:
		what += fmt.Sprintf(" (and %d backup(s) of its rollbacks)", len(b.Earlier))
	}
	if b.Repo == "" {
		return fmt.Sprintf("work in %s (a repository of its own) is saved in %s of the main repository", b.Path, what)
	}
	return fmt.Sprintf("work in %s (a repository of its own) is saved in %s of the main tree's %s (wiggum -C %s recover)", b.Path, what, b.Repo, b.Repo)
}

// SubmoduleBackupPrefix is checkpoint.SubmoduleBackupPrefix.
const SubmoduleBackupPrefix = checkpoint.SubmoduleBackupPrefix

// saveSubmodules saves the work in the repositories of their own inside
// the worktree in describes - submodules checked out by
// checkOutSubmodules, the repository's post-checkout hook or the agent,
// and repositories the agent made (a git init, a project generator; git
// add records one as a bare commit id) - before the worktree is removed.
// git worktree remove deletes them with the worktree (a submodule's
// repository lives in the worktree's git dir, an agent's in the
// directory), and a backup of the worktree records each only as the
// commit it is at; so commits made in them and their uncommitted files
// would be lost. One that has changed nothing - clean, at a commit the
// main tree's checkout of it has (or, with none, one its own
// remote-tracking branches hold) - is left as it is. mainRoot is the main
// tree; nested submodules are saved the same way.
func saveSubmodules(ctx context.Context, main *git.Repo, in Info, mainRoot string) ([]SubmoduleBackup, error) {
	paths, err := checkedOutSubmodules(ctx, in.Path)
	if err != nil {
		return nil, err
	}
	more := in.repos
	if !in.reposKnown {
		recorded, err := recordedRepos(ctx, in.Path, in.base)
		if err != nil {
			return nil, err
		}
		more = append(more, recorded...)
	}
	for _, p := range more {
		if !slices.Contains(paths, p) && filepath.IsLocal(filepath.FromSlash(p)) {
			if _, err := os.Lstat(filepath.Join(in.Path, filepath.FromSlash(p), ".git")); err == nil {
				paths = append(paths, p)
			}
		}
	}
	return saveReposIn(ctx, main, in.Path, mainRoot, "", in.Story, paths)
}

func saveSubmodulesIn(ctx context.Context, main *git.Repo, dir, mainDir, prefix, story string) ([]SubmoduleBackup, error) {
	paths, err := checkedOutSubmodules(ctx, dir)
	if err != nil {
		return nil, err
	}
	return saveReposIn(ctx, main, dir, mainDir, prefix, story, paths)
}

// saveReposIn saves the repositories at paths inside dir, and the
// submodules inside each.
func saveReposIn(ctx context.Context, main *git.Repo, dir, mainDir, prefix, story string, paths []string) ([]SubmoduleBackup, error) {
	var saved []SubmoduleBackup
	for _, p := range paths {
		subDir := filepath.Join(dir, filepath.FromSlash(p))
		sub, err := git.Open(ctx, subDir)
		if err != nil || sub.Root != subDir {
			continue // git cannot read it as a repository of its own
		}
		nested, err := saveSubmodulesIn(ctx, main, subDir, filepath.Join(mainDir, filepath.FromSlash(p)), prefix+p+"/", story)
		saved = append(saved, nested...)
		if err != nil {
			return saved, err
		}
		b, err := saveSubmodule(ctx, main, sub, filepath.Join(mainDir, filepath.FromSlash(p)), prefix+p, story)
		if err != nil {
			return saved, fmt.Errorf("worktree: save submodule %s: %w", prefix+p, err)
		}
		if b != nil {
			saved = append(saved, *b)
		}
	}
	return saved, nil
}

// recordedRepos lists the repositories the worktree's commits recorded
// since base (gitlinks added or moved); with no base, or no HEAD to
// compare (its branch already deleted), every gitlink its index holds.
func recordedRepos(ctx context.Context, dir, base string) ([]string, error) {
	wt := &git.Repo{Root: dir}
	var paths []string
	out, err := "", errors.New("no base")
	if base != "" {
		out, err = wt.Run(ctx, "diff", "--raw", "-z", "--no-renames", "--no-abbrev", base, "HEAD", "--")
	}
	if err != nil {
		out, err := wt.Run(ctx, "ls-files", "--stage", "-z")
		if err != nil {
			return nil, fmt.Errorf("worktree: list %s: %w", dir, err)
		}
		for _, entry := range strings.Split(out, "\x00") {
			if meta, p, ok := strings.Cut(entry, "\t"); ok && strings.HasPrefix(meta, "160000 ") {
				paths = append(paths, p)
			}
		}
		return paths, nil
	}
	// -z --raw: ":oldmode newmode old new status\0path\0" per path.
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		f := strings.Fields(fields[i])
		if len(f) >= 2 && f[1] == "160000" {
			paths = append(paths, fields[i+1])
		}
	}
	return paths, nil
}

// repositories lists the repositories of their own a status of the
// worktree saw: new untracked directories git lists whole ("dir/"), and
// changed submodules.
func repositories(st *git.Status) []string {
	var out []string
	for _, u := range st.Untracked {
		if p, ok := strings.CutSuffix(u, "/"); ok {
			out = append(out, p)
		}
	}
	return append(out, st.ChangedSubmodules()...)
}

// saveSubmodule saves one checked-out submodule, sub, when it has work;
// mainCopy is where the main tree has the same submodule.
func saveSubmodule(ctx context.Context, main, sub *git.Repo, mainCopy, rel, story string) (*SubmoduleBackup, error) {
	st, err := sub.Status(ctx)
	if err != nil {
		return nil, err
	}
	if st.Head == "" && !st.Dirty() {
		return nil, nil // no commit and no file
	}
	var dest *git.Repo
	if _, err := os.Lstat(filepath.Join(mainCopy, ".git")); err == nil {
		if r, err := git.Open(ctx, mainCopy); err == nil && r.Root == mainCopy {
			dest = r
		}
	}
	// Backups a rollback in the worktree made in the submodule's own
	// repository go with it too.
	out, err := sub.Run(ctx, "for-each-ref", "--format=%(refname)", checkpoint.BackupPrefix)
	if err != nil {
		return nil, err
	}
	b := &SubmoduleBackup{Path: rel, Repo: filepath.ToSlash(rel), Earlier: strings.Fields(out)}
	// Changes inside its own submodules are theirs: saved above.
	changed := st.DirtyBesidesSubmodules()
	if !changed {
		if dest != nil {
			ok, _ := dest.OK(ctx, "cat-file", "-e", st.Head+"^{commit}")
			changed = !ok
		} else {
			out, err := sub.Run(ctx, "rev-list", "-n1", st.Head, "--not", "--remotes")
			changed = err != nil || strings.TrimSpace(out) != ""
		}
	}
	if !changed && len(b.Earlier) == 0 {
		return nil, nil
	}
	refs := slices.Clone(b.Earlier)
	if changed {
		reason := "submodule " + rel + " of a worktree removed (story " + story + ")"
		if st.Head == "" {
			b.Ref, err = saveUnborn(ctx, sub, reason)
		} else {
			b.Ref, err = checkpoint.FromRepo(sub).Backup(ctx, reason)
		}
		if err != nil {
			return nil, err
		}
		refs = append([]string{b.Ref}, refs...)
	}
	rename := func(ref string) string { return ref }
	if dest == nil {
		dest, b.Repo = main, ""
		rename = func(ref string) string {
			return SubmoduleBackupPrefix + strings.TrimPrefix(ref, checkpoint.BackupPrefix)
		}
		for i := range b.Earlier {
			b.Earlier[i] = rename(b.Earlier[i])
		}
		if b.Ref != "" {
			b.Ref = rename(b.Ref)
		}
	}
	// No + in the refspecs: an existing ref of that name (time and
	// commit) is never overwritten.
	args := []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", sub.Root}
	for _, ref := range refs {
		args = append(args, ref+":"+rename(ref))
	}
	if _, err := dest.Run(ctx, args...); err != nil {
		return nil, err
	}
	return b, nil
}

// SubmodulePaths lists the paths .gitmodules in dir gives its submodules,
// leaving out any that would reach outside dir (a hostile .gitmodules);
// none when it has none.
func SubmodulePaths(ctx context.Context, dir string) ([]string, error) {
	mods, err := submodules(ctx, dir)
	paths := make([]string, len(mods))
	for i, m := range mods {
		paths[i] = m.path
	}
	return paths, err
}

// submodule is one entry of a .gitmodules: its name and path.
type submodule struct{ name, path string }

// submodules reads the submodules .gitmodules in dir names.
func submodules(ctx context.Context, dir string) ([]submodule, error) {
	out, err := (&git.Repo{Root: dir}).Run(ctx, "config", "--file", ".gitmodules", "-z", "--get-regexp", `^submodule\..*\.path$`)
	var ge *git.Error
	if errors.As(err, &ge) && ge.Status() == 1 {
		return nil, nil // none
	}
	if err != nil {
		return nil, fmt.Errorf("worktree: read %s: %w", filepath.Join(dir, ".gitmodules"), err)
	}
	var mods []submodule
	for _, entry := range strings.Split(out, "\x00") {
		key, p, ok := strings.Cut(entry, "\n")
		if !ok || p == "" || !filepath.IsLocal(filepath.FromSlash(p)) || path.Clean(p) != p {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(key, "submodule."), ".path")
		mods = append(mods, submodule{name: name, path: p})
	}
	return mods, nil
}

// checkOutSubmodules checks out, in a new worktree at dir, the submodules
// the main tree (mainDir) has checked out - so that an agent in a worktree
// sees the repository as one in the main tree does - at the commits the
// worktree records for them. Each is cloned from the main tree's checkout
// of it (local: hard links, no network, no credentials), then its origin
// is pointed where the main tree's points. Nested submodules the same way.
// One that cannot be checked out at its recorded commit (the main tree's
// checkout lacks the commit) is left empty, as git worktree add leaves
// every submodule: half checked out, it would look changed, and a commit
// of the worktree would record its wrong commit. It returns what it could
// not check out, and why, for the caller to say; a worktree without a
// .gitmodules costs one stat.
func checkOutSubmodules(ctx context.Context, dir, mainDir string) []string {
	if _, err := os.Lstat(filepath.Join(dir, ".gitmodules")); err != nil {
		return nil
	}
	mods, err := submodules(ctx, dir)
	if err != nil {
		return []string{err.Error()}
	}
	args := []string{"-c", "protocol.file.allow=always"}
	var paths []string
	for _, m := range mods {
		from := filepath.Join(mainDir, filepath.FromSlash(m.path))
		if _, err := os.Lstat(filepath.Join(from, ".git")); err != nil {
			continue // the main tree has not checked it out either
		}
		args = append(args, "-c", "submodule."+m.name+".url="+from)
		paths = append(paths, m.path)
	}
	if len(paths) == 0 {
		return nil
	}
	wt := &git.Repo{Root: dir}
	recorded := map[string]string{}
	out, err := wt.Run(ctx, append([]string{"ls-files", "--stage", "-z", "--"}, paths...)...)
	if err != nil {
		return []string{"submodules not checked out: " + firstLine(err.Error())}
	}
	for _, entry := range strings.Split(out, "\x00") {
		meta, p, ok := strings.Cut(entry, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 && f[0] == "160000" {
			recorded[p] = f[1]
		}
	}
	args = append(args, "submodule", "update", "--init", "--quiet", "--no-fetch", "--")
	base := args[:len(args):len(args)]
	if _, err := wt.Run(ctx, append(base, paths...)...); err != nil {
		// One that failed stops git before the rest: go on one by one.
		for _, p := range paths {
			_, _ = wt.Run(ctx, append(base, p)...)
		}
	}
	var problems []string
	for _, p := range paths {
		sub := filepath.Join(dir, filepath.FromSlash(p))
		from := filepath.Join(mainDir, filepath.FromSlash(p))
		head, err := (&git.Repo{Root: sub}).Line(ctx, "rev-parse", "--verify", "--quiet", "HEAD")
		if err != nil || head != recorded[p] {
			emptyDir(sub)
			problems = append(problems, fmt.Sprintf("submodule %s is not checked out: the main tree's checkout of it lacks commit %.12s, which this worktree records (git submodule update in the main tree fetches it)", p, recorded[p]))
			continue
		}
		if url, err := (&git.Repo{Root: from}).Line(ctx, "remote", "get-url", "origin"); err == nil && url != "" {
			_, _ = (&git.Repo{Root: sub}).Run(ctx, "remote", "set-url", "origin", url)
		}
		problems = append(problems, checkOutSubmodules(ctx, sub, from)...)
	}
	return problems
}

// emptyDir removes what is in dir, leaving it empty: a submodule not
// checked out.
func emptyDir(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// checkedOutSubmodules lists the submodules checked out in the worktree at
// dir (their paths, slash-separated); nil, at the cost of one stat, when
// it has no .gitmodules.
func checkedOutSubmodules(ctx context.Context, dir string) ([]string, error) {
	if _, err := os.Lstat(filepath.Join(dir, ".gitmodules")); err != nil {
		return nil, nil
	}
	paths, err := SubmodulePaths(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p), ".git")); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// saveUnborn saves the files of a repository with no commit yet (a git
// init with files in it) as a commit of their own - every file git add -A
// would take, through an index of its own - under a new backup ref.
func saveUnborn(ctx context.Context, repo *git.Repo, reason string) (string, error) {
	return saveFiles(ctx, repo, repo.Root, "", reason, "unborn", "wiggum: save a repository with no commit")
}

// FollowSubmodules moves the main tree's checkouts of the submodules whose
// recorded commit a landing changed - target moved from old to new, and
// read-tree moved the tree's files and index, never a submodule's
// checkout - to the commit new records, as git submodule update would:
// detached, none of the submodule's branches moved. Left behind, a
// checkout shows as a change git status asks to commit, and committing it
// records the old commit again, undoing the landed work. Only a checkout
// still at the old commit and with no changed file of its own moves, and
// only to a commit it has (the landed story's commits are saved in it
// when its worktree is removed, so call this after the removal); each
// one left is said, with what to do. Submodules inside a moved one follow
// the same way. It returns a line for each submodule it moved or left.
func FollowSubmodules(ctx context.Context, tree *git.Repo, target, old, new string) []string {
	return followSubmodules(ctx, tree, checkpoint.BranchName(target), "", old, new)
}

// followSubmodules is FollowSubmodules in tree, whose changed gitlinks
// (from old to new) by records; prefix is tree's path from the main tree
// ("" for the main tree itself, else ending in a slash).
func followSubmodules(ctx context.Context, tree *git.Repo, by, prefix, old, new string) []string {
	if old == new || old == "" {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(tree.Root, ".gitmodules")); err != nil {
		return nil // no submodule to follow: no process
	}
	out, err := tree.Run(ctx, "diff-tree", "-r", "-z", "--no-renames", old, new)
	if err != nil {
		return []string{fmt.Sprintf("the submodules %s records could not be compared with its checkouts (%s): git submodule update brings them up to date", by, firstLine(err.Error()))}
	}
	var notes []string
	// -z raw: ":oldmode newmode old new status\0path\0" per path.
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		f := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(f) < 4 || f[0] != "160000" || f[1] != "160000" {
			continue // added or removed, not moved: no checkout to follow
		}
		notes = append(notes, followSubmodule(ctx, tree, by, prefix, fields[i+1], f[2], f[3])...)
	}
	return notes
}

// followSubmodule moves the checkout of the submodule at rel in tree from
// old to new, when it is clean at old and has new.
func followSubmodule(ctx context.Context, tree *git.Repo, by, prefix, rel, old, new string) []string {
	dir := filepath.Join(tree.Root, filepath.FromSlash(rel))
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
		return nil // not checked out here: nothing to move
	}
	name := prefix + rel
	update := "git submodule update -- " + rel
	if prefix != "" {
		update = "git -C " + strings.TrimSuffix(prefix, "/") + " submodule update -- " + rel
	}
	behind := fmt.Sprintf("%s is behind the commit %s now records for it (%s)", name, by, short(new))
	sub, err := git.Open(ctx, dir)
	if err != nil || sub.Root != dir {
		return []string{behind + ": git cannot read it as a repository of its own; " + update + " checks it out"}
	}
	st, err := sub.Status(ctx)
	switch {
	case err != nil:
		return []string{fmt.Sprintf("%s: git status there failed (%s), so it was left as it is; %s checks it out", behind, firstLine(err.Error()), update)}
	case st.Head == new:
		return nil
	case st.Head != old:
		return []string{fmt.Sprintf("%s is checked out at %s, not at the commit %s recorded for it before (%s): left as it is; %s checks out the one it records now (%s)", name, short(st.Head), by, short(old), update, short(new))}
	case len(st.Changes) > 0:
		return []string{fmt.Sprintf("%s: its checkout has changes of its own, left as they are; commit or stash them there, then run %s", behind, update)}
	}
	if ok, _ := sub.OK(ctx, "cat-file", "-e", new+"^{commit}"); !ok {
		return []string{fmt.Sprintf("%s, which its checkout does not have: run %s", behind, update)}
	}
	if _, err := sub.Run(ctx, "checkout", "--quiet", "--detach", new); err != nil {
		return []string{fmt.Sprintf("%s: git checkout there failed (%s); run %s", behind, firstLine(err.Error()), update)}
	}
	notes := []string{fmt.Sprintf("%s checked out at %s, the commit %s now records for it (detached, as git submodule update leaves it)", name, short(new), by)}
	return append(notes, followSubmodules(ctx, sub, name, name+"/", old, new)...)
}

// short is a commit id as messages give it.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
