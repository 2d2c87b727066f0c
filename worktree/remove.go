package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/internal/killpoint"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Removal says what removing one worktree did.
type Removal struct {
	Info
	Action string `json:"action"` // removed, live, gone, would remove, not wiggum's (left as it is)
	Backup string `json:"backup,omitempty"`
	// BranchKept: the branch holds work its target does not have, so it
	// stays; the worktree goes.
	BranchKept bool `json:"branch_kept,omitempty"`
	// Submodules: work in submodules checked out in the worktree, saved
	// before it was removed (their repositories go with it).
	Submodules []SubmoduleBackup `json:"submodules,omitempty"`
}

// Release removes the worker's worktree while still holding its lease,
// then lets the lease go. Uncommitted work is saved under
// refs/wiggum/backup/ first; the branch is deleted only when its target
// contains it. The caller holds the repository mutex, so that no pruner
// sees the worktree half removed.
func (w *Worker) Release(ctx context.Context, main *git.Repo) (*Removal, error) {
	ctx = context.WithoutCancel(ctx)
	defer w.Lease.Release()
	in := Info{Name: w.Name, Story: w.Story, Branch: w.Branch, Target: w.Target, Path: w.Path, Held: true, Registered: true, base: w.Base}
	switch {
	case w.landed != "":
		in.Merged, in.tip = true, w.landed
	case in.Branch != "" && in.Target != "":
		in.Merged, _ = main.OK(ctx, "merge-base", "--is-ancestor", in.Branch, in.Target)
	}
	if w.settled != nil {
		<-w.settled
	}
	if w.dirty != nil {
		in.Dirty, in.repos, in.reposKnown = *w.dirty, w.repos, w.reposKnown
	} else {
		st, err := (&git.Repo{Root: in.Path}).Status(ctx)
		in.Dirty = err != nil || st.DirtyBesidesSubmodules()
		if err == nil {
			in.repos = repositories(st)
		}
	}
	return removeLeased(ctx, main, in)
}

// Settle starts reading, for Release, whether the worktree has uncommitted
// changes. Call it once nothing writes to the worktree any more - its
// agent is done and the lease is held: nothing can change the answer
// afterwards. The status - the costliest read of a removal - runs beside
// whatever comes next (the story's merge, its worker's next worktree);
// Release waits for it.
func (w *Worker) Settle(ctx context.Context) {
	done := make(chan struct{})
	w.settled = done
	go func() {
		defer close(done)
		ctx := context.WithoutCancel(ctx)
		// The repositories its commits recorded are read beside the
		// status, off the removal's path too.
		var recorded []string
		var rerr error
		var wg sync.WaitGroup
		wg.Go(func() { recorded, rerr = recordedRepos(ctx, w.Path, w.Base) })
		st, err := (&git.Repo{Root: w.Path}).Status(ctx)
		wg.Wait()
		dirty := err != nil || st.DirtyBesidesSubmodules()
		if err == nil && rerr == nil {
			w.repos = append(repositories(st), recorded...)
			w.reposKnown = true
		}
		w.dirty = &dirty
	}()
}

// Landed tells Release that the branch, at tip, is now contained in its
// target (a merge just made it so), sparing it the question to git.
func (w *Worker) Landed(tip string) { w.landed = tip }

