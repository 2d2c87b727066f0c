// Package worktree gives each parallel story its own git worktree and branch
// under .ralph/wiggum/worktrees, leased for the worker's whole life by an
// flock on the worktree's own .ralph/.agent-lock. A worktree whose lease is
// held is never removed: removal takes the lease itself, without waiting,
// and holds it through the removal. Creation and merges hold one repository
// mutex for their whole sequence of git operations.
package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/killpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
	"golang.org/x/sys/unix"
)

// Dir holds the worktrees, relative to the main working tree's root; it is
// inside the runtime directory, which git is told to ignore.
const Dir = layout.WorktreesDir

// BranchPrefix is where worker branches live.
const BranchPrefix = "refs/heads/wiggum/"

// MetaFile records, inside each worktree, which story it is for.
const MetaFile = layout.WorktreeMeta

// maxName bounds a worktree's directory and branch name.
const maxName = 48

// Meta is what a worktree records about itself.
type Meta struct {
	Story  string `json:"story"`
	Branch string `json:"branch"` // full ref
	Target string `json:"target"` // full ref the branch merges into
	Base   string `json:"base"`   // the commit it started from
	// Prev is the commit it started from before Refresh moved it to
	// Base: a kill between recording Base and moving the branch leaves
	// the branch at Prev, and neither commit is work of its own.
	Prev    string    `json:"prev,omitempty"`
	Created time.Time `json:"created"`
}

