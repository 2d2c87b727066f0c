package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Reclaimed is one worktree a killed run left behind, and what became of it.
type Reclaimed struct {
	Story  string `json:"story"`
	Branch string `json:"branch"`
	// Merged: the branch had commits of its own and its target already
	// contains them - the killed run merged it and died before it finished
	// landing the story (ticking it, removing the worktree).
	Merged bool `json:"merged"`
	// Progressed: the branch had commits beyond the commit it started from.
	Progressed bool   `json:"progressed"`
	Backup     string `json:"backup,omitempty"` // where its work was saved
	// Also: a further backup, of commits only the worktree's own branch
	// or its reflogs held (its agent had another branch checked out, or
	// reset its work away, when the kill came).
	Also string `json:"also,omitempty"`
	Live bool   `json:"live"` // its lease is held: left alone
	// Foreign describes a directory there that is not a worktree of
	// wiggum's (Info.Foreign): left alone.
	Foreign *Info `json:"foreign,omitempty"`
	// Submodules: work in submodules checked out in the worktree,
	// saved before it was removed.
	Submodules []SubmoduleBackup `json:"submodules,omitempty"`
	// Worker is the worktree kept, leased again by this process, because
	// ReclaimOptions.Finished said its story is finished there: the
	// caller lands its branch and releases it.
	Worker *Worker `json:"-"`
	// NotLanded says why Finished did not keep it, when it had something
	// to say (the story had finished, and its worktree changed since).
	NotLanded string `json:"not_landed,omitempty"`
}

// ReclaimOptions say what Reclaim does besides saving and removing.
type ReclaimOptions struct {
	// Landed is called, under the repository mutex and the worktree's
	// lease, for a worktree whose branch the killed run had merged, before
	// the worktree goes: the caller ticks the story there, so that a kill
	// at any point leaves either the worktree (and the call to come) or
	// the tick - never a merged story that looks unfinished and is done,
	// and merged, again. An error from it keeps the worktree.
	Landed func(Reclaimed) error
	// Finished is asked about each worktree whose branch its target does
	// not contain: did the killed run finish its story there, and is the
	// worktree exactly as that story's end left it? Yes keeps the
	// worktree - neither saved nor removed - leased again by this process
	// in Reclaimed.Worker. No, with a reason, puts the reason in
	// Reclaimed.NotLanded; the worktree is saved and removed as any other.
	Finished func(Leftover) (keep bool, why string)
	// Command is recorded as the holder of a kept worktree's lease.
	Command []string
	// Skip holds the paths of worktrees an earlier call kept, which this
	// process leases: they are not looked at.
	Skip map[string]bool
}

// Leftover is a worktree a killed run left, for ReclaimOptions.Finished
// to judge: what Reclaim knows already, and Tree to read the rest.
type Leftover struct {
	Story  string
	Path   string
	Branch string // the worktree's branch (full ref)
	Target string // the branch it merges into, as the worktree recorded it
	Tip    string // the branch's tip
	// mainHooks: the main tree's hooks directory (withMainHooks).
	mainHooks string
}

// LeftTree is the state of a Leftover's working tree.
type LeftTree struct {
	// Head and HeadBranch are its HEAD: the commit, and the branch it has
	// checked out ("" when detached).
	Head, HeadBranch string
	Dirty            []string  // every changed, staged or untracked path, repository-relative
	Busy             string    // a git operation in progress there (merge, rebase...), or ""
	Repo             *git.Repo // the worktree, for a judge that finishes what the killed run was doing there
}

// Tree reads the worktree's HEAD and status (one git status): a judge
// asks for it only once the cheaper facts say the worktree may be kept.
func (lo Leftover) Tree(ctx context.Context) (*LeftTree, error) {
	wrepo, err := git.Open(ctx, lo.Path)
	if err != nil {
		return nil, fmt.Errorf("worktree: open %s: %w", lo.Path, err)
	}
	withMainHooks(wrepo, lo.mainHooks)
	if wrepo.Root != lo.Path {
		return nil, fmt.Errorf("worktree: %s resolved to %s, not to itself", lo.Path, wrepo.Root)
	}
	st, err := wrepo.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("worktree: read the status of %s: %w", lo.Path, err)
	}
	return &LeftTree{Head: st.Head, HeadBranch: st.Branch, Dirty: st.Paths(), Busy: wrepo.InProgress(), Repo: wrepo}, nil
}

