package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// DESIGN failure: the pre-push backstop must hold when the agent's shell
// runs in a PID namespace of its own, as Codex runs every command. Inside
// one, /proc/locks hides the holder outside it; a probe that trusted it let
// `git push` through.
func TestPrePushRefusedFromPIDNamespace(t *testing.T) {
	unshare := needTool(t, "unshare", "util-linux")
	dir := newRepo(t)
	remote := filepath.Join(t.TempDir(), "remote.git")
	mustRun(t, dir, "git", "init", "-q", "--bare", remote)
	mustRun(t, dir, "git", "remote", "add", "origin", remote)
	if r := wiggum(t, dir, nil, "install", "--git"); r.code != 0 {
		t.Fatalf("install --git: %d %s", r.code, r.stderr)
	}
	push := unshare + " --pid --fork --mount-proc git push -q origin HEAD:refs/heads/main; echo push=$?"
	r := wiggum(t, dir, nil, "lock", "--", "sh", "-c", push)
	if strings.Contains(r.stderr, "Operation not permitted") && os.Getenv("CI") == "" {
		t.Skip("cannot create a PID namespace here")
	}
	if !strings.Contains(r.stdout, "push=1") || !strings.Contains(r.stderr, "push refused") {
		t.Fatalf("push from a PID namespace inside a session was not refused:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
	if refs := mustRun(t, remote, "git", "for-each-ref"); refs != "" {
		t.Fatalf("the remote got refs: %s", refs)
	}
	// Outside any session the same push goes through: the refusal is the
	// session's, not the namespace's.
	r = run(t, dir, nil, "sh", "-c", push)
	if !strings.Contains(r.stdout, "push=0") {
		t.Fatalf("push from a PID namespace outside a session failed:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
}