// Name turns a story id - hostile input - into a directory and branch name:
// letters, digits, '_' and '-' only, no leading '-', bounded length. An id
// that had to change gets a hash suffix so that distinct ids stay distinct.
func Name(story string) (string, error) {
	if strings.TrimSpace(story) == "" {
		return "", badinput.Errorf("worktree: empty story id")
	}
	if strings.ContainsRune(story, 0) {
		return "", badinput.Errorf("worktree: story id %q contains a NUL byte", story)
	}
	var b strings.Builder
	for _, r := range story {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimLeft(b.String(), "-")
	if name == story && len(name) <= maxName {
		return name, nil
	}
	sum := sha256.Sum256([]byte(story))
	suffix := hex.EncodeToString(sum[:4])
	if len(name) > maxName-len(suffix)-1 {
		name = name[:maxName-len(suffix)-1]
	}
	if name == "" {
		return "story-" + suffix, nil
	}
	return name + "-" + suffix, nil
}

// Worker is a live worktree: created, registered with git, and leased by
// this process until Release.
type Worker struct {
	Meta
	Name  string
	Path  string
	State *checkpoint.State // the worktree's own state: checkpoint, hooks, run record
	Lease *layout.Lock      // the worktree's .ralph/.agent-lock

	dirty *bool    // from Settle: uncommitted changes once its writers stopped
	repos []string // from Settle: repositories of their own its status and commits show
	// reposKnown: repos holds the ones its commits recorded too.
	reposKnown bool
	settled    chan struct{} // closed once Settle's status has set dirty
	clean      bool          // checked out here at Base, no hook run, nothing written in it since

	// Notes are what making the worktree could not do (a submodule it
	// could not check out), for the caller to say.
	Notes  []string
	landed string // from Landed: the branch tip its target now contains
}

// Create makes a worktree and branch for story starting at target's tip,
// and takes its lease, all under the repository mutex, so no pruner can see
// the worktree before it is leased and no merge moves target half way. A
// branch left by an earlier run (one that could not merge, say) is never
// reused: the new one gets a numbered name.
func Create(ctx context.Context, main *git.Repo, story, target string, command []string) (*Worker, error) {
	return CreateAt(ctx, main, story, target, "", command)
}

// CreateAt is Create with the branch starting at start (a commit) instead
// of target's tip; "" means target's tip. A run shared across machines
// starts a story where the server's copy of the target, or the story's
// branch left by a machine that died, is.
func CreateAt(ctx context.Context, main *git.Repo, story, target, start string, command []string) (*Worker, error) {
	ws, errs := CreateMany(ctx, main, []Request{{Story: story, Target: target, Start: start}}, command, nil)
	return ws[0], errs[0]
}

// Request is one worktree for CreateMany.
type Request struct {
	Story, Target string
	Start         string // a commit to start from; "" means Target's tip
}

// CreateMany creates one worktree for each request, as CreateAt does.
// git registers them one at a time, in one hold of the repository mutex (a
// concurrent git worktree add reads the entries of the others half
// written), without checking their files out; each is leased while git
// registers the next, and none is visible to a pruner before it is leased,
// since a pruner waits for the mutex. Each one's files are then checked
// out under its own lease, beside the next registrations and after the
// mutex is let go: nobody else touches a leased worktree, and its branch
// is its own. ws[i] or errs[i] answers reqs[i]; ready, when not nil, is
// given each answer as soon as it is known, so a worker can start in its
// worktree while git makes the next ones.
func CreateMany(ctx context.Context, main *git.Repo, reqs []Request, command []string, ready func(i int, w *Worker, err error)) (ws []*Worker, errs []error) {
	ws, errs = make([]*Worker, len(reqs)), make([]error, len(reqs))
	if ready == nil {
		ready = func(int, *Worker, error) {}
	}
	fail := func(err error) {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	answered := make([]bool, len(reqs))
	defer func() {
		for i := range reqs {
			if !answered[i] {
				ready(i, ws[i], errs[i])
			}
		}
	}()
	names := make([]string, len(reqs))
	seen := map[string]bool{}
	for i, r := range reqs {
		names[i], errs[i] = Name(r.Story)
		if errs[i] == nil && seen[names[i]] {
			errs[i] = fmt.Errorf("worktree: story %q asked for twice", r.Story)
		}
		seen[names[i]] = true
	}
	// The ignored files each worktree gets a copy of (IncludeFile),
	// found once for the batch, before the mutex.
	inc, incErr := includes(ctx, main)
	mu, err := LockRepo(ctx, main)
	if err != nil {
		fail(err)
		return ws, errs
	}
	defer mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	parent := filepath.Join(main.Root, filepath.FromSlash(Dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		fail(fmt.Errorf("worktree: create %s: %w", Dir, err))
		return ws, errs
	}
	added := make([]*added, len(reqs))
	leaseErrs := make([]error, len(reqs))
	// Every request at one target starts from one tip: resolved once,
	// under the mutex no merge moves it.
	tips := map[string]string{}
	made := branchAhead(ctx, main, reqs, names, errs, tips)
	// Every start is resolved before the adds run together: they only
	// read tips.
	for i, r := range reqs {
		if errs[i] == nil {
			_, errs[i] = resolveStart(ctx, main, r, tips)
		}
	}
	// git adds the worktrees side by side: each add makes its own
	// directory under the worktrees' parent and its own entry under
	// .git/worktrees (git creates the entry with mkdir and takes the
	// next name when it exists), checks out nothing, and its branch is
	// its own. Each one is leased as soon as git has added it, while the
	// others are still being added, and all are leased before the mutex
	// is let go, so no pruner sees one nobody holds.
	var leased, checked sync.WaitGroup
	for i, r := range reqs {
		if errs[i] != nil {
			continue
		}
		leased.Add(1)
		checked.Go(func() {
			a, err := add(ctx, main, parent, names[i], r, tips, made[i])
			if err != nil {
				errs[i] = err
				leased.Done()
				return
			}
			added[i] = a
			killpoint.At("worktree-added")
			w, err := lease(ctx, main, a.name, a.path, a.meta, command)
			leaseErrs[i] = err
			leased.Done()
			if err != nil {
				return
			}
			if err := w.checkOut(ctx, main, inc, incErr); err != nil {
				errs[i] = err
				w.undo(ctx, main)
				return
			}
			ws[i] = w
			answered[i] = true
			ready(i, w, nil)
		})
	}
	leased.Wait()
	for i, a := range added {
		if a != nil && leaseErrs[i] != nil {
			errs[i] = leaseErrs[i]
			// Nothing is in it yet: undo the add rather than leave a
			// worktree nobody holds.
			unregister(ctx, main, a.path, a.meta.Branch, a.meta.Base)
		}
	}
	mu.Unlock()
	checked.Wait()
	return ws, errs
}

// branchAhead creates the branches of a batch of requests - each at its
// start, under its first name - in one update-ref transaction, so git
// worktree add need not start a git branch for each (one process for the
// batch instead of one per worktree, while the caller holds the
// repository mutex). made[i] says request i's branch is there; a
// transaction git refuses (a name taken) creates none, and each request
// then makes its own, as add does alone. A kill after the transaction
// leaves branches at their target's tip that no worktree has checked out,
// which Reclaim deletes. The caller holds the repository mutex.
func branchAhead(ctx context.Context, main *git.Repo, reqs []Request, names []string, errs []error, tips map[string]string) []bool {
	made := make([]bool, len(reqs))
	var tx strings.Builder
	n := 0
	for i, r := range reqs {
		if errs[i] != nil {
			continue
		}
		tip, err := resolveStart(ctx, main, r, tips)
		if err != nil {
			errs[i] = err
			continue
		}
		fmt.Fprintf(&tx, "create %s%s %s\n", BranchPrefix, names[i], tip)
		n++
	}
	if n < 2 {
		return made // one request: git worktree add -b costs no more
	}
	if _, err := main.RunEnv(ctx, nil, []byte(tx.String()), "update-ref", "-m", "wiggum: branch for a worktree", "--stdin"); err != nil {
		return made
	}
	killpoint.At("worktree-branches")
	for i := range reqs {
		made[i] = errs[i] == nil
	}
	return made
}

// resolveStart resolves the commit r's branch starts from, once per
// target or start in tips.
func resolveStart(ctx context.Context, main *git.Repo, r Request, tips map[string]string) (string, error) {
	from := r.Target
	if r.Start != "" {
		from = r.Start
	}
	if tip := tips[from]; tip != "" {
		return tip, nil
	}
	// A branch names a commit (git will not point one at anything else):
	// its file answers without starting git.
	if strings.HasPrefix(from, "refs/heads/") {
		if tip, ok := main.RefValue(from); ok && tip != "" {
			tips[from] = tip
			return tip, nil
		}
	}
	tip, err := main.Line(ctx, "rev-parse", "--verify", "--quiet", from+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("worktree: resolve %s: %w", from, err)
	}
	tips[from] = tip
	return tip, nil
}

// added is a worktree git has made and nobody holds yet.
type added struct {
	name, path string
	meta       Meta
}

// add registers one worktree and its branch, its files not checked out;
// the caller holds the repository mutex and leases it next. made says
// branchAhead created the branch under the first name; if that name's
// directory is taken, the branch is deleted and the next name tried - as
// is a branch git worktree add -b made before it refused the directory.
func add(ctx context.Context, main *git.Repo, parent, base string, r Request, tips map[string]string, made bool) (*added, error) {
	tip, err := resolveStart(ctx, main, r, tips)
	if err != nil {
		return nil, err
	}
	for i := 1; i <= 100; i++ {
		name := base
		if i > 1 {
			name = base + "-" + strconv.Itoa(i)
		}
		branch := BranchPrefix + name
		path := filepath.Join(parent, name)
		short := strings.TrimPrefix(branch, "refs/heads/")
		// git refuses an existing branch or a non-empty directory, so a
		// taken name is an error here, not a check made beforehand.
		args := []string{"worktree", "add", "--quiet", "--no-checkout", "--lock", "--reason", lockReason(r.Story), "-b", short, path, tip}
		if made {
			args = []string{"worktree", "add", "--quiet", "--no-checkout", "--lock", "--reason", lockReason(r.Story), path, short}
		}
		// With -b, git creates the branch first and only then reads
		// the worktrees and looks at the directory: an add that fails
		// there leaves the branch behind, at tip. Unless git refused
		// the branch itself (it was there before), that branch is this
		// add's own, and undoing the add deletes it - only while it is
		// still at tip.
		undo := func(err error) {
			var ge *git.Error
			if made || !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "a branch named") {
				made = false
				_, _ = main.Run(ctx, "update-ref", "-d", branch, tip)
			}
		}
		_, err := main.Run(ctx, args...)
		// An add beside it (CreateMany runs them together) may have
		// its entry half written when git reads every entry: that
		// add fails before it made the worktree, and goes again.
		for try := 1; err != nil && try < listTries; try++ {
			var ge *git.Error
			if !errors.As(err, &ge) || !halfWritten(ge.Stderr) {
				break
			}
			if !made {
				undo(err)
			}
			time.Sleep(time.Duration(try) * time.Millisecond)
			_, err = main.Run(ctx, args...)
		}
		if err != nil {
			undo(err)
			var ge *git.Error
			if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "already exists") || strings.Contains(ge.Stderr, "is a missing but locked worktree")) {
				continue
			}
			return nil, fmt.Errorf("worktree: add %s: %w", name, err)
		}
		return &added{name: name, path: path, meta: Meta{Story: r.Story, Branch: branch, Target: r.Target, Base: tip, Created: time.Now().UTC()}}, nil
	}
	return nil, fmt.Errorf("worktree: no free name for story %q (100 branches %s%s-N exist)", r.Story, BranchPrefix, base)
}