// Reclaim removes every worktree under Dir whose lease is free - the
// leftovers of a run that was killed - after saving whatever is in it: a
// branch its target does not contain, and any uncommitted file, go into
// one backup under refs/wiggum/backup/. Then the branch is deleted too, so
// nothing the killed run made is left behind but the backup. It also
// forgets worktrees git still lists whose directory is gone, and deletes
// wiggum/ branches without a worktree that their target already contains
// (a removal killed before its last step). A branch kept on purpose - one
// that could not merge - has no worktree and is not contained, so it stays.
// A worktree opts.Finished keeps is neither saved nor removed: it is
// handed back leased, for the caller to land.
// The caller holds the agent lock of main; each removal takes the
// repository mutex and the worktree's lease, and opts.Landed and
// opts.Finished are called under both.
func Reclaim(ctx context.Context, main *git.Repo, target string, opts ReclaimOptions) ([]Reclaimed, error) {
	ctx = context.WithoutCancel(ctx)
	paths, err := dirs(main)
	if err != nil {
		return nil, err
	}
	var out []Reclaimed
	for _, path := range paths {
		if opts.Skip[path] {
			continue
		}
		rc, err := reclaimOne(ctx, main, path, target, opts)
		if err != nil {
			return out, err
		}
		if rc != nil {
			out = append(out, *rc)
		}
	}
	if err := forgetMissing(ctx, main); err != nil {
		return out, err
	}
	return out, deleteMergedBranches(ctx, main, target)
}

