package checkpoint

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// A checkpoint killed after moving wiggum's checkpoint ref but before its
// record was renamed into place leaves the old checkpoint.json beside a
// pending record that agrees with the ref. The rollback that follows must
// judge the checkpoint that took effect - not refuse it as "changed by
// hand", and not roll back to the older one (which would discard the work
// committed between the two).
func TestRollbackAfterCheckpointKilledMidRecord(t *testing.T) {
	r := newRepo(t)
	tok := "s1"
	mustSave(t, r, tok)
	r.sessionCommit(tok, "between.txt", "committed between the two checkpoints\n")

	// The second checkpoint, stopped where a SIGKILL can stop it: the
	// pending record written and the ref moved, the rename not done.
	r.write("wip.txt", "uncommitted at the second checkpoint\n")
	second := mustSave(t, r, tok)
	final := r.st.RuntimePath(layout.CheckpointFile)
	pending := r.st.RuntimePath(layout.CheckpointPending)
	data, err := os.ReadFile(final)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pending, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("update-ref", r.st.snapshotRef(), second.recordedValue())
	// checkpoint.json still names the first checkpoint.
	first := *second
	first.Head, first.Snapshot, first.Untracked = r.git("rev-parse", "HEAD~1"), "", nil
	if err := statefile.WriteJSON(final, &first); err != nil {
		t.Fatal(err)
	}

	r.write("later.txt", "the agent's later file\n")
	r.t.Setenv(layout.SessionEnv, tok)
	if _, err := r.st.Rollback(ctx, RollbackOptions{Session: tok}); err != nil {
		t.Fatalf("rollback after a checkpoint killed mid-record: %v", err)
	}
	if !r.exists("between.txt") || r.read("wip.txt") != "uncommitted at the second checkpoint\n" {
		t.Fatal("the rollback went past the checkpoint that took effect")
	}
	if r.exists("later.txt") {
		t.Fatal("the rollback kept a file made after the checkpoint")
	}
}

// A pending record whose ref never moved (killed before update-ref) never
// took effect: the rollback judges checkpoint.json, and an edited pending
// record cannot stand in for it.
func TestPendingRecordWithoutItsRefIsIgnored(t *testing.T) {
	r := newRepo(t)
	cp := mustSave(t, r, "")
	r.commit("agent.txt", "agent\n", "agent work")
	forged := *cp
	forged.Head = r.git("rev-parse", "HEAD")
	if err := statefile.WriteJSON(r.st.RuntimePath(layout.CheckpointPending), &forged); err != nil {
		t.Fatal(err)
	}
	got, _, err := r.st.currentCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Head != cp.Head {
		t.Fatalf("a pending record the ref does not name was taken: %s, want %s", got.Head, cp.Head)
	}
}

// A checkpoint SIGKILLed while its `git update-ref` child runs leaves that
// child behind: its exec closed the lock, so it can move wiggum's ref after
// a rollback has taken the lock and read the ref to choose between the
// record and the pending one. The rollback judges its choice against the
// value it chose by; a second read straddling the move would call the
// record a hand edit and refuse (exit 4) a rollback that is safe.
func TestRollbackJudgesTheRefItChoseBy(t *testing.T) {
	r := newRepo(t)
	tok := "s1"
	first := mustSave(t, r, tok)

	// The killed second checkpoint: its pending record written, its ref not
	// moved yet - the orphaned update-ref moves it right after the
	// rollback's read, simulated by a git that does both.
	r.write("README", "changed at the second checkpoint\n")
	snap := r.git("stash", "create")
	second := *first
	second.Snapshot = snap
	if err := statefile.WriteJSON(r.st.RuntimePath(layout.CheckpointPending), &second); err != nil {
		t.Fatal(err)
	}
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	ref := r.st.snapshotRef()
	script := "#!/bin/sh\n" +
		"case \"$*\" in *'rev-parse --verify --quiet " + ref + "'*)\n" +
		"  out=$(\"" + realGit + "\" \"$@\") || exit $?\n" +
		"  \"" + realGit + "\" update-ref " + ref + " " + snap + " || exit 1\n" +
		"  echo \"$out\"; exit 0;;\n" +
		"esac\n" +
		"exec \"" + realGit + "\" \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(layout.SessionEnv, tok)

	res, err := r.st.Rollback(ctx, RollbackOptions{Session: tok, DryRun: true})
	if err != nil {
		t.Fatalf("rollback while an orphaned update-ref moved the ref: %v", err)
	}
	if res.Checkpoint.Head != first.Head || res.Checkpoint.Snapshot != "" {
		t.Fatalf("judged %+v, want the record the ref named when it was read", res.Checkpoint)
	}
	if got := r.git("rev-parse", ref); got != snap {
		t.Fatalf("the simulated orphan did not move the ref (%s); the test proves nothing", got)
	}
}