// lease takes a worktree's lease and opens its state, for meta; the
// caller records meta in the worktree (checkOut, or a worktree kept as
// it is: keep).
func lease(ctx context.Context, main *git.Repo, name, path string, meta Meta, command []string) (*Worker, error) {
	st, err := checkpoint.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("worktree: open %s: %w", name, err)
	}
	withMainHooks(st.Repo, main.HooksDir)
	if st.Repo.Root != path {
		return nil, fmt.Errorf("worktree: %s resolved to %s, not to itself", path, st.Repo.Root)
	}
	// A lister probing the lease holds it for an instant; wait that out.
	l, err := st.Acquire(ctx, layout.AcquireOptions{Wait: 5 * time.Second, Command: command})
	if err != nil {
		return nil, fmt.Errorf("worktree: lease %s: %w", name, err)
	}
	return &Worker{Meta: meta, Name: name, Path: path, State: st, Lease: l}, nil
}

// withMainHooks makes the git of a worktree (wrepo) run the main tree's
// hooks (mainHooks) where it would look elsewhere. A relative
// core.hooksPath - husky's .husky/_, which the project's npm install makes
// in the main tree and git is told to ignore - names, in a worktree, a
// directory that is not there, and git there runs no hook at all: not the
// person's formatters and commit-message checks, not wiggum's own.
func withMainHooks(wrepo *git.Repo, mainHooks string) {
	if mainHooks == "" || wrepo.HooksDir == mainHooks {
		return
	}
	if _, err := os.Stat(mainHooks); err != nil {
		return
	}
	wrepo.HooksDir = mainHooks
	wrepo.Config = append(wrepo.Config, [2]string{"core.hooksPath", mainHooks})
}