func reclaimOne(ctx context.Context, main *git.Repo, path, target string, opts ReclaimOptions) (*Reclaimed, error) {
	mu, err := LockRepo(ctx, main)
	if err != nil {
		return nil, err
	}
	defer mu.Unlock()
	// Under the mutex no worktree of wiggum's is half made: one that is
	// not wiggum's is told before its lease would write into it.
	reg, err := registered(ctx, main)
	if err != nil {
		return nil, err
	}
	if foreign(reg, path) {
		in := describe(ctx, main, reg, path)
		return &Reclaimed{Foreign: &in}, nil
	}
	lf, err := layout.At(path).TakeLease()
	switch {
	case errors.Is(err, layout.ErrTreeGone):
		return nil, nil
	case errors.Is(err, layout.ErrLeaseHeld):
		return &Reclaimed{Story: filepath.Base(path), Live: true}, nil
	case err != nil:
		return nil, err
	}
	defer func() {
		if lf != nil {
			lf.Close()
		}
	}()
	in := describe(ctx, main, reg, path)
	var m Meta
	_ = statefile.ReadJSON(filepath.Join(path, filepath.FromSlash(MetaFile)), &m, nil)
	stray := ""
	if in.Registered && m.Branch != "" && in.Branch != m.Branch && !in.halfMade {
		// The kill came while its agent had another branch (or a
		// detached HEAD) checked out here. What is saved and deleted
		// below is the worktree's own branch; the backup holds HEAD
		// too (Dirty), and the branch checked out is deleted only when
		// its agent made it (strayBranch). Taken for the worktree's,
		// that branch - a person's, which an agent checked out - was
		// deleted, and the worktree's own one stayed behind for good.
		stray, in.Branch, in.Dirty = in.Branch, m.Branch, true
		in.Merged, _ = main.OK(ctx, "merge-base", "--is-ancestor", in.Branch, in.Target)
	}
	rc := &Reclaimed{Story: in.Story, Branch: in.Branch}
	if in.Registered && in.Branch != "" {
		tip, _ := main.Line(ctx, "rev-parse", "--verify", "--quiet", in.Branch+"^{commit}")
		if tip == "" {
			// Its branch is gone: only a reclaim deletes it, after saving
			// the branch and the files; that reclaim was killed before it
			// removed the worktree. Nothing here is unsaved.
			in.Dirty, in.Branch = false, ""
		}
		rc.Progressed = tip != "" && m.progressed(ctx, main, tip)
		rc.Merged = in.Merged && rc.Progressed
		_, gerr := os.Lstat(filepath.Join(in.Path, ".git"))
		if gerr == nil && tip != "" && !rc.Merged && opts.Finished != nil && m.Story == in.Story && m.Branch == in.Branch && stray == "" {
			keep, why := opts.Finished(Leftover{Story: in.Story, Path: in.Path, Branch: in.Branch, Target: m.Target, Tip: tip, mainHooks: main.HooksDir})
			if keep {
				// The lease changes hands from this pruner's to a
				// worker's: nothing can take it in between but a stray
				// process of the killed run, waited for, and no pruner
				// (this holds the repository mutex).
				lf.Close()
				w, lerr := lease(ctx, main, in.Name, in.Path, m, opts.Command)
				if lerr == nil {
					lerr = w.keep()
				}
				if lerr == nil {
					rc.Worker = w
					return rc, nil
				}
				// Not kept after all: saved and removed like the others.
				if lf, err = layout.At(path).TakeLease(); err != nil {
					lf = nil
					return &Reclaimed{Story: in.Story, Live: true}, nil
				}
				why = "its worktree could not be leased again (" + lerr.Error() + ")"
			}
			rc.NotLanded = why
		}
		switch {
		case errors.Is(gerr, os.ErrNotExist) && holdsFiles(in.Path):
			// Files, and no .git: it lost its .git after its checkout
			// (its agent removed it, say) - a creation killed inside
			// git worktree add leaves at most an empty directory. Its
			// files and its branch are saved together, through the main
			// repository.
			ref, err := saveLost(ctx, main, in.Path, in.Branch, "a killed run's worktree "+in.Name+" that lost its .git (story "+in.Story+")")
			if err != nil {
				return nil, fmt.Errorf("worktree: save %s before removing it: %w", in.Name, err)
			}
			rc.Backup = ref
			in.Dirty = false
		case errors.Is(gerr, os.ErrNotExist) || in.halfMade:
			// Killed inside git worktree add, before its .git file or
			// before it finished its record: no agent ever worked here,
			// and any file in it is saved through the main repository,
			// with its branch (one backup holds both).
			if in.halfMade && in.Dirty {
				ref, err := saveLost(ctx, main, in.Path, in.Branch, "a killed run's worktree "+in.Name+" whose git worktree add was cut short (story "+in.Story+")")
				if err != nil {
					return nil, fmt.Errorf("worktree: save %s before removing it: %w", in.Name, err)
				}
				rc.Backup = ref
			}
			in.Dirty = false
			if !in.Merged && tip != "" && rc.Backup == "" {
				ref, err := saveTip(ctx, main, tip)
				if err != nil {
					return nil, err
				}
				rc.Backup = ref
			}
		case tip == "":
		case !in.Merged || in.Dirty:
			// One backup holds both: its parent is the branch's tip, its
			// tree the uncommitted files.
			wrepo, err := git.Open(ctx, in.Path)
			if err != nil || wrepo.Root != in.Path {
				return nil, fmt.Errorf("worktree: open %s to save it: %v", in.Name, err)
			}
			st := &checkpoint.State{Repo: wrepo}
			ref, err := st.Backup(ctx, "a killed run's worktree "+in.Name+" (story "+in.Story+")")
			if err != nil {
				return nil, fmt.Errorf("worktree: save %s before removing it: %w", in.Name, err)
			}
			rc.Backup = ref
			in.Dirty = false
			w := &Worker{Meta: m, Name: in.Name, Path: in.Path, State: st}
			if rc.Also, err = w.saveLeftBehind(ctx, main, ref, tip); err != nil {
				return nil, fmt.Errorf("worktree: save %s before removing it: %w", in.Name, err)
			}
		}
	}
	if !in.Registered && m.Branch == "" && holdsFiles(in.Path, ".git") {
		// A creation killed inside git worktree add before git wrote its
		// entry (newer gits make the directory first): nothing names
		// its story, and no agent worked here, but whatever is in it
		// now is saved before it goes.
		ref, err := saveLost(ctx, main, in.Path, "", "a killed run's worktree "+in.Name+" that git never registered")
		if err != nil {
			return nil, fmt.Errorf("worktree: save %s before removing it: %w", in.Name, err)
		}
		rc.Backup = ref
	}
	if !in.Registered && m.Branch != "" {
		// A removal killed after git forgot the worktree: its branch may
		// still hold work nothing else has (the backup taken before may
		// or may not exist). Save its tip, then let it go.
		in.Branch = m.Branch
		rc.Branch = m.Branch
		tip, _ := main.Line(ctx, "rev-parse", "--verify", "--quiet", m.Branch+"^{commit}")
		if tip != "" {
			merged, _ := main.OK(ctx, "merge-base", "--is-ancestor", tip, m.Target)
			rc.Progressed = m.progressed(ctx, main, tip)
			rc.Merged = merged && rc.Progressed
			in.Merged = merged
			if !merged {
				ref, err := saveTip(ctx, main, tip)
				if err != nil {
					return nil, err
				}
				rc.Backup = ref
			}
		}
	}
	if rc.Merged && opts.Landed != nil {
		if err := opts.Landed(*rc); err != nil {
			return nil, err
		}
	}
	if rc.Backup != "" && in.Branch != "" && !in.Merged {
		// Saved above: the branch is no longer needed. Deleted before the
		// worktree, so a kill in between leaves a worktree whose missing
		// branch says "already saved", never a branch nobody removes.
		if tip, err := main.Line(ctx, "rev-parse", "--verify", "--quiet", in.Branch); err == nil {
			if _, err := main.Run(ctx, "update-ref", "-d", in.Branch, tip); err != nil {
				return nil, fmt.Errorf("worktree: delete %s (saved in %s): %w", checkpoint.BranchName(in.Branch), rc.Backup, err)
			}
		}
		in.Branch = ""
	}
	rem, err := removeLeased(ctx, main, in)
	if err != nil {
		return nil, err
	}
	if stray != "" && rc.Backup != "" {
		deleteStray(ctx, main, stray, rc.Backup, m.Created)
	}
	rc.Submodules = rem.Submodules
	if rc.Backup == "" {
		rc.Backup = rem.Backup // saved by the removal (a half-made worktree's files)
	}
	return rc, nil
}

