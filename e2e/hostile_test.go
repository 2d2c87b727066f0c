package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A backup ref that cannot be written (its directory is read-only) fails
// the rollback's ref transaction with nothing changed: that is said with
// git's own cause and exit 1, not "HEAD moved while the backup was saved"
// with exit 4 (unsafe), which it was not. Once the directory is writable
// again, the next run resumes: it saves the attempt and does the story.
func TestBackupRefUnwritable(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 1, `cat >/dev/null
echo "$WIGGUM_STORY" >> "$(dirname "$0")/invocations"
echo work > work.txt; echo more >> a.txt
[ -e "$(dirname "$0")/pass" ] || exit 1
`)
	backups := filepath.Join(dir, ".git/refs/wiggum/backup")
	if err := os.MkdirAll(backups, 0o755); err != nil {
		t.Fatal(err)
	}
	as := unprivileged(t, dir, marks)
	if err := os.Chmod(backups, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(backups, 0o755) })
	args := []string{"run", "--plan", "plan.md", "--retries", "1", "--agent-cmd", "sh " + agent}
	r := as(dir, nil, wiggumBin, args...)
	out := r.stdout + r.stderr
	if r.code != 1 || strings.Contains(out, "HEAD moved") || strings.Contains(out, "attempt 2 of") || !strings.Contains(out, "Permission denied") || !strings.Contains(out, "refs/wiggum/backup") {
		t.Fatalf("a read-only backup directory: exit %d, want 1 saying why the backup could not be saved\n%s", r.code, out)
	}
	if st := as(dir, nil, "git", "status", "--porcelain").stdout; !strings.Contains(st, "work.txt") || !strings.Contains(st, "a.txt") {
		t.Errorf("the attempt's work is not left in the tree:\n%s", st)
	}

	if err := os.Chmod(backups, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(marks, "pass"), "")
	giveAway(t, filepath.Join(marks, "pass"))
	r = as(dir, nil, wiggumBin, args...)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "resuming") {
		t.Fatalf("the run after the directory was mended: exit %d, want 0, resumed\n%s%s", r.code, r.stdout, r.stderr)
	}
	if refs := as(dir, nil, "git", "for-each-ref", "refs/wiggum/backup/").stdout; refs == "" {
		t.Error("the failed attempt's work was not saved under refs/wiggum/backup/")
	}
}

// An event log the run cannot write (read-only here; a full disk the same)
// is said once, at the first record it loses: before, the run went on in
// silence, and wiggum report and watch showed the run before as the last.
func TestEventLogUnwritableSaidOnce(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 2, `cat >/dev/null; echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
`)
	as := unprivileged(t, dir, marks)
	if r := as(dir, nil, wiggumBin, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	as(dir, nil, "git", "reset", "-q", "--hard", "HEAD~2")
	events := filepath.Join(dir, ".ralph/wiggum/events.jsonl")
	if err := os.Chmod(events, 0o444); err != nil {
		t.Fatal(err)
	}
	r := as(dir, nil, wiggumBin, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent)
	out := r.stdout + r.stderr
	if r.code != 0 {
		t.Fatalf("second run: exit %d\n%s", r.code, out)
	}
	const warning = "warning: cannot write .ralph/wiggum/events.jsonl (permission denied): this run records no events"
	if n := strings.Count(out, warning); n != 1 {
		t.Fatalf("the run said %d time(s) that it cannot write its event log, want once:\n%s", n, out)
	}
}

// A failed attempt that left a read-only directory tree (go mod download
// with its module cache in the tree makes one) is rolled back whole: the
// directories are made writable to be emptied, as go clean -modcache
// does, and the next attempt goes on. Before, the rollback stopped
// partway (some files removed, others not), said the work was "left in
// the tree as it was", and every later run failed the same way.
func TestRollbackReadOnlyDirectory(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 1, `cat >/dev/null
n=$(cat "$(dirname "$0")/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$(dirname "$0")/n"
echo keep > aaa.txt; echo keep > zzz.txt; echo more >> a.txt
if [ $n = 1 ]; then mkdir -p m/cache/pkg; echo data > m/cache/pkg/a.go; chmod -R a-w m/cache; exit 1; fi
`)
	t.Cleanup(func() { _ = exec.Command("chmod", "-R", "u+w", dir).Run() })
	as := unprivileged(t, dir, marks)
	r := as(dir, nil, wiggumBin, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "attempt 2 of") {
		t.Fatalf("a failed attempt that left a read-only directory: exit %d, want its rollback and a second attempt\n%s%s", r.code, r.stdout, r.stderr)
	}
	if exists(filepath.Join(dir, "m")) {
		t.Error("the read-only directory the failed attempt made is still there")
	}
	if files := as(dir, nil, "git", "log", "--name-only", "--format=", "--glob=refs/wiggum/backup").stdout; !strings.Contains(files, "m/cache/pkg/a.go") {
		t.Errorf("the read-only directory's file is not saved in the attempt's backup:\n%s", files)
	}
}