// keep records the worktree's MetaFile; on failure it lets the lease go.
func (w *Worker) keep() error {
	err := w.recordMeta()
	if err != nil {
		_ = w.Lease.Release()
	}
	return err
}

// recordMeta writes the worktree's MetaFile.
func (w *Worker) recordMeta() error {
	if err := statefile.WriteJSON(w.State.Path(MetaFile), w.Meta); err != nil {
		return fmt.Errorf("worktree: record %s: %w", w.Name, err)
	}
	return nil
}

// noSpace reports whether a full disk made repo's checkout fail with
// err: git says only "unable to write file PATH", and removes what it
// could not write, so the space looks free again; a file larger than the
// space left on the file system holding the worktree did not fit.
func noSpace(ctx context.Context, repo *git.Repo, err error) bool {
	var ge *git.Error
	if !errors.As(err, &ge) {
		return false
	}
	var st unix.Statfs_t
	if unix.Statfs(repo.Root, &st) != nil {
		return false
	}
	free := st.Bavail * uint64(st.Bsize)
	for _, line := range strings.Split(ge.Stderr, "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "error: unable to write file ")
		if !ok {
			continue
		}
		if free == 0 {
			return true
		}
		out, err := repo.Run(ctx, "cat-file", "-s", "HEAD:"+name)
		if size, perr := strconv.ParseUint(strings.TrimSpace(out), 10, 64); err == nil && perr == nil && size > free {
			return true
		}
	}
	return false
}

// nullID is git's name for "no commit" in a post-checkout hook's
// arguments, as git worktree add passes it.
const nullID = "0000000000000000000000000000000000000000"