// progressed reports whether a branch at tip has commits beyond where its
// worktree started: it is neither its base nor the base Refresh moved it
// from, and it descends from its base. A branch its agent moved back (git
// reset HEAD~1, on the way to a squash, when the kill came) is contained
// in its target and is not where it started, and holds no work of its
// own: taken for merged, its story was ticked done with its work in no
// commit.
func (m Meta) progressed(ctx context.Context, main *git.Repo, tip string) bool {
	if m.Base == "" || tip == m.Base || tip == m.Prev {
		return false
	}
	ahead, err := main.OK(ctx, "merge-base", "--is-ancestor", m.Base, tip)
	return err == nil && ahead
}

// saveTip points a new backup ref at commit.
func saveTip(ctx context.Context, main *git.Repo, commit string) (string, error) {
	return saveRef(ctx, main, commit, "reclaimed", "wiggum: save a killed run's branch")
}

// saveRef points a new backup ref, named for the time, commit and why, at
// commit.
func saveRef(ctx context.Context, main *git.Repo, commit, why, reflog string) (string, error) {
	ref := checkpoint.BackupPrefix + time.Now().UTC().Format("20060102T150405Z") + "-" + commit[:8] + "-" + why
	for i := 1; ; i++ {
		try := ref
		if i > 1 {
			try += "-" + strconv.Itoa(i)
		}
		_, err := main.Run(ctx, "update-ref", "-m", reflog, try, commit, "")
		if err == nil {
			// On disk before what it saved is removed (git wrote it
			// without fsync).
			if err := git.SyncFS(main.CommonDir); err != nil {
				return "", fmt.Errorf("worktree: %s could not be made durable: %w", try, err)
			}
			return try, nil
		}
		if i >= 100 {
			return "", fmt.Errorf("worktree: save %s: %w", commit, err)
		}
	}
}

// forgetMissing drops git's record of wiggum worktrees whose directory is
// gone (a removal killed between deleting the directory and telling git).
func forgetMissing(ctx context.Context, main *git.Repo) error {
	if _, err := os.Stat(filepath.Join(main.CommonDir, "worktrees")); errors.Is(err, fs.ErrNotExist) {
		// git keeps every linked worktree's record there, and removes
		// the directory with the last one: there is none to forget.
		return nil
	}
	reg, err := registered(ctx, main)
	if err != nil {
		return err
	}
	parent := filepath.Join(main.Root, filepath.FromSlash(Dir)) + string(filepath.Separator)
	stale := false
	for path := range reg {
		if !strings.HasPrefix(path, parent) {
			continue
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			stale = true
			_, _ = main.Run(ctx, "worktree", "unlock", path)
		}
	}
	if stale {
		if _, err := main.Run(ctx, "worktree", "prune"); err != nil {
			return fmt.Errorf("worktree: prune stale records: %w", err)
		}
	}
	return nil
}

