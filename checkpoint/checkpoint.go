package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/lazyre"

	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// snapshotRef is wiggum's own record of the checkpoint: it points at the
// snapshot commit (which it keeps from git gc) or, for a clean tree, at the
// checkpoint commit.
func (s *State) snapshotRef() string { return RecordRef(s.Repo.GitDir, s.Repo.CommonDir) }

// RecordRef is the checkpoint ref of the working tree whose git dir is
// gitDir. Refs are shared by all worktrees, so each worktree gets its own:
// parallel workers saving at the same moment must not contend for one ref.
// Whoever removes a worktree deletes its ref with it.
func RecordRef(gitDir, commonDir string) string {
	id := "main"
	if filepath.Clean(gitDir) != filepath.Clean(commonDir) {
		id = "worktree-" + filepath.Base(gitDir)
	}
	return "refs/wiggum/checkpoints/" + id
}

// ErrNoCheckpoint means no rollback point has been recorded.
var ErrNoCheckpoint = errors.New("no checkpoint recorded; run 'wiggum checkpoint' first")

// Checkpoint is a recorded rollback point.
type Checkpoint struct {
	Head    string    `json:"head"`
	Branch  string    `json:"branch"` // full ref; "" when taken detached
	Session string    `json:"session,omitempty"`
	Time    time.Time `json:"time"`
	// Snapshot is a commit whose tree is the working tree at checkpoint
	// time (tracked and untracked, not ignored); "" when the tree was clean.
	Snapshot string `json:"snapshot,omitempty"`
	// Untracked lists the untracked, not ignored files present then.
	Untracked []string `json:"untracked,omitempty"`
	// Submodules lists the submodules that had changes then (new
	// commits, changed or new files): a rollback leaves those as they
	// are, since the checkpoint does not record their changes.
	Submodules []string `json:"submodules,omitempty"`
	// AssumeUnchanged and SkipWorktree list the files so flagged in the
	// index whose changes the snapshot holds (see withHidden): a rollback
	// flags them again if the flag is gone, so their content stays out of
	// git status and out of the next commit, as the person had it.
	AssumeUnchanged []string `json:"assume_unchanged,omitempty"`
	SkipWorktree    []string `json:"skip_worktree,omitempty"`
}

// Hidden lists the files the checkpoint holds that git status does not
// show: its AssumeUnchanged and SkipWorktree files.
func (c *Checkpoint) Hidden() []string {
	return append(slices.Clip(c.AssumeUnchanged), c.SkipWorktree...)
}