// checkOut fills a leased worktree git registered without its files: the
// checkout git worktree add runs itself (reset --hard into the new index),
// the submodules the main tree has checked out (checkOutSubmodules), the
// ignored files of the main tree that IncludeFile names (inc, from
// includes), then the repository's post-checkout hook, when there is one, as git worktree
// add runs it; then it records the worktree's MetaFile. On failure the
// lease is still held.
func (w *Worker) checkOut(ctx context.Context, main *git.Repo, inc []string, incErr error) error {
	repo := w.State.Repo
	if _, err := repo.Run(ctx, "reset", "--hard", "--no-recurse-submodules", "--quiet"); err != nil {
		if noSpace(ctx, repo, err) {
			// git says only "unable to write file": the cause is named.
			return fmt.Errorf("worktree: check out %s: %w: %w", w.Name, err, syscall.ENOSPC)
		}
		return fmt.Errorf("worktree: check out %s: %w", w.Name, err)
	}
	w.Notes = checkOutSubmodules(ctx, w.Path, main.Root)
	if incErr != nil {
		w.Notes = append(w.Notes, "the files "+IncludeFile+" names were not copied: "+firstLine(incErr.Error()))
	}
	w.Notes = append(w.Notes, copyIncludes(ctx, main.Root, w.Path, inc)...)
	hook := false
	if _, err := os.Stat(filepath.Join(repo.HooksDir, "post-checkout")); err == nil {
		hook = true
		if _, err := repo.Run(ctx, "hook", "run", "--ignore-missing", "post-checkout", "--", nullID, w.Base, "1"); err != nil {
			return fmt.Errorf("worktree: %s: the post-checkout hook: %w", w.Name, err)
		}
	}
	if err := w.recordMeta(); err != nil {
		return err
	}
	// A new directory filled by reset --hard holds Base's files and
	// nothing else (wiggum's own records are under the excluded runtime
	// directory); a post-checkout hook may write anything.
	w.clean = !hook
	return nil
}

// TakeClean reports whether the worktree is known to be clean at Base on its
// branch without asking git: checked out by this process (no
// post-checkout hook run), at most moved by Refresh, and not yet handed
// to anybody who writes in it. TakeClean answers once: whoever takes it
// is the one about to write.
func (w *Worker) TakeClean() bool {
	c := w.clean
	w.clean = false
	return c
}

// undo removes a worktree CreateMany registered and could not finish,
// still holding its lease, under the repository mutex; then it lets the
// lease go.
func (w *Worker) undo(ctx context.Context, main *git.Repo) {
	defer w.Lease.Release()
	mu, err := LockRepo(ctx, main)
	if err != nil {
		return
	}
	defer mu.Unlock()
	unregister(ctx, main, w.Path, w.Branch, w.Base)
	_ = os.RemoveAll(w.Path)
}

// unregister removes a worktree CreateMany added that holds no work yet,
// and its branch while still at base; the caller holds the repository
// mutex.
func unregister(ctx context.Context, main *git.Repo, path, branch, base string) {
	_, _ = main.Run(ctx, "worktree", "remove", "--force", "--force", path)
	_, _ = main.Run(ctx, "update-ref", "-d", branch, base)
}

