package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionActsWithoutLock: checkpoint and rollback run inside
// `wiggum lock` (WIGGUM_SESSION matches the holder) act as part of the
// session; they could not take the lock, which their own holder has.
func TestSessionActsWithoutLock(t *testing.T) {
	dir := newRepo(t)
	base := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	script := `set -e
wiggum checkpoint
echo agent >> a.txt
echo new > new.txt
git add -A
git commit -q -m "agent work"
echo scratch > scratch.txt
wiggum rollback --reason "tests failed"`
	r := wiggum(t, dir, nil, "lock", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("checkpoint and rollback inside the session: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if head := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD")); head != base {
		t.Fatalf("HEAD %s after rollback, want the checkpoint %s", head, base)
	}
	if got := mustRun(t, dir, "git", "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Fatalf("tree not back at the checkpoint:\n%s", got)
	}
	if refs := mustRun(t, dir, "git", "for-each-ref", "refs/wiggum/backup/"); strings.Count(refs, "\n") != 1 {
		t.Fatalf("want one backup ref, got:\n%s", refs)
	}
}

// TestNoSessionTakesLock: without WIGGUM_SESSION, with a made-up one, or
// with the token of a finished session, checkpoint and rollback try the lock
// and exit 3 while another process holds it; the holder's own token lets
// them in.
func TestNoSessionTakesLock(t *testing.T) {
	dir := newRepo(t)
	mustRun(t, dir, wiggumBin, "checkpoint")
	// A session that has ended leaves a token that must not count.
	old := wiggum(t, dir, nil, "lock", "--", "sh", "-c", `printf %s "$WIGGUM_SESSION"`)
	if old.code != 0 || len(old.stdout) != 32 {
		t.Fatalf("first session: exit %d, token %q", old.code, old.stdout)
	}
	holder := startWiggum(t, dir, nil, "lock", "--", "sh", "-c",
		`printf %s "$WIGGUM_SESSION" > token; while [ ! -e release ]; do sleep 0.02; done`)
	var token string
	eventually(t, "the session token to be written", func() bool {
		data, _ := os.ReadFile(filepath.Join(dir, "token"))
		token = string(data)
		return len(token) == 32
	})
	var rec struct{ Session string }
	data, err := os.ReadFile(filepath.Join(dir, ".ralph", ".agent-lock.json"))
	if err != nil || json.Unmarshal(data, &rec) != nil || rec.Session != token {
		t.Fatalf("holder record %s does not carry the session token %s (%v)", data, token, err)
	}

	for _, env := range [][]string{nil, {"WIGGUM_SESSION="}, {"WIGGUM_SESSION=0123456789abcdef0123456789abcdef"}, {"WIGGUM_SESSION=" + old.stdout}} {
		for _, cmd := range []string{"checkpoint", "rollback"} {
			r := wiggum(t, dir, env, cmd)
			if r.code != 3 {
				t.Fatalf("%s with %q while another holds the lock: exit %d, want 3; stderr: %s", cmd, env, r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "held by pid") {
				t.Fatalf("%s: the refusal does not name the holder: %s", cmd, r.stderr)
			}
		}
	}
	if r := wiggum(t, dir, []string{"WIGGUM_SESSION=" + token}, "checkpoint"); r.code != 0 {
		t.Fatalf("checkpoint with the holder's token: exit %d; stderr: %s", r.code, r.stderr)
	}
	if r := wiggum(t, dir, []string{"WIGGUM_SESSION=" + token}, "rollback"); r.code != 0 {
		t.Fatalf("rollback with the holder's token: exit %d; stderr: %s", r.code, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := holder.wait(t); code != 0 {
		t.Fatalf("holder exited %d", code)
	}
	// With the lock free, the stale token is no session: they take the lock.
	if r := wiggum(t, dir, []string{"WIGGUM_SESSION=" + token}, "checkpoint"); r.code != 0 {
		t.Fatalf("checkpoint with a stale token and the lock free: exit %d; stderr: %s", r.code, r.stderr)
	}
}