// Prune removes every worktree under Dir whose lease is free, taking the
// lease and the repository mutex for each removal, so a worker that is
// alive - in this process or any other - keeps its worktree. Dirty work is
// saved first and unmerged branches are kept.
func Prune(ctx context.Context, main *git.Repo, dryRun bool) ([]Removal, error) {
	if dryRun {
		infos, err := List(ctx, main)
		if err != nil {
			return nil, err
		}
		var out []Removal
		for _, in := range infos {
			r := Removal{Info: in, Action: "would remove", BranchKept: in.Branch != "" && !in.Merged}
			switch {
			case in.Foreign:
				r.Action, r.BranchKept = "not wiggum's", false
			case in.Held:
				r.Action = "live"
			}
			out = append(out, r)
		}
		return out, nil
	}
	// Each one is described under the mutex and its lease, where no
	// creation or removal is half way.
	paths, err := dirs(main)
	if err != nil {
		return nil, err
	}
	var out []Removal
	for _, path := range paths {
		r, err := pruneOne(ctx, main, path)
		if err != nil {
			return out, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// pruneMutexWait bounds prune's wait for the repository mutex: a
// maintenance command gives up, naming the holder, where a run waits on
// (saying whom for): a holder stopped with ^Z holds it for good, and
// prune hung with it.
const pruneMutexWait = 10 * time.Second

func pruneOne(ctx context.Context, main *git.Repo, path string) (*Removal, error) {
	mctx, cancel := context.WithTimeout(ctx, pruneMutexWait)
	mu, err := LockRepo(mctx, main)
	cancel()
	if err != nil {
		return nil, err
	}
	defer mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	reg, err := registered(ctx, main)
	if err != nil {
		return nil, err
	}
	if foreign(reg, path) {
		return &Removal{Info: describe(ctx, main, reg, path), Action: "not wiggum's"}, nil
	}
	lf, err := layout.At(path).TakeLease()
	switch {
	case errors.Is(err, layout.ErrTreeGone):
		return &Removal{Info: Info{Name: filepath.Base(path), Path: path}, Action: "gone"}, nil
	case errors.Is(err, layout.ErrLeaseHeld):
		return &Removal{Info: describe(ctx, main, reg, path), Action: "live"}, nil
	case err != nil:
		return nil, err
	}
	defer lf.Close()
	// Its lease was free: the one describe sees held is prune's own.
	in := describe(ctx, main, reg, path)
	in.Held, in.PID = false, 0
	return removeLeased(ctx, main, in)
}

// removeLeased removes a worktree whose lease the caller holds.
func removeLeased(ctx context.Context, main *git.Repo, in Info) (*Removal, error) {
	r := &Removal{Info: in, Action: "removed"}
	if !in.Registered {
		// git does not know it (its creation crashed part way): nothing in
		// it belongs to any branch, and it lives in wiggum's own directory.
		if err := os.RemoveAll(in.Path); err != nil {
			return nil, fmt.Errorf("worktree: remove %s: %w", in.Path, err)
		}
		return r, nil
	}
	if !lostGit(in.Path) && !in.halfMade {
		saved, err := saveSubmodules(ctx, main, in, main.Root)
		r.Submodules = saved
		if err != nil {
			return nil, fmt.Errorf("worktree: %s left as it is: %w", in.Name, err)
		}
		// Worktrees the agent made inside it (a subagent's, Claude Code's
		// .claude/worktrees/) are saved with the rest above; removed by
		// git first, they leave no "prunable" entry behind, whose branch
		// git would then refuse to check out anywhere else.
		for _, nested := range worktreesIn(main.CommonDir, in.Path) {
			_, _ = main.Run(ctx, "worktree", "remove", "--force", "--force", nested)
		}
	}
	if in.Dirty && (lostGit(in.Path) || in.halfMade) {
		// git cannot read it as a worktree (any more): its files are
		// saved through the main repository instead.
		ref, err := saveLost(ctx, main, in.Path, in.Branch, "worktree "+in.Name+" removed after it lost its .git (story "+in.Story+")")
		if err != nil {
			return nil, fmt.Errorf("worktree: save %s before removing it: %w", in.Name, err)
		}
		r.Backup = ref
		in.Dirty = false
		killpoint.At("remove-saved")
	}
	if in.Dirty {
		wrepo, err := git.Open(ctx, in.Path)
		if err != nil {
			return nil, fmt.Errorf("worktree: open %s: %w", in.Name, err)
		}
		if wrepo.Root != in.Path {
			return nil, fmt.Errorf("worktree: %s resolved to %s, not to itself; left alone", in.Path, wrepo.Root)
		}
		ref, err := checkpoint.FromRepo(wrepo).Backup(ctx, "worktree "+in.Name+" removed with uncommitted changes (story "+in.Story+")")
		if err != nil {
			return nil, fmt.Errorf("worktree: save %s before removing it: %w", in.Name, err)
		}
		r.Backup = ref
		killpoint.At("remove-saved")
	}
	// The worktree's checkpoint ref lives in the shared refs and would
	// outlive it; it matters only while the worktree does, and the lease is
	// held, so it goes first (missing is fine) - in one transaction with
	// the branch when the branch is merged at the tip the caller knows: a
	// kill after it leaves a worktree whose branch is gone, which says
	// "nothing unsaved" (its files are saved above), and the removal
	// costs one git process less.
	checkpointRef := ""
	if gitDir, commonDir := git.Dirs(in.Path); gitDir != "" && gitDir != commonDir {
		checkpointRef = checkpoint.RecordRef(gitDir, commonDir)
	}
	branchGone := false
	if in.Branch != "" && in.Merged && in.tip != "" && checkpointRef != "" {
		tx := "delete " + checkpointRef + "\ndelete " + in.Branch + " " + in.tip + "\n"
		if _, err := main.RunEnv(ctx, nil, []byte(tx), "update-ref", "--stdin"); err == nil {
			branchGone, checkpointRef = true, ""
		}
	}
	if checkpointRef != "" {
		_, _ = main.Run(ctx, "update-ref", "-d", checkpointRef)
	}
	// Twice --force: the worktree is git-locked (so plain git commands leave
	// it alone) and may hold changes just saved above.
	if _, err := main.Run(ctx, "worktree", "remove", "--force", "--force", in.Path); err != nil {
		var ge *git.Error
		if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "validation failed") {
			return nil, fmt.Errorf("worktree: remove %s: %w", in.Name, err)
		}
		// A creation killed inside git worktree add: git registered the
		// worktree but never wrote its .git file, so it will not remove
		// it. Nothing in it is anyone's work yet: remove the directory,
		// then let git forget the entry.
		if err := os.RemoveAll(in.Path); err != nil {
			return nil, fmt.Errorf("worktree: remove %s: %w", in.Path, err)
		}
		_, _ = main.Run(ctx, "worktree", "unlock", in.Path)
		if _, err := main.Run(ctx, "worktree", "prune"); err != nil {
			return nil, fmt.Errorf("worktree: forget %s: %w", in.Name, err)
		}
	}
	killpoint.At("remove-unregistered")
	// git leaves directories that held only ignored files (wiggum's own
	// state); missing is fine.
	if err := os.RemoveAll(in.Path); err != nil {
		return nil, fmt.Errorf("worktree: remove %s: %w", in.Path, err)
	}
	if in.Branch == "" || branchGone {
		return r, nil
	}
	if !in.Merged {
		r.BranchKept = true
		return r, nil
	}
	tip := in.tip
	if tip == "" {
		var err error
		if tip, err = main.Line(ctx, "rev-parse", "--verify", "--quiet", in.Branch); err != nil {
			return r, nil
		}
	}
	// The old value makes the delete refuse a branch that moved meanwhile.
	if _, err := main.Run(ctx, "update-ref", "-d", in.Branch, tip); err != nil {
		r.BranchKept = true
	}
	return r, nil
}

// worktreesIn lists the worktrees of the repository whose common dir is
// commonDir that lie inside dir, from git's own records (each
// worktrees/<id>/gitdir file names the worktree's .git file), without
// starting git.
func worktreesIn(commonDir, dir string) []string {
	entries, err := os.ReadDir(filepath.Join(commonDir, "worktrees"))
	if err != nil {
		return nil
	}
	var in []string
	for _, e := range entries {
		data, err := statefile.ReadFile(filepath.Join(commonDir, "worktrees", e.Name(), "gitdir"))
		if err != nil {
			continue
		}
		wt := filepath.Dir(strings.TrimSpace(string(data)))
		if strings.HasPrefix(wt, dir+string(filepath.Separator)) {
			in = append(in, wt)
		}
	}
	return in
}

// lostGit reports whether the worktree at path has lost its .git file
// (its agent removed it, say): git no longer reads it as a worktree.
func lostGit(path string) bool {
	_, err := os.Lstat(filepath.Join(path, ".git"))
	return errors.Is(err, fs.ErrNotExist)
}

// saveLost saves the files of a worktree that lost its .git into a new
// backup ref, through the main repository: an index of its own, started
// from the tip of branch when it has one, takes every file under path as
// git add -A would (the ignore rules apply, and wiggum's exclude lines keep
// the worktree's own runtime state out), and its tree is committed on top
// of that tip. Nothing of the main tree, its index or its refs but the new
// backup ref changes.
func saveLost(ctx context.Context, main *git.Repo, path, branch, message string) (string, error) {
	return saveFiles(ctx, main, path, branch, message, "lost", "wiggum: save a worktree that lost its .git")
}

// saveFiles is saveLost's save, into repo, of the files under path; why
// names the backup ref, reflog is its reflog message.
func saveFiles(ctx context.Context, repo *git.Repo, path, branch, message, why, reflog string) (string, error) {
	index := filepath.Join(repo.CommonDir, fmt.Sprintf("wiggum-%s-index-%d-%d", why, os.Getpid(), time.Now().UnixNano()))
	defer os.Remove(index)
	defer os.Remove(index + ".lock")
	env := []string{"GIT_DIR=" + repo.CommonDir, "GIT_WORK_TREE=" + path, "GIT_INDEX_FILE=" + index}
	tip := ""
	if branch != "" {
		tip, _ = repo.Line(ctx, "rev-parse", "--verify", "--quiet", branch+"^{commit}")
	}
	if tip != "" {
		if _, err := repo.RunEnv(ctx, env, nil, "read-tree", tip); err != nil {
			return "", err
		}
	}
	if _, err := repo.RunEnv(ctx, env, nil, "add", "-A"); err != nil {
		return "", err
	}
	tree, err := repo.RunEnv(ctx, env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", strings.TrimSpace(tree), "-m", "wiggum backup: " + message}
	if tip != "" {
		args = append(args, "-p", tip)
	}
	commit, err := repo.RunEnv(ctx, env, nil, args...)
	if err != nil {
		return "", err
	}
	return saveRef(ctx, repo, strings.TrimSpace(commit), why, reflog)
}

// holdsFiles reports whether the directory at path holds anything but
// wiggum's own runtime directory (.ralph, where a lease is taken) and the
// names in besides.
func holdsFiles(path string, besides ...string) bool {
	ents, err := os.ReadDir(path)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.Name() != layout.StateDir && !slices.Contains(besides, e.Name()) {
			return true
		}
	}
	return false
}

// SetAside removes the worktree of an attempt whose rollback the
// checkpoint's rules refused - its agent rewrote the commits it started
// from, checked out another branch, committed with git's hooks off, or
// left a rebase half done. Those rules keep a rollback off other people's
// commits; here the worktree and its branch are the run's own, made for
// this story and leased by its worker the whole time, so the worker does
// not stop the run: everything is saved first - the tree as it is (HEAD
// and its uncommitted files) and, when HEAD left the branch, the branch's
// own commits - then the branch is deleted and the worktree removed, and
// the story can start again in a new one. The lease is let go. It returns
// the backup refs, the tree's first.
func (w *Worker) SetAside(ctx context.Context, main *git.Repo, why string) ([]string, error) {
	ctx = context.WithoutCancel(ctx)
	mu, err := LockRepo(ctx, main)
	if err != nil {
		return nil, err
	}
	defer mu.Unlock()
	msg := "worktree " + w.Name + " set aside (story " + w.Story + "): " + why
	ref, err := w.State.Backup(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("worktree: save %s before setting it aside: %w", w.Name, err)
	}
	saved := []string{ref}
	tip, _ := main.Line(ctx, "rev-parse", "--verify", "--quiet", w.Branch+"^{commit}")
	if more, err := w.saveLeftBehind(ctx, main, ref, tip); err != nil {
		return saved, fmt.Errorf("worktree: save %s before setting it aside: %w", w.Name, err)
	} else if more != "" {
		saved = append(saved, more)
	}
	if tip != "" {
		// Saved above; the old value makes the delete refuse a branch
		// that moved meanwhile.
		if _, err := main.Run(ctx, "update-ref", "-d", w.Branch, tip); err != nil {
			return saved, fmt.Errorf("worktree: delete %s (saved in %s): %w", checkpoint.BranchName(w.Branch), ref, err)
		}
	}
	defer w.Lease.Release()
	in := Info{Name: w.Name, Story: w.Story, Target: w.Target, Path: w.Path, Held: true, Registered: true, base: w.Base}
	if _, err := removeLeased(ctx, main, in); err != nil {
		return saved, err
	}
	return saved, nil
}

// saveLeftBehind saves, for SetAside, the commits the worktree held that
// its backup (ref) does not: its branch's tip when HEAD left the branch,
// and whatever its agent committed and then reset away - the worktree's
// HEAD reflog and the branch's, which go with them, are all that still
// reach those. One backup holds them all (a commit with each as a
// parent); "" when there were none.
func (w *Worker) saveLeftBehind(ctx context.Context, main *git.Repo, ref, tip string) (string, error) {
	wrepo := w.State.Repo
	var cands []string
	if tip != "" {
		cands = append(cands, tip)
	}
	for _, logged := range []string{"HEAD", w.Branch} {
		out, _ := wrepo.Run(ctx, "log", "-g", "--format=%H", logged, "--")
		cands = append(cands, strings.Fields(out)...)
	}
	slices.Sort(cands)
	cands = slices.Compact(slices.DeleteFunc(cands, func(c string) bool { return c == w.Base || c == w.Prev }))
	if len(cands) == 0 {
		return "", nil
	}
	// The ones with commits of their own, beyond the backup and the target.
	args := append([]string{"rev-list"}, cands...)
	args = append(args, "--not", ref)
	if w.Target != "" {
		args = append(args, w.Target)
	}
	out, err := main.Run(ctx, append(args, "--")...)
	if err != nil {
		return "", err
	}
	unsaved := map[string]bool{}
	for _, c := range strings.Fields(out) {
		unsaved[c] = true
	}
	var tips []string
	for _, c := range cands {
		if unsaved[c] {
			tips = append(tips, c)
		}
	}
	if len(tips) == 0 {
		return "", nil
	}
	if out, err := main.Run(ctx, append([]string{"merge-base", "--independent"}, tips...)...); err == nil {
		tips = strings.Fields(out)
	}
	tree, err := main.Line(ctx, "rev-parse", ref+"^{tree}")
	if err != nil {
		return "", err
	}
	args = []string{"commit-tree", tree, "-m", "wiggum backup: commits of worktree " + w.Name + " (story " + w.Story + ") that neither its HEAD nor its target holds"}
	for _, t := range tips {
		args = append(args, "-p", t)
	}
	commit, err := main.Line(ctx, args...)
	if err != nil {
		return "", err
	}
	return saveRef(ctx, main, commit, "aside", "wiggum: save the commits of a worktree set aside")
}
