package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestLockOnATerminal runs `wiggum lock` on a pseudo-terminal (through
// util-linux script): an interactive command under the lock must be able to
// read the terminal (its process group is made the foreground one, or the
// first read stops it with SIGTTIN and everything hangs), and wiggum must
// not write terminal queries (colour or cursor reports) into the session.
func TestLockOnATerminal(t *testing.T) {
	script := needTool(t, "script", "util-linux")
	dir := newRepo(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	inner := wiggumBin + ` lock -- sh -c 'read line; echo "got:$line"'; echo "exit:$?"`
	cmd := exec.CommandContext(ctx, script, "-qec", inner, "/dev/null")
	cmd.Dir = dir
	cmd.Env = baseEnv
	cmd.Stdin = strings.NewReader("typed on the terminal\n")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("wiggum lock hung on a terminal; output so far: %q", out)
	}
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "got:typed on the terminal") || !strings.Contains(s, "exit:0") {
		t.Fatalf("the command did not read the terminal: %q", s)
	}
	if strings.Contains(s, "\x1b]1") || strings.Contains(s, "\x1b[6n") {
		t.Fatalf("wiggum wrote terminal queries into the session: %q", s)
	}
}