// A rollback that stops partway for a file its user may not change (here
// in a sticky directory another user owns) says so: HEAD is back, the tree
// only partly returned, what to mend and that the next run finishes it -
// not that the work is "left in the tree as it was". Needs root, to make
// the file another user's.
func TestRollbackPartwaySaysSo(t *testing.T) {
	if !asRoot() {
		t.Skip("needs root to give a file of the tree to another user than the run's")
	}
	dir, marks, agent := scriptRepo(t, "", 1, `cat >/dev/null
echo keep > aaa.txt; echo more >> s/f.txt; exit 1
`)
	as := unprivileged(t, dir, marks)
	// Root's, in a sticky directory: nobody may write it, not remove it.
	if err := os.Mkdir(filepath.Join(dir, "s"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "s/f.txt"), "shared\n")
	mustRun(t, "/", "chmod", "1777", filepath.Join(dir, "s"))
	mustRun(t, "/", "chmod", "0666", filepath.Join(dir, "s/f.txt"))
	for _, c := range [][]string{{"add", "s/f.txt"}, {"commit", "-q", "-m", "shared"}} {
		if r := as(dir, nil, "git", c...); r.code != 0 {
			t.Fatalf("git %s: %s", c[0], r.stderr)
		}
	}
	args := []string{"run", "--plan", "plan.md", "--retries", "0", "--agent-cmd", "sh " + agent}
	r := as(dir, nil, wiggumBin, args...)
	out := r.stdout + r.stderr
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, out)
	}
	for _, want := range []string{"stopped partway", "only partly returned", "partly rolled back", "you may not change s", "chmod -R u+w s", "the run resumes"} {
		if !strings.Contains(out, want) {
			t.Errorf("the stuck run does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "left in the tree as it was") {
		t.Errorf("a tree partly rolled back is called left as it was:\n%s", out)
	}
	// The next run, the cause not mended, says the same.
	r = as(dir, nil, wiggumBin, args...)
	if out := r.stdout + r.stderr; r.code != 1 || !strings.Contains(out, "chmod -R u+w s") || !strings.Contains(out, "Mend that, then run again") {
		t.Errorf("the next run: exit %d, want 1 saying what to mend\n%s", r.code, out)
	}
}

// wiggum's own supervisor of the agent dying before it starts the agent (a
// Go runtime that cannot make its threads under a process limit; here the
// supervisor-start kill point) is no attempt of the story's: the run stops
// at once saying the agent could not be started - not "the agent exited
// with status 2", with the supervisor's crash dump as the next prompt's
// failure context, attempt after attempt - and the next run resumes with
// no attempt counted.
func TestAgentNotStartedIsNotTheStorys(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 1, `cat >/dev/null
echo "$WIGGUM_STORY" >> "$(dirname "$0")/invocations"
echo work > work.txt
`)
	args := []string{"run", "--plan", "plan.md", "--retries", "2", "--agent-cmd", "sh " + agent}
	r := wiggum(t, dir, []string{"WIGGUM_TEST_KILLPOINT=supervisor-start"}, args...)
	out := r.stdout + r.stderr
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, out)
	}
	for _, want := range []string{"could not start sh", "before it could start it", "not counted", "resume with: wiggum run --plan plan.md"} {
		if !strings.Contains(out, want) {
			t.Errorf("the run does not say %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"US-1 failed", "attempt 2 of", "exited with status"} {
		if strings.Contains(out, bad) {
			t.Errorf("the run says %q: the supervisor's end was charged to the story\n%s", bad, out)
		}
	}
	if n := invocations(t, marks)["US-1"]; n != 0 {
		t.Fatalf("the agent ran %d time(s)", n)
	}

	r = wiggum(t, dir, nil, args...)
	out = r.stdout + r.stderr
	if r.code != 0 || !strings.Contains(out, "resuming") || !strings.Contains(out, "(attempt 1 of 3)") {
		t.Fatalf("the next run: exit %d, want 0, resumed with no attempt counted\n%s", r.code, out)
	}
}
