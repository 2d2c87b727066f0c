package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/worktree"
)

func parallelOpts(t *testing.T, n int, script string) (*checkpoint.State, Options, *bytes.Buffer) {
	t.Helper()
	st, p := newRepo(t, n)
	o := opts(p, script)
	o.Workers = 3
	var out bytes.Buffer
	o.Out = &out
	return st, o, &out
}

func leftovers(t *testing.T, st *checkpoint.State) {
	t.Helper()
	if s := gitT(t, st.Repo.Root, "status", "--porcelain"); s != "" {
		t.Errorf("main tree not clean:\n%s", s)
	}
	if s := gitT(t, st.Repo.Root, "worktree", "list", "--porcelain"); strings.Count(s, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", s)
	}
	if ents, _ := os.ReadDir(st.Path(worktree.Dir)); len(ents) != 0 {
		t.Errorf("%d entries left in %s", len(ents), worktree.Dir)
	}
	if held, err := st.Probe(); err != nil || held {
		t.Errorf("agent lock still held (%v)", err)
	}
}

// A failed attempt is rolled back in its worktree, saved, recorded in the
// main tree's failure log and retried there with the failure in its
// prompt; only the good attempt reaches main.
func TestParallelRetryInWorktree(t *testing.T) {
	dir := t.TempDir()
	st, o, out := parallelOpts(t, 4, `cat > "`+dir+`/prompt-$WIGGUM_STORY-$WIGGUM_ITERATION"
if [ "$WIGGUM_STORY" = US-2 ] && [ ! -e "`+dir+`/failed" ]; then
	touch "`+dir+`/failed"; echo junk > junk.txt; echo BROKEN-BUILD; exit 1
fi
echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY"`)
	sum, err := Run(context.Background(), st, o)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(sum.Completed) != 4 || sum.Left != 0 || len(sum.Backups) != 1 || sum.MergeTime <= 0 {
		t.Errorf("summary %+v", sum)
	}
	if _, err := os.Stat(filepath.Join(st.Repo.Root, "junk.txt")); err == nil {
		t.Error("the failed attempt's file reached main")
	}
	if files := gitT(t, st.Repo.Root, "show", "--name-only", "--format=", sum.Backups[0]); !strings.Contains(files, "junk.txt") {
		t.Errorf("backup lacks the failed attempt's file:\n%s", files)
	}
	fails, err := session.Failures(st, "US-2")
	if err != nil || len(fails) != 1 || !strings.Contains(fails[0].Output, "BROKEN-BUILD") {
		t.Errorf("failure log in the main tree: %+v %v", fails, err)
	}
	var retry []byte
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "prompt-US-2-") {
			if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); bytes.Contains(b, []byte("previous attempt")) {
				retry = b
			}
		}
	}
	if !bytes.Contains(retry, []byte("BROKEN-BUILD")) {
		t.Errorf("no retry prompt with the failure; output:\n%s", out)
	}
	log := "\n" + gitT(t, st.Repo.Root, "log", "--format=%s")
	for i, id := range []string{"US-1", "US-2", "US-3", "US-4"} {
		if c := strings.Count(log, fmt.Sprintf("\n%s: story %d\n", id, i+1)); c != 1 {
			t.Errorf("%s committed %d times:%s", id, c, log)
		}
	}
	progress, _ := os.ReadFile(st.RuntimePath(ProgressFile))
	if !bytes.Contains(progress, []byte("3 workers")) || !bytes.Contains(progress, []byte("US-2 · failed (agent)")) {
		t.Errorf("progress log:\n%s", progress)
	}
	leftovers(t, st)
}

// A story whose gate always fails is skipped; its worktree and its empty
// branch go, and the run exits 5 with the rest done.
func TestParallelSkipsFailingStory(t *testing.T) {
	st, o, out := parallelOpts(t, 3, `cat >/dev/null; echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY"`)
	o.TestCmd = `[ ! -e f-US-3 ]`
	sum, err := Run(context.Background(), st, o)
	var se *StopError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "skipped") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	if len(sum.Completed) != 2 || len(sum.Skipped) != 1 || sum.Skipped[0] != "US-3" || sum.Left != 1 {
		t.Errorf("summary %+v", sum)
	}
	if b := gitT(t, st.Repo.Root, "branch", "--list", "wiggum/*"); b != "" {
		t.Errorf("branches left: %s", b)
	}
	leftovers(t, st)
}