// Refresh moves a worktree nobody has worked in yet - made ahead of its
// story - to tip, its target's current tip (the caller resolves it once
// for all its worktrees), so the story starts from what has landed since.
// The new base is recorded before the branch moves, with the old one as
// Prev, so a kill in between never makes the branch look like work of its
// own. It reports whether it moved anything.
func (w *Worker) Refresh(ctx context.Context, tip string) (bool, error) {
	ctx = context.WithoutCancel(ctx)
	if tip == w.Base {
		return false, nil
	}
	// git reset leaves a checked-out submodule where it is: moved past a
	// change of its recorded commit, the worktree would show it changed,
	// and the story's commit would record the old commit again, undoing
	// the change that landed. Such a worktree stays where it was made.
	if subs, err := checkedOutSubmodules(ctx, w.Path); err != nil || len(subs) > 0 {
		if err != nil {
			return false, err
		}
		out, err := w.State.Repo.Run(ctx, append([]string{"diff", "--name-only", w.Base, tip, "--"}, subs...)...)
		if err != nil {
			return false, fmt.Errorf("worktree: compare %s's submodules at %s and %s: %w", w.Name, w.Base[:12], tip[:12], err)
		}
		if changed := strings.Fields(out); len(changed) > 0 {
			return false, fmt.Errorf("worktree: %s stays at %s: the target changed the commit of submodule %s, checked out there, which moving it would leave behind", w.Name, w.Base[:12], changed[0])
		}
	}
	meta := w.Meta
	meta.Base, meta.Prev = tip, w.Base
	if err := statefile.WriteJSON(w.State.Path(MetaFile), meta); err != nil {
		return false, fmt.Errorf("worktree: record %s: %w", w.Name, err)
	}
	// --keep refuses to lose a change; there is none to lose here. A
	// clean tree moved by it is clean at tip; a failed move leaves it
	// unknown.
	if _, err := w.State.Repo.Run(ctx, "reset", "--keep", "--quiet", tip); err != nil {
		w.clean = false
		return false, fmt.Errorf("worktree: move %s to %s: %w", w.Name, tip, err)
	}
	w.Meta = meta
	return true, nil
}

// Info describes one worktree in the wiggum-owned directory.
type Info struct {
	Name       string `json:"name"`
	Story      string `json:"story"`
	Branch     string `json:"branch"`
	Target     string `json:"target,omitempty"`
	Path       string `json:"path"`
	Held       bool   `json:"held"`
	PID        int    `json:"pid,omitempty"` // the lease holder, when known
	Registered bool   `json:"registered"`    // git knows the worktree
	Merged     bool   `json:"merged"`        // the branch is contained in its target
	Dirty      bool   `json:"dirty"`
	// Foreign: not wiggum's - a worktree an agent made beside its
	// worker's (git worktree add ../name, run in a worker's worktree,
	// puts it here), or a repository cloned here. Left as it is by
	// every reclaim and prune: its work is nobody's to save and remove
	// but the person's.
	Foreign bool `json:"foreign,omitempty"`

	tip string // the branch's tip, when the caller knows it
	// base is the commit the worktree started from, when known; repos
	// are the repositories of their own its status saw (new untracked
	// ones, changed submodules): with the submodules .gitmodules names
	// and the ones its commits recorded since base, what a removal saves
	// apart (saveSubmodules).
	base       string
	repos      []string
	reposKnown bool // repos holds the ones its commits recorded too
	// halfMade: git worktree add was killed after it wrote the .git file
	// and before it finished its record (halfMadeGit): no git command
	// works in it, and no agent ever did.
	halfMade bool
}

// List describes every worktree under Dir, in name order.
func List(ctx context.Context, main *git.Repo) ([]Info, error) {
	paths, err := dirs(main)
	if err != nil || len(paths) == 0 {
		return nil, err
	}
	reg, err := registered(ctx, main)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(paths))
	for _, path := range paths {
		out = append(out, describe(ctx, main, reg, path))
	}
	return out, nil
}

// dirs lists the directories under Dir, in name order: every worktree
// wiggum made and has not removed yet. A removal takes the repository
// mutex, so whoever acts on one looks at it again under the mutex.
func dirs(main *git.Repo) ([]string, error) {
	parent := filepath.Join(main.Root, filepath.FromSlash(Dir))
	ents, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("worktree: list %s: %w", Dir, err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(parent, e.Name()))
		}
	}
	return out, nil
}

func describe(ctx context.Context, main *git.Repo, reg map[string]registration, path string) Info {
	in := Info{Name: filepath.Base(path), Path: path}
	e, ok := reg[path]
	in.Registered, in.Branch = ok, e.branch
	if foreign(reg, path) {
		in.Foreign = true
		if in.Branch != "" {
			in.Merged, _ = main.OK(ctx, "merge-base", "--is-ancestor", in.Branch, "HEAD")
		}
		return in
	}
	var m Meta
	if err := statefile.ReadJSON(filepath.Join(path, filepath.FromSlash(MetaFile)), &m, nil); err == nil {
		in.Story, in.Target, in.base = m.Story, m.Target, m.Base
		if in.Branch == "" {
			in.Branch = m.Branch
		}
	}
	if in.Story == "" {
		// Made and never leased (a kill inside a batch of creations):
		// git's lock on it names the story it was made for.
		in.Story = storyOfReason(e.reason)
	}
	st := layout.At(path)
	if held, err := st.Probe(); err == nil && held {
		in.Held = true
		if h, err := st.CurrentHolder(); err == nil && h != nil {
			in.PID = h.PID
		}
	}
	if in.Registered {
		inspect(ctx, main, &in)
	}
	return in
}