var shaRE = lazyre.New(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

func (c *Checkpoint) check() error {
	if !shaRE().MatchString(c.Head) {
		return fmt.Errorf("head %q is not a commit id", c.Head)
	}
	if c.Snapshot != "" && !shaRE().MatchString(c.Snapshot) {
		return fmt.Errorf("snapshot %q is not a commit id", c.Snapshot)
	}
	if c.Branch != "" && !strings.HasPrefix(c.Branch, "refs/") {
		return fmt.Errorf("branch %q is not a ref", c.Branch)
	}
	if c.Time.IsZero() {
		return errors.New("no time")
	}
	for _, p := range c.Hidden() {
		if !git.TreePath(p) {
			return fmt.Errorf("hidden file %q is not a path in the tree", p)
		}
	}
	return nil
}

// SaveOptions tunes Save.
type SaveOptions struct {
	AllowDetached bool
}

// Save records the current state as the rollback point. The caller must hold
// the agent lock or act inside its session.
func (s *State) Save(ctx context.Context, session string, opts SaveOptions) (*Checkpoint, error) {
	return s.StartSave(ctx).Finish(session, opts)
}

// Saving is a checkpoint whose git has started: its status reads the
// working tree while the caller does work of its own that changes nothing
// git sees (wiggum's runtime files). Finish or Abandon must follow.
type Saving struct {
	s      *State
	ctx    context.Context
	status func() (*git.Status, error)
	move   *git.Started
}

// StartSave starts a checkpoint's git: the status that reads the working
// tree (which also refreshes the index's stat data, so neither the
// snapshot nor the rollback's hashes an unchanged file twice) and, beside
// it, the record ref's update-ref, which waits for its update (see
// moveRecordRef).
func (s *State) StartSave(ctx context.Context) *Saving {
	return &Saving{s: s, ctx: ctx, status: s.Repo.StartRefreshStatus(ctx), move: s.Repo.Start(ctx, nil, recordRefArgs...)}
}

// StartSaveClean is StartSave for a working tree its caller knows is
// clean at head on branch (a full ref): a worktree it checked out itself
// and nobody has written in since, its files exactly head's. No status
// reads the tree; the checkpoint records head and no snapshot, as a
// status of that tree would have it record.
func (s *State) StartSaveClean(ctx context.Context, head, branch string) *Saving {
	known := &git.Status{Head: head, Branch: branch}
	return &Saving{s: s, ctx: ctx, status: func() (*git.Status, error) { return known, nil }, move: s.Repo.Start(ctx, nil, recordRefArgs...)}
}

// Abandon stops a checkpoint that will not be finished: the update-ref
// unheard, the status waited for.
func (p *Saving) Abandon() {
	if p.status != nil {
		p.move.Abandon()
		_, _ = p.status()
		p.status = nil
	}
}

// Finish records the state the status read as the rollback point (Save).
func (p *Saving) Finish(session string, opts SaveOptions) (*Checkpoint, error) {
	s, ctx, move := p.s, p.ctx, p.move
	defer move.Abandon() // a checkpoint that stops early: its update-ref unheard
	now, err := p.status()
	p.status = nil
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read HEAD and status: %w", err)
	}
	now = s.withHidden(now)
	head, branch := now.Head, now.Branch
	if head == "" {
		return nil, badinput.Errorf("checkpoint: the repository has no commits yet; commit something first")
	}
	if branch == "" && !opts.AllowDetached {
		return nil, badinput.Errorf("checkpoint: HEAD is detached; switch to a branch or pass --allow-detached")
	}
	if op := s.Repo.InProgress(); op != "" {
		return nil, badinput.Errorf("checkpoint: a %s is in progress; finish or abort it first", op)
	}
	cp := &Checkpoint{Head: head, Branch: branch, Session: session, Time: time.Now().UTC()}
	recorded := head
	if now.Dirty() {
		snap, _, _, _, err := s.snapshot(ctx, now, "wiggum checkpoint snapshot", false, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: snapshot the working tree: %w", err)
		}
		cp.Snapshot, cp.Untracked, recorded = snap, now.Untracked, snap
		cp.Submodules = now.ChangedSubmodules()
		for _, c := range now.Changes {
			if c.AssumeUnchanged {
				cp.AssumeUnchanged = append(cp.AssumeUnchanged, c.Path)
			}
			if c.SkipWorktree {
				cp.SkipWorktree = append(cp.SkipWorktree, c.Path)
			}
		}
	}
	if err := s.record(ctx, cp, recorded, move); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return cp, nil
}