// A checkpoint writes its record into the pending file in place and swaps
// it with checkpoint.json: checkpoints after the first two create and free
// no file (the two record files take turns under the two names), the
// pending file is left empty, and every record reads back whole.
func TestCheckpointReusesItsRecordFiles(t *testing.T) {
	r := newRepo(t)
	final := r.st.RuntimePath(layout.CheckpointFile)
	pending := r.st.RuntimePath(layout.CheckpointPending)
	inodes := map[uint64]bool{}
	for i := range 5 {
		r.commit(fmt.Sprintf("f%d.txt", i), "x\n", fmt.Sprint("work ", i))
		if i%2 == 1 {
			r.write("wip.txt", fmt.Sprint("dirty ", i, "\n")) // a snapshot, a longer record
		}
		cp := mustSave(t, r, "s1")
		got, err := r.st.Load()
		if err != nil || got.Head != cp.Head || got.Snapshot != cp.Snapshot {
			t.Fatalf("checkpoint %d read back as %+v, %v; want %+v", i, got, err, cp)
		}
		// The first is renamed into place (nothing to swap with yet).
		if fi, err := os.Stat(pending); (i > 0 && err != nil) || (err == nil && fi.Size() != 0) {
			t.Fatalf("checkpoint %d left the pending file %v, %v; want it empty", i, fi, err)
		}
		fi, err := os.Stat(final)
		if err != nil {
			t.Fatal(err)
		}
		inodes[fi.Sys().(*syscall.Stat_t).Ino] = true
	}
	if len(inodes) != 2 {
		t.Errorf("%d files took checkpoint.json's name over 5 checkpoints, want 2 taking turns", len(inodes))
	}
}

