package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/git"
)

var safeName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)

func checkName(t *testing.T, id string) string {
	t.Helper()
	n, err := Name(id)
	if err != nil {
		return ""
	}
	if !safeName.MatchString(n) || len(n) > maxName || n == "." || n == ".." {
		t.Fatalf("Name(%q) = %q: not a safe name", id, n)
	}
	return n
}

func TestNameHostileIDs(t *testing.T) {
	ids := []string{"US-1", "../../etc/passwd", "..", ".", "/abs/path", "a/b", "-rf", "--force",
		"x.lock", "US 1; rm -rf ~", "$(touch pwned)", "ünïcödé", "refs/heads/main", "HEAD", "@{-1}",
		strings.Repeat("A", 500), "a\\b", "a..b", "~1^2:x", "*?[", "US-1.", "-", "é"}
	seen := map[string]string{}
	for _, id := range ids {
		n := checkName(t, id)
		if n == "" {
			t.Fatalf("Name(%q) failed", id)
		}
		if prev, ok := seen[n]; ok {
			t.Errorf("Name(%q) = Name(%q) = %q", id, prev, n)
		}
		seen[n] = id
	}
	if n, _ := Name("US-1"); n != "US-1" {
		t.Errorf("a plain id changed: %q", n)
	}
	for _, bad := range []string{"", "   ", "a\x00b"} {
		if _, err := Name(bad); err == nil {
			t.Errorf("Name(%q) accepted", bad)
		}
	}
}

func FuzzName(f *testing.F) {
	for _, s := range []string{"US-1", "../x", "a/b/../../c", "-", "\x00", "é/..", strings.Repeat("-", 60)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		checkName(t, id)
	})
}

// Hostile story ids become worktrees inside the wiggum directory on
// branches under wiggum/, and nothing is created anywhere else.
func TestCreateHostileIDsStayInside(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	outside := filepath.Join(filepath.Dir(repo.Root), "escape")
	for _, id := range []string{"../../../escape", "../escape", "/tmp/escape", "US 1; touch pwned", "refs/heads/main"} {
		w, err := Create(ctx, repo, id, "refs/heads/main", nil)
		if err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		if filepath.Dir(w.Path) != filepath.Join(repo.Root, filepath.FromSlash(Dir)) {
			t.Errorf("%q: worktree at %s", id, w.Path)
		}
		if !strings.HasPrefix(w.Branch, BranchPrefix) || strings.Contains(strings.TrimPrefix(w.Branch, BranchPrefix), "/") {
			t.Errorf("%q: branch %s", id, w.Branch)
		}
		if w.Story != id {
			t.Errorf("story recorded as %q, want %q", w.Story, id)
		}
		mu, err := LockRepo(ctx, repo)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Release(ctx, repo); err != nil {
			t.Fatal(err)
		}
		mu.Unlock()
	}
	if exists(outside) || exists("/tmp/escape") || exists(filepath.Join(repo.Root, "pwned")) {
		t.Error("a hostile id created something outside the worktree directory")
	}
	if out := gitT(t, repo.Root, "branch", "--list", "wiggum/*"); out != "" {
		t.Errorf("branches left: %s", out)
	}
	if out := gitT(t, repo.Root, "status", "--porcelain"); out != "" {
		t.Errorf("main tree not clean:\n%s", out)
	}
	if got := gitT(t, repo.Root, "rev-parse", "main"); got != gitT(t, repo.Root, "rev-parse", "HEAD") {
		t.Error("main moved")
	}
}