// record writes cp as the checkpoint and points wiggum's checkpoint ref at
// recorded. The ref is wiggum's own record of the checkpoint: a rollback
// refuses a checkpoint file that does not agree with it. It also keeps the
// snapshot from being pruned by git gc. The record and the ref cannot
// move together, so the new record is written aside first, into the
// pending file: a checkpoint killed after moving the ref leaves a pending
// record that agrees with it, and a rollback takes that one (see
// currentCheckpoint); one killed before leaves a pending record the ref
// does not name (whole or torn), which never took effect.
//
// The pending file is rewritten in place and then swapped with
// checkpoint.json (statefile.Stage, Exchange), and emptied: a loop's
// checkpoint creates and frees no file. An flock keeps two checkpoints of
// one session from writing it at once.
func (s *State) record(ctx context.Context, cp *Checkpoint, recorded string, move *git.Started) error {
	pending, err := s.Runtime(layout.CheckpointPending)
	if err != nil {
		return err
	}
	data, err := statefile.Encode(cp)
	if err != nil {
		return err
	}
	return statefile.WithLock(pending, func() error {
		if err := s.settle(ctx, pending); err != nil {
			return err
		}
		// The iteration's one fsync. A SIGKILL needs none (the kernel
		// keeps what was written); a power cut does: git may have put the
		// moved ref on disk, and the record it names must be there, whole,
		// for the rollback and the resumed run to trust.
		if err := statefile.Stage(pending, data, true); err != nil {
			return fmt.Errorf("write %s: %w", pending, err)
		}
		if err := s.moveRecordRef(ctx, recorded, move); err != nil {
			return err
		}
		if err := statefile.Exchange(pending, s.RuntimePath(layout.CheckpointFile)); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		// The pending file now holds the previous record, which the ref no
		// longer names; emptied, it is one a rollback skips without asking
		// git for the ref. Left whole (a kill right here), it is judged
		// against the ref like any pending record and loses.
		_ = statefile.Truncate(pending)
		return nil
	})
}

// recordRefArgs is moveRecordRef's git command line: `update-ref --stdin`,
// which acts only at the end of its input, so it can start before the
// update is known (started ahead, as Save does, its start-up overlaps the
// status; until it is given its update it has done nothing).
var recordRefArgs = []string{"update-ref", "-m", "wiggum checkpoint", "--stdin"}

// moveRecordRef points the checkpoint ref at value, compare-and-swap from
// the value it has now. The agent lock keeps other wiggums out, but not the
// git children of a checkpoint killed mid-update-ref: such an orphan can
// still take the ref's lock and write after its parent died. With the old
// value given, an orphan that comes too late changes nothing, and one that
// got in first makes this update fail and retry from what it wrote, so
// the ref ends at the newest record, which the pending record names.
// started, when not nil, is recordRefArgs' git started ahead, given the
// first attempt.
func (s *State) moveRecordRef(ctx context.Context, value string, started *git.Started) error {
	ref := s.snapshotRef()
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 20 * time.Millisecond)
		}
		old, ok := s.Repo.RefValue(ref)
		if !ok {
			if old, err = s.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", ref); err != nil {
				var ge *git.Error
				if !errors.As(err, &ge) || ge.Status() != 1 {
					return err
				}
				old = "" // none yet
				// Or one that no longer resolves (a disk hiccup, a sync
				// tool wrote over it): git can neither update nor delete
				// it ("reference broken"), and every checkpoint - every
				// run - would fail on it. It is wiggum's own record and
				// proves nothing any more (a rollback refuses it):
				// removed, to be written anew.
				s.dropBrokenRef(ref)
			}
		}
		if old == "" {
			old = strings.Repeat("0", len(value)) // must not exist
		}
		tx := []byte("update " + ref + " " + value + " " + old + "\n")
		if started != nil {
			_, err = started.Finish(tx)
			started = nil
		} else {
			_, err = s.Repo.RunEnv(ctx, nil, tx, recordRefArgs...)
		}
		if err == nil {
			return nil
		}
	}
	return err
}

// dropBrokenRef removes ref's loose file when it holds no object id: a
// ref git calls broken. A ref that holds one is left to git.
func (s *State) dropBrokenRef(ref string) {
	path := filepath.Join(s.Repo.CommonDir, filepath.FromSlash(ref))
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	v := strings.TrimSpace(string(data))
	if strings.HasPrefix(v, "ref: ") || ((len(v) == 40 || len(v) == 64) && strings.Trim(v, "0123456789abcdef") == "") {
		return
	}
	_ = os.Remove(path)
}