// deleteMergedBranches deletes wiggum/ branches that no worktree has
// checked out and that target contains.
func deleteMergedBranches(ctx context.Context, main *git.Repo, target string) error {
	if target == "" || !mayHaveBranches(main) {
		return nil
	}
	out, err := main.Run(ctx, "for-each-ref", "--merged", target, "--format=%(refname) %(objectname)", BranchPrefix)
	if err != nil {
		return fmt.Errorf("worktree: list branches: %w", err)
	}
	if strings.TrimSpace(out) == "" {
		return nil
	}
	reg, err := registered(ctx, main)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, e := range reg {
		used[e.branch] = true
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		ref, sha, ok := strings.Cut(line, " ")
		if !ok || used[ref] {
			continue
		}
		_, _ = main.Run(ctx, "update-ref", "-d", ref, sha)
	}
	return nil
}

// mayHaveBranches reports whether any wiggum/ branch may exist, from the
// files git keeps refs in: false only when neither a loose one nor a
// packed one can be there (and the repository keeps its refs in files,
// not in a reftable), so a run that starts clean asks git nothing.
func mayHaveBranches(main *git.Repo) bool {
	if _, err := os.Stat(filepath.Join(main.CommonDir, "reftable")); !errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if _, err := os.Stat(filepath.Join(main.CommonDir, filepath.FromSlash(BranchPrefix))); !errors.Is(err, fs.ErrNotExist) {
		return true
	}
	packed, err := statefile.ReadFile(filepath.Join(main.CommonDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return err != nil || bytes.Contains(packed, []byte(" "+BranchPrefix))
}

// KeptBranch is a wiggum/ branch that no worktree has checked out and
// that target does not contain: a finished story's work a parallel run
// could not merge (a conflict) and kept.
type KeptBranch struct {
	Ref, Tip string
	// Subjects are the first lines of its commits target lacks, newest
	// first (at most 50).
	Subjects []string
}

// Name is the branch's name under wiggum/.
func (k KeptBranch) Name() string { return strings.TrimPrefix(k.Ref, BranchPrefix) }

// Kept lists the kept branches; nothing (and no git process) when no
// wiggum/ branch can exist.
func Kept(ctx context.Context, main *git.Repo, target string) ([]KeptBranch, error) {
	if target == "" || !mayHaveBranches(main) {
		return nil, nil
	}
	out, err := main.Run(ctx, "for-each-ref", "--no-merged", target, "--format=%(refname) %(objectname)", BranchPrefix)
	if err != nil || strings.TrimSpace(out) == "" {
		return nil, err
	}
	reg, err := registered(ctx, main)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, e := range reg {
		used[e.branch] = true
	}
	var kept []KeptBranch
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		ref, tip, ok := strings.Cut(line, " ")
		if !ok || used[ref] {
			continue
		}
		log, err := main.Run(ctx, "log", "-z", "--max-count=50", "--format=%s", tip, "--not", target)
		if err != nil {
			return nil, err
		}
		kept = append(kept, KeptBranch{Ref: ref, Tip: tip, Subjects: strings.Split(strings.TrimSuffix(log, "\x00"), "\x00")})
	}
	return kept, nil
}

// deleteStray deletes the branch a killed worktree's agent had checked
// out, saved in backup, when the agent made it: it was created after the
// worktree (its reflog's first entry is in a later second than created:
// reflogs keep whole seconds, and one made in the same second is taken
// for older). Any other branch - a person's, which the agent checked
// out - stays.
func deleteStray(ctx context.Context, main *git.Repo, branch, backup string, created time.Time) {
	tip, err := main.Line(ctx, "rev-parse", "--verify", "--quiet", branch+"^{commit}")
	if err != nil || created.IsZero() {
		return
	}
	if in, err := main.OK(ctx, "merge-base", "--is-ancestor", tip, backup); err != nil || !in {
		return
	}
	out, err := main.Run(ctx, "reflog", "show", "--format=%gd", "--date=unix", branch, "--")
	lines := strings.Fields(out)
	if err != nil || len(lines) == 0 {
		return
	}
	// The oldest entry: refs/heads/x@{1700000000}.
	first := lines[len(lines)-1]
	_, stamp, ok := strings.Cut(first, "@{")
	sec, err := strconv.ParseInt(strings.TrimSuffix(stamp, "}"), 10, 64)
	if !ok || err != nil || sec <= created.Unix() {
		return
	}
	_, _ = main.Run(ctx, "update-ref", "-d", branch, tip)
}
