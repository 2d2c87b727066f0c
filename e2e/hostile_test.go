package e2e

import (
	"os"
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