// settle puts a pending record that took effect in place before the
// pending file is rewritten: a checkpoint killed between moving its ref
// and the swap leaves the only record the ref names in the pending file,
// and a second checkpoint killed while writing over it would otherwise
// leave no record the ref names (a rollback refused as a hand edit). A
// pending record that is empty, torn, or not the one the ref names never
// took effect and is left to be overwritten; so is everything when
// checkpoint.json is damaged, which stays an error until a checkpoint
// completes.
func (s *State) settle(ctx context.Context, pending string) error {
	if fi, err := os.Stat(pending); err != nil || fi.Size() == 0 {
		return nil // the usual case: emptied by the last checkpoint
	}
	var p Checkpoint
	if statefile.ReadJSON(pending, &p, func() error { return p.check() }) != nil {
		return nil
	}
	ref, err := s.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", s.snapshotRef())
	if err != nil || ref != p.recordedValue() {
		return nil
	}
	cp, err := s.Load()
	if errors.Is(err, ErrNoCheckpoint) {
		err = nil
	}
	if err != nil || (cp != nil && cp.recordedValue() == ref) {
		return nil
	}
	if err := statefile.Exchange(pending, s.RuntimePath(layout.CheckpointFile)); err != nil {
		return fmt.Errorf("record the checkpoint a killed one left pending: %w", err)
	}
	return nil
}

// recordedValue is what wiggum's checkpoint ref points at for cp.
func (cp *Checkpoint) recordedValue() string {
	if cp.Snapshot != "" {
		return cp.Snapshot
	}
	return cp.Head
}

// currentCheckpoint is the rollback point a rollback judges: the record
// in checkpoint.json, or - when a checkpoint was killed between moving its
// ref and renaming its record into place - the pending record that agrees
// with the ref. A pending record the ref does not name never took effect.
//
// When it had to read the ref to choose, it returns the value it read, and
// the caller judges the choice against that value, not a second read: a
// git child of a checkpoint killed mid-update can still move the ref after
// its parent died (its exec closed the lock), and two reads straddling
// that move would call the chosen record a hand edit.
func (s *State) currentCheckpoint(ctx context.Context) (cp *Checkpoint, ref string, err error) {
	cp, err = s.Load()
	if err != nil && !errors.Is(err, ErrNoCheckpoint) {
		return nil, "", err
	}
	var pending Checkpoint
	perr := statefile.ReadJSON(s.RuntimePath(layout.CheckpointPending), &pending, func() error { return pending.check() })
	if perr != nil {
		return cp, "", err // no pending record (or a torn one, which never took effect)
	}
	ref, rerr := s.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", s.snapshotRef())
	if rerr != nil {
		return cp, "", err
	}
	if ref == pending.recordedValue() && (cp == nil || ref != cp.recordedValue()) {
		return &pending, ref, nil
	}
	return cp, ref, err
}

// Unverified is why a rollback would not trust the checkpoint cp, the
// record wiggum status shows: wiggum's checkpoint ref is missing, broken,
// names an object that is gone, or names another state ("" when it
// agrees). It is the rollback's rule (recordMismatch) on the ref alone:
// the snapshot's parent, which the rollback also checks, is not read.
func (s *State) Unverified(ctx context.Context, cp *Checkpoint) string {
	rec, err := s.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", s.snapshotRef()+"^{object}")
	if err != nil {
		rec = ""
	}
	if rec != "" && rec != cp.recordedValue() {
		// A checkpoint killed between moving the ref and renaming its
		// record into place: the pending record the ref names is the one
		// a rollback takes.
		if cur, _, err := s.currentCheckpoint(ctx); err == nil && cur != nil && cur.recordedValue() == rec {
			return ""
		}
	}
	return recordMismatch(&rollbackFacts{Checkpoint: cp, Recorded: rec, RecordRef: s.snapshotRef(), SnapshotParent: cp.Head})
}

