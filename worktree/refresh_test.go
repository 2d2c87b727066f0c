package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Refresh brings a worktree made ahead to its target's new tip - branch,
// index and files - and records the move so that a run killed on either
// side of it leaves a worktree the next run removes without saving it or
// taking it for landed work.
func TestRefreshAheadWorktree(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	const target = "refs/heads/main"
	tip0 := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "main"))
	ws, errs := CreateMany(ctx, repo, []Request{{Story: "US-1", Target: target}, {Story: "US-2", Target: target}}, nil, nil)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	w, w2 := ws[0], ws[1]
	if moved, err := w.Refresh(ctx, tip0); err != nil || moved {
		t.Fatalf("refresh at the tip: moved %v, %v", moved, err)
	}
	// A story lands on main meanwhile.
	write(t, repo.Root, "landed.txt", "landed\n")
	gitT(t, repo.Root, "add", "landed.txt")
	gitT(t, repo.Root, "commit", "-q", "-m", "landed")
	tip1 := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "main"))

	moved, err := w.Refresh(ctx, tip1)
	if err != nil || !moved {
		t.Fatalf("refresh after a landing: moved %v, %v", moved, err)
	}
	if head := strings.TrimSpace(gitT(t, w.Path, "rev-parse", "HEAD")); head != tip1 {
		t.Errorf("worktree at %s, want %s", head, tip1)
	}
	if b := strings.TrimSpace(gitT(t, w.Path, "rev-parse", "--abbrev-ref", "HEAD")); b != "wiggum/US-1" {
		t.Errorf("worktree on %s after the refresh", b)
	}
	if !exists(filepath.Join(w.Path, "landed.txt")) {
		t.Error("the landed file is not in the refreshed worktree")
	}
	if s := gitT(t, w.Path, "status", "--porcelain"); s != "" {
		t.Errorf("refreshed worktree is dirty:\n%s", s)
	}
	var m Meta
	if err := statefile.ReadJSON(w.State.Path(MetaFile), &m, nil); err != nil {
		t.Fatal(err)
	}
	if m.Base != tip1 || m.Prev != tip0 || w.Base != tip1 {
		t.Errorf("recorded base %s prev %s (worker %s), want %s and %s", m.Base, m.Prev, w.Base, tip1, tip0)
	}

	// w2 is killed between recording its new base and moving its branch.
	meta := w2.Meta
	meta.Base, meta.Prev = tip1, tip0
	if err := statefile.WriteJSON(w2.State.Path(MetaFile), meta); err != nil {
		t.Fatal(err)
	}
	// Both die: their leases go with the process.
	_ = w.Lease.Release()
	_ = w2.Lease.Release()
	res, err := Reclaim(ctx, repo, target, ReclaimOptions{Landed: func(rc Reclaimed) error {
		t.Errorf("a worktree nobody worked in was taken for landed work: %+v", rc)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("reclaimed %+v, want both worktrees", res)
	}
	for _, rc := range res {
		if rc.Progressed || rc.Merged || rc.Backup != "" || rc.Live {
			t.Errorf("%s: %+v, want removed with nothing saved", rc.Story, rc)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(repo.Root, Dir)); len(ents) != 0 {
		t.Errorf("%d worktrees left", len(ents))
	}
	if b := gitT(t, repo.Root, "for-each-ref", "refs/heads/wiggum/", "refs/wiggum/backup/"); b != "" {
		t.Errorf("left behind:\n%s", b)
	}
}