// A checkpoint killed while writing its pending record (before its ref
// moved) leaves a torn pending file: the rollback judges checkpoint.json
// and goes ahead. One killed after the swap, before the pending file was
// emptied, leaves the previous record there, whole: the ref no longer
// names it, so it loses to checkpoint.json.
func TestLeftoverPendingRecordsLose(t *testing.T) {
	r := newRepo(t)
	first := mustSave(t, r, "s1")
	firstData, err := os.ReadFile(r.st.RuntimePath(layout.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	r.sessionCommit("s1", "between.txt", "between\n")
	second := mustSave(t, r, "s1")
	pending := r.st.RuntimePath(layout.CheckpointPending)
	for name, data := range map[string][]byte{
		"previous record": firstData,
		"torn record":     firstData[:len(firstData)/2],
	} {
		if err := os.WriteFile(pending, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, _, err := r.st.currentCheckpoint(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Head != second.Head || got.Head == first.Head {
			t.Fatalf("%s in the pending file: judged %s, want the second checkpoint %s", name, got.Head, second.Head)
		}
	}
	r.write("later.txt", "agent\n")
	t.Setenv(layout.SessionEnv, "s1")
	if _, err := r.st.Rollback(ctx, RollbackOptions{Session: "s1"}); err != nil {
		t.Fatalf("rollback beside a torn pending record: %v", err)
	}
	if !r.exists("between.txt") || r.exists("later.txt") {
		t.Fatal("the rollback did not return to the second checkpoint")
	}
}

// Two kills in a row: the first checkpoint killed after moving its ref but
// before the swap (its record left pending), the next one killed while
// writing over the pending file. The next checkpoint first puts the record
// that took effect in place, so the rollback still finds it.
func TestCheckpointKilledTwiceKeepsTheRecordInEffect(t *testing.T) {
	r := newRepo(t)
	tok := "s1"
	first := mustSave(t, r, tok)
	firstData, err := os.ReadFile(r.st.RuntimePath(layout.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	r.sessionCommit(tok, "between.txt", "committed between the two checkpoints\n")
	second := mustSave(t, r, tok)
	final := r.st.RuntimePath(layout.CheckpointFile)
	pending := r.st.RuntimePath(layout.CheckpointPending)
	// The first kill: the second checkpoint's record pending, the ref on
	// it, checkpoint.json still the first.
	if err := os.Rename(final, pending); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(final, firstData, 0o644); err != nil {
		t.Fatal(err)
	}
	// The second kill: what a checkpoint does before it writes the pending
	// file, then a write cut short.
	if err := statefile.WithLock(pending, func() error { return r.st.settle(ctx, pending) }); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pending, []byte(`{"head": "`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := r.st.Load()
	if err != nil || got.Head != second.Head || got.Head == first.Head {
		t.Fatalf("checkpoint.json after the second kill: %+v, %v; want the second checkpoint", got, err)
	}
	r.write("later.txt", "the agent's later file\n")
	t.Setenv(layout.SessionEnv, tok)
	if _, err := r.st.Rollback(ctx, RollbackOptions{Session: tok}); err != nil {
		t.Fatalf("rollback after two killed checkpoints: %v", err)
	}
	if !r.exists("between.txt") || r.exists("later.txt") {
		t.Fatal("the rollback did not return to the checkpoint that took effect")
	}
}

// An agent's rm -rf .ralph took the checkpoint record. Reinstate puts the
// record the loop made back while wiggum's checkpoint ref still names it,
// and the rollback then works; it never puts back one a newer checkpoint
// replaced (the ref moved), and never writes over a record in place.
func TestReinstateDeletedRecord(t *testing.T) {
	r := newRepo(t)
	tok := "s1"
	r.write("wip.txt", "uncommitted at the checkpoint\n")
	cp := mustSave(t, r, tok)
	if ok, err := r.st.Reinstate(ctx, cp); ok || err != nil {
		t.Fatalf("Reinstate with the record in place: %v %v", ok, err)
	}
	r.write("later.txt", "the agent's file\n")
	if err := os.RemoveAll(r.st.Path(layout.StateDir)); err != nil {
		t.Fatal(err)
	}
	r.t.Setenv(layout.SessionEnv, tok)
	if _, err := r.st.Rollback(ctx, RollbackOptions{Session: tok}); err == nil {
		t.Fatal("the naive design: a rollback with the record gone is not refused?")
	}
	if ok, err := r.st.Reinstate(ctx, cp); !ok || err != nil {
		t.Fatalf("Reinstate with the record gone: %v %v", ok, err)
	}
	if _, err := r.st.Rollback(ctx, RollbackOptions{Session: tok}); err != nil {
		t.Fatalf("rollback after Reinstate: %v", err)
	}
	if r.exists("later.txt") || r.read("wip.txt") != "uncommitted at the checkpoint\n" {
		t.Fatal("the rollback did not return to the checkpoint")
	}

	// A newer checkpoint (the agent's own, in its session) moved the ref,
	// then its record went too: the loop's older record is not put back.
	cp = mustSave(t, r, tok)
	r.sessionCommit(tok, "newer.txt", "committed after the first checkpoint\n")
	mustSave(t, r, tok)
	if err := os.RemoveAll(r.st.Path(layout.StateDir)); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.st.Reinstate(ctx, cp); ok || err != nil {
		t.Fatalf("Reinstate of a record a newer checkpoint replaced: %v %v", ok, err)
	}
	if r.exists(".ralph/wiggum/checkpoint.json") {
		t.Fatal("an older record was written")
	}
}