// A branch left by an earlier run is never reused or overwritten.
func TestCreateKeepsExistingBranch(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	gitT(t, repo.Root, "branch", "wiggum/US-1")
	old := gitT(t, repo.Root, "rev-parse", "wiggum/US-1")
	w, err := Create(ctx, repo, "US-1", "refs/heads/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Lease.Release()
	if w.Branch != BranchPrefix+"US-1-2" || w.Name != "US-1-2" {
		t.Errorf("got branch %s name %s", w.Branch, w.Name)
	}
	if gitT(t, repo.Root, "rev-parse", "wiggum/US-1") != old {
		t.Error("the old branch moved")
	}
}

// Several pruner processes run while worker processes hold leases: every
// live worktree survives, and the worktrees of SIGKILLed workers are
// removed, once, with no pruner failing.
func TestPruneRacesLiveAndKilledWorkers(t *testing.T) {
	repo := newRepo(t)
	type holder struct {
		pid  int
		path string
	}
	var holders []holder
	for i := range 6 {
		cmd, out := startHelper(t, "hold", repo.Root, fmt.Sprintf("US-%d", i))
		line, err := out.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "ready ") {
			t.Fatalf("holder %d: %q %v", i, line, err)
		}
		holders = append(holders, holder{cmd.Process.Pid, strings.TrimSpace(strings.TrimPrefix(line, "ready "))})
	}
	// Half the workers die without cleaning up.
	for _, h := range holders[:3] {
		if err := syscall.Kill(h.pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitGone(t, h.pid)
	}
	infos, err := List(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, in := range infos {
		if in.Held {
			held++
			if in.PID == 0 {
				t.Errorf("%s: held but no holder pid", in.Name)
			}
		}
	}
	if len(infos) != 6 || held != 3 {
		t.Fatalf("list: %d worktrees, %d held: %+v", len(infos), held, infos)
	}
	var wg sync.WaitGroup
	outs := make([]string, 5)
	for i := range outs {
		wg.Go(func() {
			out, err := runPruner(t, repo.Root)
			if err != nil {
				t.Errorf("pruner %d: %v", i, err)
			}
			outs[i] = out
		})
	}
	wg.Wait()
	removed := map[string]int{}
	for _, o := range outs {
		for _, l := range strings.Split(strings.TrimSpace(o), "\n") {
			if name, ok := strings.CutSuffix(l, " removed"); ok {
				removed[name]++
			}
		}
	}
	for i, h := range holders {
		live := i >= 3
		if exists(h.path) != live {
			t.Errorf("%s: exists=%v, want %v", h.path, exists(h.path), live)
		}
		name := filepath.Base(h.path)
		if want := map[bool]int{true: 0, false: 1}[live]; removed[name] != want {
			t.Errorf("%s removed %d times, want %d (outputs %q)", name, removed[name], want, outs)
		}
		if live {
			// The live worker's tree is intact and still git's.
			if out := gitT(t, h.path, "rev-parse", "--show-toplevel"); strings.TrimSpace(out) != h.path {
				t.Errorf("live worktree broken: %s", out)
			}
		}
	}
	if out := gitT(t, repo.Root, "branch", "--list", "wiggum/*"); strings.Count(out, "wiggum/") != 3 {
		t.Errorf("branches: %s", out)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 500 {
		var ws syscall.WaitStatus
		// The helper is our child: reap it so it is really gone.
		if p, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); p == pid {
			return
		}
		if syscall.Kill(pid, 0) != nil {
			return
		}
		sleep()
	}
	t.Fatalf("pid %d did not die", pid)
}

// Many workers create worktrees, commit and merge at the same time: under
// the repository mutex no merge sees another's half-done state, nothing
// conflicts, and every story's commit lands exactly once.
func TestMergesRaceCreation(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	if _, err := checkpoint.Open(ctx, repo.Root); err != nil {
		t.Fatal(err)
	}
	const n = 10
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- createCommitMerge(ctx, repo, fmt.Sprintf("US-%d", i))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	log := gitT(t, repo.Root, "log", "--format=%s", "main")
	for i := range n {
		if c := strings.Count(log, fmt.Sprintf("story US-%d\n", i)); c != 1 {
			t.Errorf("story US-%d landed %d times:\n%s", i, c, log)
		}
		if _, err := os.Stat(filepath.Join(repo.Root, fmt.Sprintf("f-US-%d.txt", i))); err != nil {
			t.Errorf("main tree lacks US-%d's file: %v", i, err)
		}
	}
	if out := gitT(t, repo.Root, "status", "--porcelain"); out != "" {
		t.Errorf("main tree not clean:\n%s", out)
	}
	if out := gitT(t, repo.Root, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", out)
	}
	if out := gitT(t, repo.Root, "branch", "--list", "wiggum/*"); out != "" {
		t.Errorf("merged branches left: %s", out)
	}
}

func createCommitMerge(ctx context.Context, repo *git.Repo, story string) error {
	w, err := Create(ctx, repo, story, "refs/heads/main", nil)
	if err != nil {
		return err
	}
	// Files of other stories sit next to this one's, as in real work.
	if err := os.WriteFile(filepath.Join(w.Path, "f-"+story+".txt"), []byte(story+"\n"), 0o644); err != nil {
		return err
	}
	wrepo := w.State.Repo
	if _, err := wrepo.Run(ctx, "add", "-A"); err != nil {
		return err
	}
	if _, err := wrepo.Run(ctx, "commit", "-q", "-m", "story "+story); err != nil {
		return err
	}
	mu, err := LockRepo(ctx, repo)
	if err != nil {
		return err
	}
	defer mu.Unlock()
	if _, err := Merge(ctx, repo, "refs/heads/main", w.Branch, "Merge "+story); err != nil {
		return fmt.Errorf("%s: %w", story, err)
	}
	rem, err := w.Release(ctx, repo)
	if err != nil {
		return err
	}
	if rem.BranchKept {
		return errors.New(story + ": merged branch kept")
	}
	return nil
}

// A conflicting branch is reported with its paths and nothing changes.
func TestMergeConflictKeepsEverything(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	w, err := Create(ctx, repo, "US-1", "refs/heads/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, w.Path, "README", "worker\n")
	gitT(t, w.Path, "commit", "-q", "-am", "worker")
	write(t, repo.Root, "README", "main\n")
	gitT(t, repo.Root, "commit", "-q", "-am", "main")
	before := gitT(t, repo.Root, "rev-parse", "main", "wiggum/US-1")
	_, err = Merge(ctx, repo, "refs/heads/main", w.Branch, "Merge US-1")
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Paths) != 1 || ce.Paths[0] != "README" {
		t.Fatalf("got %v, want a conflict in README", err)
	}
	if gitT(t, repo.Root, "rev-parse", "main", "wiggum/US-1") != before {
		t.Error("refs moved")
	}
	if out := gitT(t, repo.Root, "status", "--porcelain"); out != "" {
		t.Errorf("main tree touched:\n%s", out)
	}
	rem, err := w.Release(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if !rem.BranchKept || exists(w.Path) {
		t.Errorf("removal %+v: want worktree gone, branch kept", rem)
	}
	if gitT(t, repo.Root, "rev-parse", "wiggum/US-1") == "" {
		t.Error("branch lost")
	}
}

// Local changes in the main tree that a merge would overwrite block it;
// changes elsewhere are carried along.
func TestMergeRespectsLocalChanges(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	write(t, repo.Root, "other", "x\n")
	gitT(t, repo.Root, "add", "other")
	gitT(t, repo.Root, "commit", "-q", "-m", "other")
	w, err := Create(ctx, repo, "US-1", "refs/heads/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Lease.Release()
	write(t, w.Path, "README", "worker\n")
	gitT(t, w.Path, "commit", "-q", "-am", "worker")

	write(t, repo.Root, "README", "user edit\n")
	before := gitT(t, repo.Root, "rev-parse", "main")
	_, err = Merge(ctx, repo, "refs/heads/main", w.Branch, "Merge US-1")
	var be *BlockedError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want blocked", err)
	}
	if gitT(t, repo.Root, "rev-parse", "main") != before {
		t.Error("main moved")
	}
	if data, _ := os.ReadFile(filepath.Join(repo.Root, "README")); string(data) != "user edit\n" {
		t.Errorf("user's edit lost: %q", data)
	}

	// An edit to another file does not block, and survives.
	write(t, repo.Root, "README", "hello\n")
	write(t, repo.Root, "other", "user edit\n")
	m, err := Merge(ctx, repo, "refs/heads/main", w.Branch, "Merge US-1")
	if err != nil || !m.FastForward {
		t.Fatalf("merge: %+v %v", m, err)
	}
	if data, _ := os.ReadFile(filepath.Join(repo.Root, "README")); string(data) != "worker\n" {
		t.Errorf("README = %q", data)
	}
	if out := gitT(t, repo.Root, "status", "--porcelain"); out != " M other\n" {
		t.Errorf("status:\n%s", out)
	}
	// The main tree left the target branch: nothing is merged.
	gitT(t, repo.Root, "checkout", "-q", "-b", "elsewhere")
	if _, err := Merge(ctx, repo, "refs/heads/main", w.Branch, "again"); !errors.As(err, &be) {
		t.Errorf("merge with the target not checked out: %v", err)
	}
}

// A user's git command holding the main tree's index lock for a moment
// delays a merge; it does not fail it.
func TestMergeWaitsOutIndexLock(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	w, err := Create(ctx, repo, "US-1", "refs/heads/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Lease.Release()
	write(t, w.Path, "new", "x\n")
	gitT(t, w.Path, "add", "new")
	gitT(t, w.Path, "commit", "-q", "-m", "new")
	lock := filepath.Join(repo.GitDir, "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = os.Remove(lock)
	}()
	if _, err := Merge(ctx, repo, "refs/heads/main", w.Branch, "Merge US-1"); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(repo.Root, "new")) {
		t.Error("main tree not updated")
	}
}

// The repository mutex excludes other processes, and a holder SIGKILLed in
// the middle of a sequence frees it at once: no stale lock to clean up.
func TestMutexAcrossProcessesAndSIGKILL(t *testing.T) {
	repo := newRepo(t)
	cmd, out := startHelper(t, "mutex", repo.Root)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if mu, err := LockRepo(ctx, repo); err == nil {
		mu.Unlock()
		t.Fatal("took the mutex while another process held it")
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	mu, err := LockRepo(ctx2, repo)
	if err != nil {
		t.Fatalf("mutex not freed by the holder's death: %v", err)
	}
	mu.Unlock()
}

// A merge whose process died after moving the main tree and before moving
// the branch is finished by the next holder of the mutex; a record whose
// merge never touched the tree is dropped; an unreadable one is set aside.
func TestInterruptedMergeIsFinished(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	w, err := Create(ctx, repo, "US-1", "refs/heads/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Lease.Release()
	write(t, w.Path, "new", "x\n")
	gitT(t, w.Path, "add", "new")
	gitT(t, w.Path, "commit", "-q", "-m", "new")
	cur := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "main"))
	tip := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "wiggum/US-1"))
	rec := intent{Tree: repo.Root, Target: "refs/heads/main", Old: cur, New: tip, Message: "Merge US-1"}

	// Never touched the tree: dropped, nothing moves.
	if err := writeIntent(repo, rec); err != nil {
		t.Fatal(err)
	}
	mu, err := LockRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	mu.Unlock()
	if got := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "main")); got != cur || exists(intentPath(repo)) {
		t.Fatalf("untouched merge: main %s, record left %v", got, exists(intentPath(repo)))
	}

	// Died between the steps: the tree holds the merge, the branch not.
	if err := writeIntent(repo, rec); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo.Root, "read-tree", "-m", "-u", cur, tip)
	mu, err = LockRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	mu.Unlock()
	if got := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "main")); got != tip {
		t.Errorf("main = %s, want the merge %s", got, tip)
	}
	if out := gitT(t, repo.Root, "status", "--porcelain"); out != "" {
		t.Errorf("main tree and branch disagree:\n%s", out)
	}
	if exists(intentPath(repo)) {
		t.Error("record left")
	}

	if err := os.WriteFile(intentPath(repo), []byte("{garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	mu, err = LockRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	mu.Unlock()
	if !exists(intentPath(repo)+".corrupt") || exists(intentPath(repo)) {
		t.Error("a corrupt record was not set aside")
	}
}