// Cancelling the run (a signal) stops every agent, rolls back each
// unfinished worktree, and leaves no worktree, branch or lock behind.
func TestParallelInterrupt(t *testing.T) {
	dir := t.TempDir()
	st, o, out := parallelOpts(t, 3, `cat >/dev/null; echo wip > "wip-$WIGGUM_STORY"; touch "`+dir+`/$WIGGUM_STORY"; sleep 30`)
	o.Grace = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			ents, _ := os.ReadDir(dir)
			if len(ents) == 3 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	began := time.Now()
	_, err := Run(ctx, st, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v\n%s", err, out)
	}
	if time.Since(began) > 20*time.Second {
		t.Errorf("agents were not stopped")
	}
	if log := gitT(t, st.Repo.Root, "log", "--format=%s"); log != "init\n" {
		t.Errorf("history changed:\n%s", log)
	}
	if b := gitT(t, st.Repo.Root, "branch", "--list", "wiggum/*"); b != "" {
		t.Errorf("branches left: %s", b)
	}
	if n := strings.Count(gitT(t, st.Repo.Root, "for-each-ref", checkpoint.BackupPrefix), "\n"); n != 3 {
		t.Errorf("%d backups, want one per interrupted worker", n)
	}
	leftovers(t, st)
}

// Another loop holds the agent lock: a parallel run changes nothing.
func TestParallelLockHeld(t *testing.T) {
	st, o, _ := parallelOpts(t, 2, "true")
	l, err := st.Acquire(context.Background(), layout.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := Run(context.Background(), st, o); !errors.As(err, new(*layout.HeldError)) {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(st.Path(worktree.Dir)); err == nil {
		t.Error("worktrees created while locked")
	}
}

// The user edits, in the main tree, a file a story changes: the merge
// would overwrite the edit, so it does not happen; the edit survives and
// the branch is kept and reported.
func TestParallelLocalEditBlocksMerge(t *testing.T) {
	dir := t.TempDir()
	st, o, out := parallelOpts(t, 1, `cat >/dev/null; echo story > shared; touch "`+dir+`/go"; sleep 0.3`)
	o.Workers = 2
	if err := os.WriteFile(filepath.Join(st.Repo.Root, "shared"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, st.Repo.Root, "add", "shared")
	gitT(t, st.Repo.Root, "commit", "-q", "-m", "shared")
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
				_ = os.WriteFile(filepath.Join(st.Repo.Root, "shared"), []byte("user\n"), 0o644)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	_, err := Run(context.Background(), st, o)
	if !errors.As(err, new(*StopError)) {
		t.Fatalf("err = %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "was not merged into") {
		t.Errorf("output:\n%s", out)
	}
	if data, _ := os.ReadFile(filepath.Join(st.Repo.Root, "shared")); string(data) != "user\n" {
		t.Errorf("the user's edit was overwritten: %q", data)
	}
	if b := gitT(t, st.Repo.Root, "branch", "--list", "wiggum/*"); !strings.Contains(b, "wiggum/US-1") {
		t.Errorf("branch not kept: %q", b)
	}
}

// A test failure that an agent hook recorded in the worker's worktree
// reaches the retry prompt, as it does in the serial loop.
func TestParallelRetryPromptSeesWorktreeFailures(t *testing.T) {
	dir := t.TempDir()
	st, o, out := parallelOpts(t, 1, `cat > "`+dir+`/prompt-$WIGGUM_ITERATION"
if [ "$WIGGUM_ITERATION" = 1 ]; then
	mkdir -p .ralph/wiggum
	m=SAW
	echo '{"time":"2100-01-01T00:00:00Z","story":"US-1","source":"test-hook","output":"HOOK-'$m'-FAILURE"}' > .ralph/wiggum/failures.jsonl
	exit 1
fi
echo ok > f`)
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	second, _ := os.ReadFile(filepath.Join(dir, "prompt-2"))
	if !bytes.Contains(second, []byte("HOOK-SAW-FAILURE")) {
		t.Fatalf("retry prompt without the hook's failure:\n%s", second)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "prompt-1"))
	if bytes.Contains(first, []byte("previous attempt")) {
		t.Errorf("first prompt has failure context")
	}
}