// Reinstate writes cp back as the checkpoint record when the record is
// gone - an agent's rm -rf .ralph, say, which would leave the rollback of
// its failed attempt refused ("no checkpoint recorded") and the run
// stopped - or holds anything else (an agent's write through a link), and
// wiggum's checkpoint ref still names cp. The ref is
// wiggum's own record, outside the tree: the file put back is the one that
// was lost, never an older one (a newer checkpoint moved the ref, and then
// nothing is written). It reports whether it wrote the record. The caller
// holds the agent lock and knows cp as the one it recorded.
func (s *State) Reinstate(ctx context.Context, cp *Checkpoint) (bool, error) {
	if cp == nil {
		return false, nil
	}
	cur, err := s.Load()
	switch {
	case err == nil && reflect.DeepEqual(*cur, *cp):
		return false, nil
	case errors.Is(err, ErrNoCheckpoint):
		var pending Checkpoint
		if statefile.ReadJSON(s.RuntimePath(layout.CheckpointPending), &pending, func() error { return pending.check() }) == nil {
			return false, nil // currentCheckpoint judges a whole pending record against the ref
		}
	}
	// Gone, damaged, or another record than cp (an agent's write through
	// a link or a patch put {} there, and the failed attempt's rollback
	// could not be made): put back when wiggum's ref still proves cp.
	ref, err := s.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", s.snapshotRef())
	if err != nil || ref != cp.recordedValue() {
		return false, nil
	}
	if err := statefile.WriteJSON(s.RuntimePath(layout.CheckpointFile), cp); err != nil {
		return false, fmt.Errorf("checkpoint: put the record back: %w", err)
	}
	return true, nil
}

// Reclaim makes cp the checkpoint again when the one recorded since is
// the session's own: a `wiggum checkpoint` the session's agent ran with
// its WIGGUM_SESSION, which acts as part of the session and is no
// tampering. Such a record names cp's session, is no older than cp, and
// wiggum's checkpoint ref names it. The caller (a run, which owns the
// attempt's rollback point and holds the agent lock) gets its own
// checkpoint back, record and ref, so the attempt's rollback returns to
// where the attempt started. It reports whether it wrote; any other
// record is left as it is (see Reinstate).
func (s *State) Reclaim(ctx context.Context, cp *Checkpoint) (bool, error) {
	if cp == nil || cp.Session == "" {
		return false, nil
	}
	cur, ref, err := s.currentCheckpoint(ctx)
	if err != nil || cur == nil || reflect.DeepEqual(*cur, *cp) {
		return false, nil
	}
	if cur.Session != cp.Session || cur.Time.Before(cp.Time) {
		return false, nil
	}
	if ref == "" {
		if ref, err = s.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", s.snapshotRef()); err != nil {
			return false, nil
		}
	}
	if ref != cur.recordedValue() {
		return false, nil
	}
	if err := s.record(ctx, cp, cp.recordedValue(), nil); err != nil {
		return false, fmt.Errorf("checkpoint: record the attempt's checkpoint again: %w", err)
	}
	return true, nil
}

// Load reads the rollback point: ErrNoCheckpoint when there is none, a
// *CorruptError when the file is damaged.
func (s *State) Load() (*Checkpoint, error) {
	var cp Checkpoint
	err := statefile.ReadJSON(s.RuntimePath(layout.CheckpointFile), &cp, func() error { return cp.check() })
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoCheckpoint
	}
	if err != nil {
		return nil, err
	}
	return &cp, nil
}

// wiggumIdent signs the commits wiggum makes for itself (snapshots and
// backups), so they work in a repository with no identity configured.
var wiggumIdent = []string{
	"GIT_AUTHOR_NAME=wiggum", "GIT_AUTHOR_EMAIL=wiggum@localhost",
	"GIT_COMMITTER_NAME=wiggum", "GIT_COMMITTER_EMAIL=wiggum@localhost",
}
