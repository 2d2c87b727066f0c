package hooks

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// The guard denies signalling the wiggum that holds the session's lock,
// by the pid the lock's holder record names (this test's own process
// holds it here); a probe (kill -0) and another pid pass.
func TestGuardDeniesKillingTheLockHolder(t *testing.T) {
	dir := repo(t)
	inSession(t, dir)
	pid := strconv.Itoa(os.Getpid())
	for cmd, deny := range map[string]bool{
		"kill -STOP " + pid:        true,
		"kill -9 " + pid:           true,
		"kill -0 " + pid:           false,
		"kill -9 " + pid + "0":     false,
		"kill -TERM $(pgrep -f x)": false,
		"kill -TERM -- -" + pid:    true,
		"timeout 5 kill -9 " + pid: true,
	} {
		out := runClaude(t, claudeEvent(t, "PreToolUse", dir, cmd, nil), Options{Guard: GuardSession})
		if got := bytes.Contains(out, []byte(`"permissionDecision":"deny"`)); got != deny {
			t.Errorf("%q: denied %v, want %v: %s", cmd, got, deny, out)
		}
	}
}