// inspect fills in whether a registered worktree's branch is merged and
// whether it has uncommitted changes (an unreadable status counts as
// changes, so they are saved rather than lost).
func inspect(ctx context.Context, main *git.Repo, in *Info) {
	if in.Branch != "" && in.Target != "" {
		in.Merged, _ = main.OK(ctx, "merge-base", "--is-ancestor", in.Branch, in.Target)
	}
	if halfMadeGit(in.Path) {
		// Whatever is in it besides .git is saved through the main
		// repository (saveLost) before it goes.
		in.halfMade, in.Dirty = true, holdsFiles(in.Path, ".git")
		return
	}
	st, err := (&git.Repo{Root: in.Path}).Status(ctx)
	in.Dirty = err != nil || st.Dirty()
	if err == nil {
		in.repos = repositories(st)
	}
}

// halfMadeGit reports whether the worktree at path has the .git file git
// worktree add writes, and a record of it that the add had not finished:
// no commondir, no HEAD, or still the HEAD the add writes first - the
// null object id, there only so that git takes the directory for a
// repository, which the add replaces by the branch before it returns. An
// add killed in between left it so, and every git command in the
// worktree then fails ("bad object HEAD", "not a git repository").
func halfMadeGit(path string) bool {
	if fi, err := os.Lstat(filepath.Join(path, ".git")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	gitDir, commonDir := git.Dirs(path)
	if gitDir == "" {
		return false
	}
	if gitDir == commonDir {
		return true // no commondir
	}
	data, err := statefile.ReadFile(filepath.Join(gitDir, "HEAD"))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	v := strings.TrimSpace(string(data))
	return err == nil && (len(v) == 40 || len(v) == 64) && strings.Trim(v, "0") == ""
}

// registration is what git records of one worktree.
type registration struct {
	branch string // the checked-out branch's full ref; "" when detached
	reason string // why it is locked; "" when it is not
}

// ForeignNote says what a directory under Dir that is not wiggum's
// (Foreign) is, and how to take it out.
func (in Info) ForeignNote() string {
	if !in.Registered {
		return "a directory of an agent's or a person's, no worktree of wiggum's (move it or remove it yourself)"
	}
	what := "a worktree of an agent's or a person's (git worktree add ../NAME run in a worker's worktree puts it here)"
	undo := "git worktree remove " + in.Path
	if b := strings.TrimPrefix(in.Branch, "refs/heads/"); b != "" {
		what += ", branch " + b
		if !in.Merged {
			what += " with commits HEAD does not have"
		}
		undo += " && git branch -D " + b
	}
	return what + " (take it out with " + undo + ")"
}

// foreign reports whether the directory path under Dir is not one of
// wiggum's worktrees (Wiggums), nor one whose creation was killed part way
// (git's null HEAD, or none yet, or no registration at all). A registered
// worktree that is neither is another's - an agent's git worktree add
// ../NAME, run in its worker's worktree - and so is an unregistered
// directory holding a repository of its own (a clone). Anything else there
// stays wiggum's to save and remove.
func foreign(reg map[string]registration, path string) bool {
	if _, ok := reg[path]; !ok {
		fi, err := os.Lstat(filepath.Join(path, ".git"))
		return err == nil && fi.IsDir()
	}
	admin, _ := git.Dirs(path)
	if admin == "" || Wiggums(admin, path) {
		return false
	}
	head, err := statefile.ReadFile(filepath.Join(admin, "HEAD"))
	return err == nil && strings.Trim(strings.TrimSpace(string(head)), "0") != ""
}

// registered maps each worktree path git knows to what git records of it.
// git worktree list reads every worktree's entry, and one being added or
// removed meanwhile (under the repository mutex, which a lister does not
// wait for) may be half written or half deleted: git then fails to read a
// file of it, and the list is asked again once that moment has passed.
func registered(ctx context.Context, main *git.Repo) (map[string]registration, error) {
	var out string
	var err error
	delay := 2 * time.Millisecond
	for try := 1; ; try++ {
		out, err = main.Run(ctx, "worktree", "list", "--porcelain", "-z")
		var ge *git.Error
		if err == nil || try == listTries || !errors.As(err, &ge) || !halfWritten(ge.Stderr) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("worktree: git worktree list: %w", err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("worktree: git worktree list: %w", err)
	}
	m := map[string]registration{}
	cur := ""
	for _, f := range git.SplitZ(out) {
		switch {
		case strings.HasPrefix(f, "worktree "):
			cur = strings.TrimPrefix(f, "worktree ")
			m[cur] = registration{}
		case cur == "":
		case strings.HasPrefix(f, "branch "):
			e := m[cur]
			e.branch = strings.TrimPrefix(f, "branch ")
			m[cur] = e
		case strings.HasPrefix(f, "locked "):
			e := m[cur]
			e.reason = strings.TrimPrefix(f, "locked ")
			m[cur] = e
		}
	}
	return m, nil
}

// listTries bounds the asks of registered: about a second in all.
const listTries = 25

// halfWritten reports whether git failed on a file of a worktree entry
// that another git process is writing or deleting (its commondir created
// but still empty, its locked file gone between git's look and its read).
func halfWritten(stderr string) bool {
	return strings.Contains(stderr, "failed to read") && strings.Contains(stderr, "worktrees/")
}

// lockReason is the reason git records for locking a worktree wiggum made
// for story: the only record of its story until the worktree is leased and
// its MetaFile written.
func lockReason(story string) string {
	return "wiggum worker (pid " + strconv.Itoa(os.Getpid()) + ") for story " + strconv.Quote(story)
}

// Wiggums reports whether the linked worktree whose administrative
// directory (.git/worktrees/NAME) is admin, checked out at dir, is one of
// wiggum's: locked from its creation to its removal with a reason that
// names its story, its MetaFile recorded once leased, its branch under
// BranchPrefix (which its removal, unlocked, still has).
func Wiggums(admin, dir string) bool {
	if reason, err := statefile.ReadFile(filepath.Join(admin, "locked")); err == nil && storyOfReason(strings.TrimRight(string(reason), "\n")) != "" {
		return true
	}
	if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(MetaFile))); err == nil {
		return true
	}
	head, _ := statefile.ReadFile(filepath.Join(admin, "HEAD"))
	return strings.HasPrefix(string(head), "ref: "+BranchPrefix)
}

// storyOfReason is the story a lockReason names, or "".
func storyOfReason(reason string) string {
	const sep = ") for story "
	i := strings.Index(reason, sep)
	if !strings.HasPrefix(reason, "wiggum worker (") || i < 0 {
		return ""
	}
	story, err := strconv.Unquote(reason[i+len(sep):])
	if err != nil {
		return ""
	}
	return story
}

// CheckedOut returns the root of the worktree that has ref checked out, or "".
func CheckedOut(ctx context.Context, repo *git.Repo, ref string) (string, error) {
	reg, err := registered(ctx, repo)
	if err != nil {
		return "", err
	}
	for path, e := range reg {
		if e.branch == ref {
			return path, nil
		}
	}
	return "", nil
}

// Home returns the working tree whose wiggum directory holds the
// worktrees: repo itself, or - called from inside a worker's worktree - the
// tree that created it.
func Home(ctx context.Context, repo *git.Repo) *git.Repo {
	sep := string(filepath.Separator) + filepath.FromSlash(Dir) + string(filepath.Separator)
	i := strings.LastIndex(repo.Root, sep)
	if i <= 0 {
		return repo
	}
	parent, err := git.Open(ctx, repo.Root[:i])
	if err != nil || parent.Root != repo.Root[:i] || parent.CommonDir != repo.CommonDir {
		return repo
	}
	return parent
}
